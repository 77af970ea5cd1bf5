"""PQN: illegal actions are never chosen; on the one-shot stag hunt PQN-VDN finds the
team optimum (stag, stag) that independent PQN misses; a 2-member PBT population of
PQN runs; a checkpointed train state resumes bit-identically; the config is checked.

The stag hunt (payoffs row/column: (S,S) 4/4, (S,H) 0/3, (H,S) 3/0, (H,H) 3/3) with
``horizon=1`` is a one-shot game whose optimum needs coordination: stag pays only if
the partner hunts stag too, and against a uniformly random partner hare is the better
action (3 > 2). With the team reward (the mean of both rewards: 4, 1.5, 1.5, 3) stag is
better against a uniform partner too, so PQN-VDN's additive Q_tot climbs to (S,S);
independent PQN learns each agent's own Q from its own reward and settles on the
risk-dominant (H,H)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import jaxagents
from jaxagents.learners.value_based.pqn import PQNConfig, make_train
from jaxagents.learners.value_based.qnets import (
    QNetworkConfig,
    epsilon_greedy,
    epsilon_schedule,
    greedy,
    masked_max,
)

A = 5


# ------------------------------------------------------------------ action selection


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-1e3, 1e3, width=32, allow_subnormal=False), min_size=6 * A, max_size=6 * A),
       st.lists(st.booleans(), min_size=6 * A, max_size=6 * A), st.integers(0, 2**31 - 1))
def test_masked_actions_are_never_chosen(qs, bits, seed):
    q = jnp.asarray(qs, jnp.float32).reshape(6, A)
    mask = np.asarray(bits).reshape(6, A)
    mask[:, seed % A] |= ~mask.any(-1)  # at least one legal action per row (rows with none: see below)
    g = np.asarray(_greedy(q, mask))
    assert mask[np.arange(6), g].all()
    np.testing.assert_array_equal(np.asarray(q)[np.arange(6), g], np.where(mask, np.asarray(q), -np.inf).max(-1))
    np.testing.assert_array_equal(np.asarray(_max(q, mask)), np.where(mask, np.asarray(q), -np.inf).max(-1))
    for eps in (1.0, 0.5):  # eps = 1: every action is the exploratory draw
        a = np.asarray(_eps_greedy(jax.random.key(seed), q, mask, eps))
        assert mask[np.arange(6), a].all()


_greedy, _max, _eps_greedy = jax.jit(greedy), jax.jit(masked_max), jax.jit(epsilon_greedy)


def test_exploration_is_uniform_over_legal_actions():
    mask = jnp.array([True, False, True, True, False])
    q = jnp.array([0.0, 9.0, 1.0, 0.0, 9.0])  # the illegal actions have the highest values
    a = np.asarray(_eps_greedy(jax.random.key(0), jnp.broadcast_to(q, (20000, A)), jnp.broadcast_to(mask, (20000, A)), 1.0))
    freq = np.bincount(a, minlength=A) / a.size
    np.testing.assert_allclose(freq, [1 / 3, 0, 1 / 3, 1 / 3, 0], atol=0.015)
    # a row with no legal action (an inactive agent) falls back to all actions, finite
    none = jnp.zeros((1, A), bool)
    assert int(_greedy(q[None], none)[0]) == 1 and np.isfinite(float(_max(q[None], none)[0]))
    assert float(epsilon_schedule(5, 1.0, 0.2, 10)) == pytest.approx(0.6)
    assert float(epsilon_schedule(50, 1.0, 0.2, 10)) == pytest.approx(0.2)


@pytest.mark.parametrize("k", [3, 5])
def test_conv_same_is_a_same_convolution(k):
    from jaxagents.nn.torsos import ConvSame

    x = jax.random.normal(jax.random.key(0), (3, 4, 5, 6))
    layer = ConvSame(7, k)
    params = layer.init(jax.random.key(1), x)
    params = jax.tree.map(lambda p: p + 0.1, params)  # a non-zero bias too
    ref = jax.lax.conv_general_dilated(x, params["params"]["kernel"], (1, 1), "SAME",
                                       dimension_numbers=("NHWC", "HWIO", "NHWC")) + params["params"]["bias"]
    np.testing.assert_allclose(np.asarray(layer.apply(params, x)), np.asarray(ref), rtol=1e-5, atol=1e-5)


def test_greedy_act_follows_the_actor_critic_contract():
    from jaxagents.learners.value_based.qnets import QAgents

    env = jaxagents.make("stag_hunt")
    qa = QAgents(env, QNetworkConfig(hidden=(4,)))
    h = qa.initial_hidden(3)["row"]
    mask = jnp.array([[[False, True]], [[True, True]], [[True, False]]])

    @jax.jit  # one program: eager flax init is many small compilations
    def run(key):
        _, ts = jax.vmap(env.reset)(jax.random.split(key, 3))
        return qa.act(qa.init(key)["row"], "row", h, ts.obs["row"], None, jnp.ones((3, 1), bool), mask, None)

    h2, a, logp, v, q = run(jax.random.key(0))
    assert a.shape == (3, 1) and np.asarray(a)[:, 0].tolist()[::2] == [1, 0]  # the only legal action
    np.testing.assert_array_equal(np.asarray(a), np.asarray(greedy(q, mask)))
    np.testing.assert_array_equal(np.asarray(v), np.asarray(masked_max(q, mask)))
    assert not qa.central_critic and h2.shape == h.shape and float(jnp.abs(logp).sum()) == 0.0


# ------------------------------------------------------------------ the stag hunt

UPDATES = 150


def stag_hunt_learner(vdn: bool):
    cfg = PQNConfig(num_envs=32, num_steps=4, total_timesteps=32 * 4 * UPDATES, update_epochs=2, num_minibatches=2,
                    lr=3e-3, anneal_lr=False, eps_end=0.05, eps_decay=0.5, vdn=vdn, network=QNetworkConfig(hidden=(16,)))
    return make_train(cfg, jaxagents.make("stag_hunt", horizon=1))


@pytest.fixture(scope="module")
def vdn():
    """PQN-VDN on the one-shot stag hunt, its update compiled once for the module."""
    learner = stag_hunt_learner(True)
    return learner, jax.jit(learner.init), jax.jit(learner.update)


def _host(x):
    if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
        return jax.random.wrap_key_data(np.asarray(jax.random.key_data(x)), impl=jax.random.key_impl(x))
    return np.asarray(x)


def _run(init, update, seed, n=UPDATES):
    state = init(jax.random.key(seed))
    for _ in range(n):
        state, m = update(state)
    return state, m


def _greedy_joint(learner, state):
    """Each role's greedy action at the game's (only) observation."""
    _, ts = learner.env.reset(jax.random.key(0), learner.env_params)
    out = {}
    for role in ("row", "column"):
        h = jnp.zeros((1, 1, learner.agents.hidden_size))
        _, q = learner.agents.apply(state.params[role], role, h, ts.obs[role][None, None], jnp.zeros((1, 1, 1), bool))
        out[role] = int(greedy(q[0, 0, 0]))
    return out["row"], out["column"]


@pytest.mark.slow  # (10-25 s: the default suite keeps its 10 minutes)
def test_vdn_finds_the_coordinated_optimum(vdn):
    learner, init, update = vdn
    for seed in range(3):
        state, m = _run(init, update, seed)
        assert _greedy_joint(learner, state) == (0, 0)  # (stag, stag)
        # the last rollout: mostly greedy play (eps = 0.05) at the optimum's 4 per episode
        assert float(m["episode_return/row"]) > 3.6 and int(m["episodes"]) == 32 * 4
        assert float(m["epsilon"]) == pytest.approx(0.05)


@pytest.mark.slow
def test_independent_pqn_settles_on_the_risk_dominant_equilibrium():
    learner = stag_hunt_learner(False)
    init, update = jax.jit(learner.init), jax.jit(learner.update)
    for seed in range(3):
        state, m = _run(init, update, seed)
        assert _greedy_joint(learner, state) == (1, 1)  # (hare, hare): 3 each instead of 4
        assert 2.5 < float(m["episode_return/row"]) < 3.05


def test_checkpointed_state_resumes_bit_identically(vdn, tmp_path):
    from jaxagents.checkpoint import Checkpointer

    learner, init, update = vdn
    full, m_full = _run(init, update, 7, n=4)
    half, _ = _run(init, update, 7, n=2)
    ck = Checkpointer(tmp_path / "ck")
    ck.save(2, half, {"learner": "pqn"})
    state, _, _ = ck.restore(init(jax.random.key(99)))
    state = jax.tree.map(_host, state)  # host values reuse the compiled update (restored device arrays recompile it: 5-10 s)
    for _ in range(2):
        state, m = update(state)
    data = lambda x: jax.random.key_data(x) if jnp.issubdtype(x.dtype, jax.dtypes.prng_key) else x  # noqa: E731
    for a, b in zip(jax.tree.leaves(jax.tree.map(data, full)), jax.tree.leaves(jax.tree.map(data, state))):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    for k in m_full:
        np.testing.assert_array_equal(np.asarray(m_full[k]), np.asarray(m[k]))


@pytest.mark.slow  # ~14 s: the default suite's 10 minutes; populations with PBT stay in tests/population
def test_population_with_pbt_runs(vdn):
    from jaxagents.population import PBTConfig, Population

    learner = vdn[0]
    pop = Population(learner, 2, PBTConfig(interval=2, fraction=0.5, resample_prob=0.0),
                     ranges={"lr": (1e-4, 1e-2), "q_lambda": (0.0, 0.9)})
    state = jax.jit(pop.init)(jax.random.key(0))
    update = jax.jit(pop.update)
    for _ in range(2):
        state, m = update(state)
    assert np.asarray(state.members.update).tolist() == [2, 2]
    lr = np.asarray(m["hparams/lr"])
    assert lr.shape == (2,) and np.all((lr >= 1e-4) & (lr <= 1e-2))
    assert np.asarray(m["pbt/ready"]).all() and np.all(np.isfinite(np.asarray(m["fitness"])))
    assert learner.fitness({"episode_return/row": 1.0, "episode_return/column": 3.0, "episodes": 0}) != learner.fitness(
        {"episode_return/row": 1.0, "episode_return/column": 3.0, "episodes": 0})  # NaN: no episode finished


# ------------------------------------------------------------------ config


@pytest.mark.parametrize("kw, match", [
    (dict(lr=0.0), "lr"), (dict(q_lambda=1.5), "q_lambda"), (dict(eps_end=-0.1), "eps_end"),
    (dict(num_envs=0), "num_envs"), (dict(vdn="maybe"), "vdn"), (dict(network=dict(torso="rnn")), "network.torso"),
    (dict(network=dict(cnn_channels=[8, 8], cnn_kernels=[4, 3])), "network.cnn_kernels"),
    (dict(num_envs=4, num_steps=3, num_minibatches=8), "num_minibatches"), (dict(total_timesteps=10), "total_timesteps"),
])
def test_config_is_validated(kw, match):
    with pytest.raises(ValueError, match=match):
        PQNConfig(**{"num_envs": 4, "num_steps": 4, "total_timesteps": 64, "num_minibatches": 2, **kw})


def test_bad_learner_arguments():
    cfg = PQNConfig(num_envs=4, num_steps=4, total_timesteps=64, num_minibatches=2)
    with pytest.raises(ValueError, match="data_shards=3 must divide num_envs=4"):
        make_train(cfg, jaxagents.make("stag_hunt"), data_axis="data", data_shards=3)
    with pytest.raises(ValueError, match="data_shards=2 needs data_axis"):
        make_train(cfg, jaxagents.make("stag_hunt"), data_shards=2)
    with pytest.raises(ValueError, match=r"num_minibatches=2 must divide each device's num_envs / data_shards \* num_steps = 1"):
        make_train(cfg.replace(num_steps=1, total_timesteps=4), jaxagents.make("stag_hunt"), data_axis="data", data_shards=4)
    with pytest.raises(ValueError, match="shaped_reward"):
        make_train(cfg.replace(shaped_reward="nope"), jaxagents.make("stag_hunt"))
    with pytest.raises(ValueError, match="Discrete"):
        make_train(cfg, jaxagents.make("macro_central_bank"))


def test_yaml_learner_pqn_builds():
    from jaxagents import runner

    cfg = runner.load_config(None, ["learner=pqn", "env.id=stag_hunt", "train.num_envs=4", "train.num_steps=4",
                                    "train.total_timesteps=64", "train.num_minibatches=2", "train.vdn=true",
                                    "train.network.hidden=[8]"])
    learner = runner.build(cfg)
    assert learner.config.vdn and learner.config.network.hidden == (8,) and learner.num_updates == 4


# ------------------------------------------------------------------ networks and environments


@pytest.mark.slow
def test_turn_based_rollout_respects_masks_and_turns():
    """Tic-tac-toe: occupied cells are illegal and one player moves at a time; an
    exploring rollout (eps = 0.5) never plays an illegal cell, and the targets of the
    waiting player's steps are 0 (excluded)."""
    from jaxagents.core.wrappers import VecEnv
    from jaxagents.learners.skeleton.rollout import init_carry
    from jaxagents.learners.value_based.qlambda import q_lambda
    from jaxagents.learners.value_based.qnets import QAgents, collect

    env = jaxagents.make("tic_tac_toe")
    qa = QAgents(env, QNetworkConfig(hidden=(8,)))
    vec = VecEnv(env, 8, final_obs=True)

    @jax.jit
    def run(key):
        carry = init_carry(qa, vec, key, env.default_params())
        return collect(qa, vec, env.default_params(), qa.init(key), carry, key, 24, 0.5)

    _, traj, last = run(jax.random.key(3))
    for role, tr in traj.items():
        act, mask, active = np.asarray(tr.action), np.asarray(tr.mask), np.asarray(tr.active)
        legal = np.take_along_axis(mask, act[..., None], -1)[..., 0]
        assert legal[active].all() and (~active).any() and active.any()
        g = q_lambda(tr.reward, tr.q_max, tr.terminated, tr.truncated, last[role], 0.99, 0.5, active=tr.active)
        assert np.all(np.asarray(g)[~active] == 0.0)
    assert int(np.asarray(traj["first"].terminated).sum()) > 0  # games ended inside the window


