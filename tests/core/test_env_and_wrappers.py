import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxagents
from jaxagents import AutoReset, EpisodeStats, FlattenObservation, MergeRoles, VecEnv, random_actions


@pytest.fixture(scope="module")
def pd():
    return jaxagents.make("prisoners_dilemma", horizon=4)


def _const(env, value):
    return {k: jnp.full((r.num_agents,), value, jnp.int32) for k, r in env.roles.items()}


def test_out_of_range_params_raise_on_host(pd):
    bad = pd.default_params().replace(horizon=jnp.int32(0))
    with pytest.raises(ValueError, match="params.horizon must be >= 1"):
        pd.reset(jax.random.key(0), bad)
    with pytest.raises(ValueError, match="params.horizon"):
        pd.validate_params(bad)
    nan = pd.default_params().replace(payoff=pd.default_params().payoff.at[0, 0, 0].set(jnp.nan))
    with pytest.raises(ValueError, match="params.payoff must be finite"):
        VecEnv(pd, 2).validate_params(nan)
    with pytest.raises(ValueError, match="shape"):
        pd.validate_params(pd.default_params().replace(payoff=jnp.zeros((2, 3, 3))))
    with pytest.raises(ValueError, match="before jit"):
        jax.jit(pd.validate_params)(pd.default_params())


def test_params_are_vmappable(pd):
    """A population of games with different horizons is a vmap over params."""
    params = pd.default_params()
    horizons = jnp.array([1, 2, 3])
    batch = jax.vmap(lambda h: params.replace(horizon=h))(horizons)

    def run(p):
        s, ts = pd.reset(jax.random.key(0), p)
        dones = []
        for _ in range(3):
            s, ts = pd.step(jax.random.key(0), s, _const(pd, 0), p)
            dones.append(ts.terminated)
        return jnp.stack(dones)

    np.testing.assert_array_equal(jax.vmap(run)(batch), [[1, 1, 1], [0, 1, 1], [0, 0, 1]])


def test_episode_stats_returns_and_lengths(pd):
    env = AutoReset(EpisodeStats(pd))
    state, ts = env.reset(jax.random.key(0))
    seen = []
    for t in range(9):
        # always (cooperate, defect): row gets S=0, column gets T=5 each step
        state, ts = env.step(jax.random.key(t), state, {"row": jnp.array([0]), "column": jnp.array([1])})
        seen.append((int(ts.info["episode_length"]), bool(ts.info["episode_done"]),
                     float(ts.info["episode_return/row"]), float(ts.info["episode_return/column"])))
    assert seen[3] == (4, True, 0.0, 20.0)
    assert seen[4] == (1, False, 0.0, 5.0)
    assert seen[7] == (4, True, 0.0, 20.0)


def test_autoreset_keeps_final_obs_when_asked(pd):
    env = AutoReset(pd, final_obs=True)
    state, ts = env.reset(jax.random.key(0))
    assert "final_obs" in ts.info
    for t in range(4):
        state, ts = env.step(jax.random.key(t), state, _const(pd, 1))
    assert bool(ts.terminated)
    # the returned obs is the new episode's first (t=0, no previous action) ...
    np.testing.assert_array_equal(ts.obs["row"][0], [0, 0, 1, 0, 0, 1, 0])
    # ... and the final obs saw (defect, defect) at t = horizon
    np.testing.assert_array_equal(ts.info["final_obs"]["row"][0], [0, 1, 0, 0, 1, 0, 1])


def test_vecenv_argument_errors(pd):
    with pytest.raises(ValueError, match="num_envs must be a positive int"):
        VecEnv(pd, 0)
    with pytest.raises(ValueError, match=r"reset_budget must be an int in \[1, num_envs=4\]"):
        VecEnv(pd, 4, reset_budget=5)
    with pytest.raises(TypeError, match="wraps a jaxagents Env"):
        VecEnv(object(), 4)
    with pytest.raises(ValueError, match="select_resets must be True, False or None"):
        VecEnv(pd, 4, select_resets="yes")
    vec = VecEnv(pd, 4)
    state, ts = vec.reset(jax.random.key(0))
    with pytest.raises(ValueError, match="leading num_envs=4 axis"):
        vec.step(jax.random.key(0), state, {"row": jnp.zeros((3, 1), jnp.int32), "column": jnp.zeros((3, 1), jnp.int32)})


