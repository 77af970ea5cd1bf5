"""Fictitious co-play (``jaxagents.learners.policy_gradient.fcp``): stage 1's snapshots are exactly a
member's parameters at the snapshot updates; stage 2's partners stay frozen, are
drawn per environment uniformly over the pool with the learner in either seat, are
evaluated with held-out partners; resume is bit-identical; both stages run from
configs through the runner (slow)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxagents
from jaxagents.learners.policy_gradient import fcp
from jaxagents.population import Population

SNAPS = (0, 2, 4)
TINY_PPO = dict(num_envs=8, num_steps=10, total_timesteps=8 * 10 * 4, update_epochs=1, num_minibatches=1, lr=1e-2,
                network=dict(hidden=[16]))


def _host(x):
    if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
        return jax.random.wrap_key_data(np.asarray(jax.random.key_data(x)), impl=jax.random.key_impl(x))
    return np.asarray(x)


def _equal(a, b):
    jax.tree.map(np.testing.assert_array_equal, a, b)


@pytest.fixture(scope="module")
def stage1():
    """3 partners (a population) on the coordination game, 4 updates, snapshots at 0, 2, 4;
    every member's parameters after each update kept for comparison."""
    env = jaxagents.make("coordination")
    learner = fcp.make_train(fcp.FCPConfig(ppo=TINY_PPO, snapshots=SNAPS), env)
    pop = Population(learner, 3)
    state = jax.jit(pop.init)(jax.random.key(0))
    update = jax.jit(pop.update)
    history = [state.members.params]
    for _ in range(learner.num_updates):
        state, _ = update(state)
        history.append(state.members.params)
    return env, state, history


@pytest.fixture(scope="module")
def stage2(stage1):
    """The FCP agent against the first 2 partners' snapshots (pool of 6), the third held out."""
    env, s1, _ = stage1
    partners = fcp.partners_from(s1.members.extra.params, s1.members.params, lead=1, holdout=1)
    cfg = fcp.FCPConfig(ppo=TINY_PPO, partners="in-memory", holdout=1, eval_every=2, eval_episodes=4, eval_steps=12)
    learner = fcp.make_train(cfg, env, partners=partners)
    update = jax.jit(learner.update)
    states, rows = [jax.jit(learner.init)(jax.random.key(1))], []
    for _ in range(learner.num_updates):
        s, m = update(states[-1])
        states.append(s)
        rows.append(m)
    return learner, update, partners, states, rows


@pytest.mark.slow  # the module's two training stages (10 s): the default suite keeps its 10 minutes
def test_snapshots_are_the_params_at_the_snapshot_updates(stage1):
    _, state, history = stage1
    snaps = state.members.extra.params
    for k, u in enumerate(SNAPS):
        _equal(jax.tree.map(lambda x: x[:, k], snaps), history[u])
    # the members differ (seeds), and training moved them between snapshots
    flat = np.concatenate([x.reshape(*x.shape[:2], -1) for x in jax.tree.leaves(snaps)], axis=-1)  # [P, K, all]
    assert not np.array_equal(flat[0, 0], flat[1, 0]) and not np.array_equal(flat[0, 0], flat[0, 2])


@pytest.mark.slow  # the module's two training stages (10 s): the default suite keeps its 10 minutes
def test_pool_is_partner_major_and_holds_out_the_last(stage1, stage2):
    _, s1, _ = stage1
    _, _, partners, _, _ = stage2
    K = len(SNAPS)
    for m in range(2):
        for k in range(K):
            _equal(jax.tree.map(lambda x: x[m * K + k], partners.pool), jax.tree.map(lambda x: x[m, k], s1.members.extra.params))
    assert jax.tree.leaves(partners.pool)[0].shape[0] == 2 * K
    _equal(partners.heldout, jax.tree.map(lambda x: x[2:], s1.members.params))


@pytest.mark.slow  # the module's two training stages (10 s): the default suite keeps its 10 minutes
def test_partners_are_frozen_while_the_agent_trains(stage2):
    _, _, partners, states, _ = stage2
    _equal(states[-1].extra.pool, partners.pool)
    _equal(states[-1].extra.heldout, partners.heldout)
    leaf0, leaf1 = jax.tree.leaves(states[0].params)[0], jax.tree.leaves(states[-1].params)[0]
    assert not np.array_equal(leaf0, leaf1)