@pytest.mark.slow
def test_recurrent_vdn_finds_the_coordinated_optimum():
    cfg = stag_hunt_learner(True).config.replace(network=QNetworkConfig(hidden=(16,), recurrent=True, gru_size=8))
    learner = make_train(cfg, jaxagents.make("stag_hunt", horizon=1))
    init, update = jax.jit(learner.init), jax.jit(learner.update)
    state, m = _run(init, update, 0)
    assert float(m["episode_return/row"]) > 3.6


@pytest.mark.slow
def test_cnn_on_overcooked_trains_and_evaluates():
    env = jaxagents.make("overcooked", layout="cramped_room")
    params = env.default_params().replace(horizon=jnp.asarray(8))  # episodes end (truncated) inside a rollout
    cfg = PQNConfig(num_envs=4, num_steps=8, total_timesteps=4 * 8 * 2, update_epochs=1, num_minibatches=2, vdn=True,
                    network=QNetworkConfig(torso="cnn", cnn_channels=(8, 8), hidden=(16,)), shaped_reward="shaped_reward",
                    shaped_reward_horizon=1000.0, eval_envs=2, eval_steps=8)
    learner = make_train(cfg, env, env_params=params)
    state, m = jax.jit(learner.train)(jax.random.key(0))
    assert all(np.all(np.isfinite(np.asarray(v))) for v in m.values())
    assert np.asarray(m["episodes"]).tolist() == [4, 4]
    ev = jax.jit(learner.evaluate)(state, jax.random.key(1))
    assert int(ev["eval/episodes"]) == 2 and np.isfinite(float(ev["eval/episode_return/cook"]))