def test_flatten_and_merge_roles_for_selfplay():
    ttt = jaxagents.make("tic_tac_toe")
    env = MergeRoles(FlattenObservation(ttt))
    assert list(env.roles) == ["agents"]
    role = env.roles["agents"]
    assert role.num_agents == 2 and role.observation_space.shape == (18 + 2,) and role.action_space.n == 9
    state, ts = env.reset(jax.random.key(0))
    np.testing.assert_array_equal(ts.obs["agents"][:, -2:], [[1, 0], [0, 1]])  # role ids
    np.testing.assert_array_equal(ts.active["agents"], [True, False])
    # agent 0 (first) plays the centre; agent 1's action is ignored on first's turn
    state, ts = env.step(jax.random.key(1), state, {"agents": jnp.array([4, 0])})
    np.testing.assert_array_equal(ts.obs["agents"][0, :18].reshape(3, 3, 2)[1, 1], [1, 0])
    np.testing.assert_array_equal(ts.obs["agents"][1, :18].reshape(3, 3, 2)[1, 1], [0, 1])
    np.testing.assert_array_equal(ts.active["agents"], [False, True])
    assert not ts.action_mask["agents"][:, 4].any()
    with pytest.raises(ValueError, match="unknown roles"):
        MergeRoles(FlattenObservation(ttt), groups={"g": ["third"]})
    with pytest.raises(TypeError, match="FlattenObservation"):
        MergeRoles(ttt)


def test_merge_roles_pads_actions_and_observations():
    """Roles with different sizes: padding is zeros and padded actions are masked."""
    pd3 = jaxagents.make("prisoners_dilemma", payoff=np.zeros((2, 3, 3)))
    ttt = FlattenObservation(jaxagents.make("tic_tac_toe"))
    merged = MergeRoles(ttt, groups={"x": ["first"]}, role_id=False)
    assert set(merged.roles) == {"x", "second"}
    env = MergeRoles(pd3, role_id=False)
    _, ts = env.reset(jax.random.key(0))
    assert ts.action_mask["agents"].shape == (2, 3)
    # both players of the matrix game always act, so the merged role keeps that promise;
    # tic-tac-toe's players take turns, so neither role nor group makes it
    assert env.roles["agents"].always_active and not env.roles["agents"].always_legal
    assert not merged.roles["x"].always_active and not merged.roles["second"].always_active


def test_random_actions_respect_masks():
    env = jaxagents.make("tic_tac_toe")
    state, ts = env.reset(jax.random.key(0))
    state, ts = env.step(jax.random.key(0), state, {"first": jnp.array([4]), "second": jnp.array([0])})
    acts = jax.vmap(lambda k: random_actions(env, k, ts))(jax.random.split(jax.random.key(1), 500))
    assert not np.any(np.asarray(acts["second"]) == 4)


def test_random_actions_are_uniform_over_legal_actions():
    env = jaxagents.make("tic_tac_toe")
    _, ts = env.reset(jax.random.key(0))
    ts = ts.replace(action_mask={"first": jnp.array([[1, 0, 1, 0, 0, 0, 0, 0, 1]], bool),
                                 "second": jnp.zeros((1, 9), bool)})  # no legal action: uniform
    acts = jax.vmap(lambda k: random_actions(env, k, ts))(jax.random.split(jax.random.key(1), 27000))
    first = np.bincount(np.asarray(acts["first"][:, 0]), minlength=9)
    assert first[[1, 3, 4, 5, 6, 7]].sum() == 0
    np.testing.assert_allclose(first[[0, 2, 8]] / 27000, 1 / 3, atol=0.015)
    np.testing.assert_allclose(np.bincount(np.asarray(acts["second"][:, 0]), minlength=9) / 27000, 1 / 9, atol=0.01)