def test_draws_cover_the_pool_uniformly_and_both_seats():
    E, pool, n = 20_000, 6, 2
    idx, seat = jax.jit(fcp.draw, static_argnums=(2, 3))(jax.random.key(3), jnp.arange(E), pool, n)
    joint = np.bincount(np.asarray(idx) * n + np.asarray(seat), minlength=pool * n) / E
    p = 1.0 / (pool * n)
    assert np.all(np.abs(joint - p) < 5 * np.sqrt(p * (1 - p) / E))  # uniform and independent
    # keyed by the global environment index: a device's slice draws what one device would
    i2, s2 = jax.jit(fcp.draw, static_argnums=(2, 3))(jax.random.key(3), jnp.arange(100, 200), pool, n)
    np.testing.assert_array_equal(i2, idx[100:200])
    np.testing.assert_array_equal(s2, seat[100:200])


@pytest.mark.slow  # the module's two training stages (10 s): the default suite keeps its 10 minutes
def test_partner_batch_puts_the_learner_in_one_seat(stage2):
    _, _, partners, _, _ = stage2
    opp, learner = jax.jit(fcp.partner_batch, static_argnums=3)(partners.pool, jax.random.key(4), jnp.arange(64), 2)
    (role,) = learner
    mask = np.asarray(learner[role])
    assert mask.shape == (64, 2) and np.all(mask.sum(1) == 1) and mask[:, 0].any() and mask[:, 1].any()
    idx, _ = jax.jit(fcp.draw, static_argnums=(2, 3))(jax.random.key(4), jnp.arange(64), jax.tree.leaves(partners.pool)[0].shape[0], 2)
    _equal(opp, jax.tree.map(lambda x: x[np.asarray(idx)], partners.pool))


@pytest.mark.slow  # the module's two training stages (10 s): the default suite keeps its 10 minutes
def test_heldout_evaluation_every_eval_every(stage2):
    learner, _, _, _, rows = stage2
    ret = np.array([float(r["eval/heldout/return"]) for r in rows])
    assert np.isnan(ret[0]) and np.isnan(ret[2]) and np.isfinite(ret[1]) and np.isfinite(ret[3])
    assert 0.0 <= ret[3] <= 10.0  # 10 rounds of a 0/1 coordination payoff
    assert np.isfinite(float(rows[3]["eval/heldout/return/seat0"])) and np.isfinite(float(rows[3]["eval/heldout/return/seat1"]))
    assert float(learner.fitness(rows[3])) == ret[3]


@pytest.mark.slow  # the module's two training stages (10 s): the default suite keeps its 10 minutes
def test_resume_is_bit_identical(stage2, tmp_path):
    from jaxagents.checkpoint import Checkpointer

    _, update, _, states, rows = stage2
    ckpt = Checkpointer(str(tmp_path / "ckpt"))
    ckpt.save(2, states[2], {"x": 1})
    restored, step, _ = ckpt.restore_newest(states[0])
    ckpt.close()
    assert step == 2
    s = jax.tree.map(_host, restored)  # host values reuse the compiled update
    for u in range(2, len(rows)):
        s, m = update(s)
        _equal(m, rows[u])
    key_data = lambda t: jax.tree.map(lambda x: jax.random.key_data(x) if jnp.issubdtype(x.dtype, jax.dtypes.prng_key) else x, t)  # noqa: E731
    _equal(key_data(s), key_data(states[-1]))


@pytest.mark.parametrize("fields, match", [
    (dict(snapshots=[0, 3, 2]), "strictly increasing"),
    (dict(snapshots=[0, 5]), r"snapshots\[1\]"),
    (dict(snapshots=[]), "non-empty"),
    (dict(holdout=-1), "holdout"),
    (dict(partners=""), "stage-1 run directory"),
    (dict(partners="x", ppo={**TINY_PPO, "network": {"recurrent": True}}), "feed-forward"),
    (dict(eval_every=0), "eval_every"),
])
def test_config_errors_are_one_line(fields, match):
    with pytest.raises(ValueError, match=match) as e:
        fcp.FCPConfig(**{"ppo": TINY_PPO, **fields})
    assert "\n" not in str(e.value)


