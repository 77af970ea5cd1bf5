"""A member's environments split over the mesh's ``data`` axis (the Anakin pattern).

(b) of the populations issue runs in a subprocess with 4 fake CPU devices
(``data_check.py``); the one-line errors of a data axis that does not fit are checked
here without any compilation."""

import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxagents
from jaxagents.core.wrappers import VecEnv
from jaxagents.learners import PPOConfig
from jaxagents.learners.policy_gradient import ppo
from jaxagents.learners.policy_gradient import selfplay
from jaxagents.learners.skeleton.agents import Agents
from jaxagents.learners.skeleton.rollout import collect, init_carry
from jaxagents.learners.policy_gradient.selfplay import SelfPlayConfig
from jaxagents.nn import NetworkConfig
from jaxagents.population import Population
from jaxagents.population.mesh import check_mesh

from .test_mesh import run_with_devices

# (b)'s tolerance: the runs see the same trajectories (every random draw is keyed by the
# global environment index) and differ only by the order of float sums (a device's
# partial sums, then the all-reduce). Measured over 3 updates: parameters within 6e-7
# absolute (3e-4 relative to max(|x|, 1e-3)), metrics within 3e-7 absolute.
ABS_TOL, REL_TOL = 1e-5, 1e-2


@pytest.mark.heavy
def test_environments_split_over_4_devices_match_one_device():
    """(b) IPPO (GAE, minibatch normalisation) and self-play (RAE table, batch
    normalisation, a league with a main exploiter, parameter average, exact exploitability) on Kuhn
    poker: one IPPO member with its 16 environments over 4 devices, and 2 self-play
    members x 2 data devices, each against a data axis of 1 device. Trajectories and episode counts
    are identical; parameters, optimiser and RAE state and every metric agree within
    ``ABS_TOL`` absolute and ``REL_TOL`` relative (to ``max(|x|, 1e-3)``)."""
    out = run_with_devices("data_check.py", 4, timeout=900)
    assert set(out) == {"ippo/1x4", "selfplay_rae/2x2"}
    for case, r in out.items():
        assert r["env_devices"] == [4], case  # each member's environments really are spread out
        assert r["same_metric_names"] and r["episodes_equal"], case
        assert r["env"] == [0.0, 0.0], case  # the same episodes, step for step
        for part in ("params", "opt_state", "baseline", "extra", "metrics"):
            assert r[part][0] <= ABS_TOL and r[part][1] <= REL_TOL, (case, part, r[part], r["worst_metric"])


# ~60 s on 2 cores, the largest default test: with the slow checks (PPO's data axis stays in the default suite)
@pytest.mark.heavy
def test_pqn_environments_split_over_devices_match_one_device():
    """PQN on the data axis, in a subprocess with 4 fake devices: PQN-VDN on Overcooked
    (truncations bootstrapped inside the rollout, shaped reward) with one member's
    environments over 4 devices, and independent recurrent PQN on Kuhn poker (inactive
    turns) as 2 members x 2 data devices, each against a data axis of 1. The same
    episodes step for step; parameters, Adam moments and metrics within (b)'s
    tolerances (measured: parameters 1e-7 absolute, metrics 4e-6)."""
    out = run_with_devices("data_check.py", 4, "pqn", timeout=900)
    assert set(out) == {"pqn_vdn/1x4", "pqn_rnn/2x2"}
    for case, r in out.items():
        assert r["env_devices"] == [4], case
        assert r["same_metric_names"] and r["episodes_equal"], case
        assert r["env"] == [0.0, 0.0], case
        for part in ("params", "opt_state", "metrics"):
            assert r[part][0] <= ABS_TOL and r[part][1] <= REL_TOL, (case, part, r[part], r["worst_metric"])


def _cfg(**kw):
    return PPOConfig(**{"num_envs": 8, "num_steps": 4, "total_timesteps": 64, "update_epochs": 1, "num_minibatches": 1, **kw})