@pytest.mark.parametrize("key_kind, n", [("raw", 4), ("not_partitionable", 4), ("raw", 1)])
def test_vecenv_keys_equal_vmapped_autoreset(key_kind, n):
    """VecEnv derives only the keys it uses (fold_in where that equals split); the
    result must stay vmap(AutoReset) for raw uint32 keys and JAX's other split mode
    too (typed keys in the default mode: tests/test_conformance.py), and for a batch
    of one, which VecEnv runs unbatched."""
    kuhn = jaxagents.make("kuhn_poker")  # random deals on reset; hands end after 2-3 moves
    steps = 7
    vec, auto = VecEnv(kuhn, n, reset_budget=1), AutoReset(kuhn)
    acts = jax.random.randint(jax.random.key(7), (steps, n, 1), 0, 2)

    def run(key):
        s_v, ts_v0 = vec.reset(key)
        s_a, ts_a0 = jax.vmap(auto.reset)(jax.random.split(key, n))

        def body(carry, xs):
            s_v, s_a = carry
            k, a = xs
            a = {"player_0": a, "player_1": a}
            s_v, ts_v = vec.step(k, s_v, a)
            s_a, ts_a = jax.vmap(auto.step)(jax.random.split(k, n), s_a, a)
            return (s_v, s_a), (ts_v, ts_a)

        return (ts_v0, ts_a0), jax.lax.scan(body, (s_v, s_a), (jax.random.split(key, steps), acts))[1]

    key = jax.random.PRNGKey(3)
    if key_kind == "not_partitionable":
        with jax.threefry_partitionable(False):
            (first_v, first_a), (ts_v, ts_a) = jax.jit(run)(key)
    else:
        (first_v, first_a), (ts_v, ts_a) = jax.jit(run)(key)
    assert int(ts_v.done.sum()) >= n * 2  # resets ran (with n = 4: partial, 1 per step, and whole-batch)
    chex.assert_trees_all_equal((first_v, ts_v), (first_a, ts_a))


@pytest.mark.slow  # (10-25 s: the default suite keeps its 10 minutes; VecEnv against vmap(AutoReset) stays, above and in tests/test_conformance.py)
def test_reset_budget_never_changes_results():
    """Any reset budget, and resetting by selection (GPU's form), gives vmap(AutoReset)'s
    trajectory: one program steps VecEnvs with budgets 1, 3 and 8 (8 envs), one with
    ``select_resets=True``, and vmap(AutoReset) on the same keys and actions.
    Kuhn hands end after 2-3 moves, so a few or many envs reset on the way (exactly one,
    budget 1's gather/scatter path, is covered on every env by tests/test_conformance.py)."""
    kuhn = jaxagents.make("kuhn_poker")
    n, steps = 8, 12
    vecs = [VecEnv(kuhn, n, reset_budget=b) for b in (1, 3, n)] + [VecEnv(kuhn, n, select_resets=True)]
    auto = AutoReset(kuhn)
    acts = jax.random.randint(jax.random.key(5), (steps, n, 1), 0, 2)

    def run(key):
        k0, k1 = jax.random.split(key)
        states = [v.reset(k0)[0] for v in vecs] + [jax.vmap(auto.reset)(jax.random.split(k0, n))[0]]

        def body(states, xs):
            k, a = xs
            a = {"player_0": a, "player_1": a}
            out = [v.step(k, s, a) for v, s in zip(vecs, states[:-1])]
            out.append(jax.vmap(auto.step)(jax.random.split(k, n), states[-1], a))
            return [s for s, _ in out], [ts for _, ts in out]

        return jax.lax.scan(body, states, (jax.random.split(k1, steps), acts))[1]

    traj = jax.jit(run)(jax.random.key(11))
    done = np.asarray(traj[-1].done).sum(-1)
    # partial resets (2-3 envs, within budget 3) and whole-batch fallbacks (> 3) both ran
    assert ((done >= 1) & (done <= 3)).any() and done.max() > 3
    for ts in traj[:-1]:
        chex.assert_trees_all_equal(ts, traj[-1])


def test_gpu_resets_by_selection_when_small(pd, monkeypatch):
    """On GPU a data-dependent loop or branch costs a device synchronisation, so a small
    VecEnv resets by selection (no ``while``/``cond`` in its step) and a large one, where
    resetting everything every step costs more, keeps the loop; on CPU both keep it."""
    from jaxagents.core.wrappers.autoreset import SELECT_RESETS_MAX_AGENTS

    def control_flow(n, **kw):
        vec = VecEnv(pd, n, **kw)
        state, _ = vec.reset(jax.random.key(0))
        acts = {"row": jnp.zeros((n, 1), jnp.int32), "column": jnp.zeros((n, 1), jnp.int32)}
        jaxpr = str(jax.make_jaxpr(vec.step)(jax.random.key(1), state, acts))
        return "while" in jaxpr or "cond" in jaxpr

    big = SELECT_RESETS_MAX_AGENTS // pd.num_agents + 1
    monkeypatch.setattr(jax, "default_backend", lambda: "cpu")
    assert control_flow(4) and control_flow(big)
    assert not control_flow(4, select_resets=True)
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert not control_flow(4) and control_flow(big)
    assert control_flow(4, select_resets=False)