@pytest.fixture(scope="module")
def stage1_init():
    """Stage 1's population before training: what the checks of ``partners_from`` and
    ``make_train`` read (the partners' count and parameter shapes), without ``stage1``'s
    four updates (10-17 s)."""
    env = jaxagents.make("coordination")
    learner = fcp.make_train(fcp.FCPConfig(ppo=TINY_PPO, snapshots=SNAPS), env)
    return env, jax.jit(Population(learner, 3).init)(jax.random.key(0))


def test_holdout_must_leave_a_pool(stage1_init):
    _, s1 = stage1_init
    with pytest.raises(ValueError, match="holdout=3 must leave partners"):
        fcp.partners_from(s1.members.extra.params, s1.members.params, lead=1, holdout=3)


def test_partner_networks_must_match(stage1_init):
    env, s1 = stage1_init
    partners = fcp.partners_from(s1.members.extra.params, s1.members.params, lead=1, holdout=0)
    cfg = fcp.FCPConfig(ppo={**TINY_PPO, "network": {"hidden": [8]}}, partners="in-memory")
    with pytest.raises(ValueError, match="networks differ"):
        fcp.make_train(cfg, env, partners=partners)


@pytest.mark.heavy
def test_two_stages_through_the_runner(tmp_path):
    """Stage 1 as a population run, stage 2 loading its pool from the run directory."""
    from jaxagents import runner, runs

    tiny = {"learner": "fcp", "env": {"id": "coordination"}, "checkpoint_every": 2, "log": {"progress": False},
            "train": {"ppo": TINY_PPO, "snapshots": [0, 4]}, "population": {"size": 3}}
    d1 = tmp_path / "partners"
    runner.run(runner.prepare(tiny), run_dir=str(d1), quiet=True)
    stage2 = {**tiny, "population": None, "train": {"ppo": TINY_PPO, "partners": str(d1), "holdout": 1, "eval_every": 2,
                                                     "eval_steps": 12}}
    res = runner.run(runner.prepare(stage2), run_dir=str(tmp_path / "fcp"), quiet=True)
    assert np.isfinite(res["final"]["eval/heldout/return"])
    _, learner, state, _ = runs.restore(str(tmp_path / "fcp"))
    assert jax.tree.leaves(state.extra.pool)[0].shape[:2] == (1, 2 * 2)  # [seeds, 2 partners x 2 snapshots]


@pytest.mark.heavy
def test_stage1_sharded_and_stage2_data_parallel_match_one_device():
    """2 fake devices: partners sharded over ``pop`` keep the same snapshots (to float
    rounding: XLA sums a vmap of 1 member and of 2 in different orders); the FCP agent
    with its environments split over ``data`` draws the same partners and trains alike."""
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2", "JAX_PLATFORMS": "cpu"}
    script = os.path.join(os.path.dirname(__file__), "fcp_mesh_check.py")
    proc = subprocess.run([sys.executable, script], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["devices_per_leaf"] == [2]
    assert out["snapshot_diff"] < 1e-5 and out["data_param_diff"] < 1e-4
    assert out["data_return_diff"] < 1e-4 and out["heldout_diff"] < 1e-4


def test_without_heldout_partners_ppo_evaluates(stage1_init):
    env, s1 = stage1_init
    partners = fcp.partners_from(s1.members.extra.params, s1.members.params, lead=1, holdout=0)
    assert partners.heldout is None and jax.tree.leaves(partners.pool)[0].shape[0] == 3 * len(SNAPS)
    learner = fcp.make_train(fcp.FCPConfig(ppo=TINY_PPO, partners="in-memory"), env, partners=partners)
    assert learner.fitness.names == ("episode_return/agents",)


def test_stage_two_takes_its_partners_as_data():
    """The learner reads no run directory: given only ``config.partners`` it names the
    loader (``jaxagents.runs.load_partners``, which ``jaxagents.build`` calls)."""
    cfg = fcp.FCPConfig(ppo=TINY_PPO, partners="runs/stage1")
    with pytest.raises(ValueError, match=r"partners='runs/stage1'.*jaxagents\.runs\.load_partners") as e:
        fcp.make_train(cfg, jaxagents.make("coordination"))
    assert "\n" not in str(e.value)