@pytest.mark.parametrize("kwargs, message", [
    (dict(data_axis="data", data_shards=3), "data_shards=3 must divide num_envs=8 (each device runs num_envs / data_shards environments)"),
    (dict(data_shards=2), "data_shards=2 needs data_axis"),
    (dict(data_axis="data", data_shards=0), "data_shards"),
])
def test_data_axis_errors_are_one_line(kwargs, message):
    with pytest.raises(ValueError) as e:
        ppo.make_train(_cfg(), jaxagents.make("stag_hunt"), **kwargs)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_minibatches_must_split_each_devices_batch():
    with pytest.raises(ValueError, match=r"num_envs / data_shards=4 \* agents") as e:
        ppo.make_train(_cfg(num_steps=1, num_minibatches=4), jaxagents.make("stag_hunt"), data_axis="data", data_shards=4)
    assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="each device's environments") as e:
        ppo.make_train(_cfg(num_minibatches=2, network=NetworkConfig(recurrent=True)), jaxagents.make("stag_hunt"),
                       data_axis="data", data_shards=8)
    assert "\n" not in str(e.value)


def test_mesh_and_learner_must_agree():
    learner = selfplay.make_train(SelfPlayConfig(ppo=_cfg(advantage="rae", normalize="none")), jaxagents.make("kuhn_poker"),
                                  data_axis="data", data_shards=2)
    assert (learner.data_axis, learner.data_shards) == ("data", 2)
    with pytest.raises(ValueError, match=r"give the population a mesh \(make_mesh\(data=2\)\)") as e:
        Population(learner, 2)
    mesh = lambda **shape: types.SimpleNamespace(axis_names=tuple(shape), shape=shape)  # noqa: E731
    errors = [
        (dict(pop=1, data=4), "data", 2, r"data_shards=2; the mesh's 'data' axis has 4 devices"),
        (dict(pop=1), "data", 2, r"over axis 'data'; the mesh has axes \('pop',\)"),
        (dict(pop=1, data=2), None, 1, r"built without a data axis: make_train\(..., data_axis='data', data_shards=2\)"),
    ]
    for shape, axis, shards, message in errors:
        with pytest.raises(ValueError, match=message) as e:
            check_mesh(mesh(**shape), 2, axis, shards)
        assert "\n" not in str(e.value)
    check_mesh(mesh(pop=2, data=2), 2, "data", 2)
    with pytest.raises(ValueError, match=r"run its update under shard_map over that axis") as e:
        jax.eval_shape(learner.train, jax.random.key(0))  # no data axis bound
    assert "\n" not in str(e.value)


@pytest.mark.slow
def test_rollout_does_not_depend_on_how_the_environments_are_split():
    """Per-environment streams: two halves of the batch with their global indices
    collect exactly what the whole batch collects (resets, steps, actions, opponents)."""
    env = selfplay.merge(jaxagents.make("kuhn_poker"))
    agents = Agents(env, NetworkConfig())
    params = agents.init(jax.random.key(0))
    k_init, k_roll = jax.random.split(jax.random.key(1))
    opp = jax.tree.map(lambda x: jnp.broadcast_to(x, (8, *x.shape)), params)
    learner = {"agents": jnp.arange(8)[:, None] % 2 == jnp.arange(2)[None, :]}

    @jax.jit
    def run(ids):
        vec = VecEnv(env, ids.shape[0], reset_budget=1)
        carry = init_carry(agents, vec, k_init, None, ids)
        opponents = (jax.tree.map(lambda x: x[ids], opp), {"agents": learner["agents"][ids]})
        _, traj, _ = collect(agents, vec, None, params, carry, k_roll, 6, opponents=opponents, env_ids=ids, start_hash=False)
        return traj

    whole = run(jnp.arange(8))
    halves = [run(jnp.arange(4)), run(jnp.arange(4, 8))]
    for a, b0, b1 in zip(jax.tree.leaves(whole), *(jax.tree.leaves(h) for h in halves)):
        np.testing.assert_array_equal(np.asarray(a), np.concatenate([np.asarray(b0), np.asarray(b1)], axis=1))
