"""The environment contract, checked on *every* registered environment.

A new environment registered with ``jaxagents.register`` (or in the built-in table)
is covered here with no new test code. Each environment is compiled once per module
(the fixture below) and the tests inspect the recorded trajectories.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxagents
from jaxagents import AutoReset, Discrete, EpisodeStats, VecEnv, random_actions
from jaxagents.core.spaces import MultiDiscrete

NUM_ENVS = 4
STEPS = 120  # long enough that every built-in game finishes several episodes
# Constructor arguments for envs whose default episodes outlast STEPS (the checks of
# auto-reset need finished episodes); everything else runs with its defaults.
MAKE_KWARGS = {
    "overcooked": {"horizon": 50},
    "rware": {"horizon": 50},
    "market": {"num_citizens": 16, "horizon": 50, "tax_period": 10},
    "gtb": {"num_citizens": 4, "horizon": 50, "tax_period": 10},
    "macro": {"num_households": 16, "num_firms": 2},
    "econgym": {"households": "olg", "governments": ("fiscal", "pension", "central_bank"), "bank": "commercial",
                "market": "oligopoly", "num_households": 16, "num_firms": 2, "horizon": 40},
    "econgym_task": {"task": "tre_government_ours", "num_households": 16, "horizon": 40},
    "macro_central_bank": {"num_households": 16, "num_firms": 2},
    "taxation": {"num_workers": 32, "period_length": 4, "num_periods": 3},
    # short steps keep compiles small; the safety filter is covered on navigation here
    # and in tests/environments/robots
    "robots_navigation": {"ticks_per_step": 5, "filter_iters": 5},
    **{k: {"ticks_per_step": 5, "filter_iters": 5, "safety": False} for k in ("robots_foraging", "robots_predator_prey", "robots_discovery", "robots_material_transport", "robots_warehouse", "robots_arctic_transport", "robots_continuous_rware")},
    **{k: {"num_agents": 64} for k in ("mf_opinion", "mf_opinion_network", "mf_epidemic", "mf_crowd", "mf_crowd_four_rooms")},
}
DRIFT_TOLERANCE = {"macro": 1e-3, "macro_central_bank": 1e-3, "taxation": 1e-5,
                   "econgym": 1e-5, "econgym_task": 1e-5}  # EconGym's float32 economy: 1.2e-6 seen on CI


def _illegal_actions(env, key):
    """Uniform over an enlarged range: legal, masked and out-of-range actions."""
    out = {}
    for k, (name, role) in zip(jax.random.split(key, len(env.roles)), env.roles.items()):
        space = role.action_space
        if isinstance(space, Discrete):
            out[name] = jax.random.randint(k, (role.num_agents,), -2, space.n + 2, dtype=space.dtype)
        elif isinstance(space, MultiDiscrete):
            hi = jnp.asarray(space.nvec, space.dtype) + 2
            out[name] = jax.random.randint(k, (role.num_agents,) + space.shape, -2, hi, dtype=space.dtype)
        else:
            out[name] = space.sample(k, (role.num_agents,)) * 3.0
    return out


class Rollout:
    """One environment's compiled programs and recorded rollouts, shared by the tests
    of this module. Compiling dominates this suite, so there are only three programs
    per environment: the rollout (legal or illegal actions, chosen by a traced flag),
    the replay of its actions through ``vmap(AutoReset)``, and one unbatched step.
    """

    def __init__(self, env_id: str):
        self.env_id = env_id
        self.env = jaxagents.make(env_id, **MAKE_KWARGS.get(env_id, {}))
        env = self.env
        self.vec = VecEnv(EpisodeStats(env), NUM_ENVS, reset_budget=1)
        self.auto = AutoReset(EpisodeStats(env))
        vec, auto = self.vec, self.auto

        def rollout(key, illegal):
            """``STEPS`` steps of ``vec`` with random legal actions, or (``illegal``)
            actions drawn over an enlarged range: legal, masked and out of range."""
            k0, k1 = jax.random.split(key)
            state, ts0 = vec.reset(k0)

            def body(carry, k):
                state, ts = carry
                ka, ks = jax.random.split(k)
                keys = jax.random.split(ka, NUM_ENVS)
                legal = jax.vmap(lambda kk, t: random_actions(env, kk, t))(keys, ts)
                bad = jax.vmap(lambda kk: _illegal_actions(env, kk))(keys)
                acts = jax.tree_util.tree_map(lambda b, g: jnp.where(illegal, b, g), bad, legal)
                state, nts = vec.step(ks, state, acts)
                return (state, nts), (ts, acts, nts)

            _, traj = jax.lax.scan(body, (state, ts0), jax.random.split(k1, STEPS))
            return ts0, traj

        def replay(key, acts):
            """The same keys and actions through ``vmap(AutoReset)``: the time steps
            after each step."""
            k0, k1 = jax.random.split(key)
            s_a, _ = jax.vmap(auto.reset)(jax.random.split(k0, NUM_ENVS))

            def body(s_a, xs):
                k, a = xs
                ks = jax.random.split(k)[1]  # the rollout's step key
                s_a, ts_a = jax.vmap(auto.step)(jax.random.split(ks, NUM_ENVS), s_a, a)
                return s_a, ts_a

            return jax.lax.scan(body, s_a, (jax.random.split(k1, STEPS), acts))[1]

        self.rollout = jax.jit(rollout)
        self.replay = jax.jit(replay)
        self.key = jax.random.key(0)
        self.ts0, (self.before, self.actions, self.after) = jax.device_get(self.rollout(self.key, False))
        self.illegal = jax.device_get(self.rollout(jax.random.key(1), True))

        # one unbatched environment; ``step_traces`` counts how often step was traced
        self.step_traces = 0

        def step1(key, state, actions):
            self.step_traces += 1
            return env.step(key, state, actions)

        self.reset1 = jax.jit(env.reset)
        self.step1 = jax.jit(step1)
        self.sample1 = jax.jit(lambda k, ts: random_actions(env, k, ts))


# Registered ids that share their code with another id checked by default, or whose
# scenario has its own jit/vmap tests (tests/environments/robots): the contract is
# checked on them with `pytest -m heavy` (compiling dominates this module: 8 minutes).
HEAVY_IDS = {
    "stag_hunt", "chicken", "matching_pennies", "coordination",  # MatrixGame, as prisoners_dilemma
    "robots_foraging", "robots_predator_prey", "robots_material_transport", "robots_warehouse",
    "robots_arctic_transport", "robots_continuous_rware",  # compiled vmapped rollouts in test_scenarios_more
    "mf_opinion_network", "mf_crowd_four_rooms",  # Opinion on a graph, 2-D crowd: tests/environments/meanfield
    "macro_central_bank",  # macro under ScriptedRoles: tests/core/test_scripted_roles.py, tests/environments/economy
    "macro", "taxation", "market", "gtb", "econgym", "econgym_task",  # their own jit/vmap rollouts (over params too): tests/environments/economy
    "text_leduc_poker", "text_negotiation", "text_connect_four",  # base.TextGame, as text_kuhn_poker; vmapped replays in tests/environments/text
}
# The compiled contract runs by default on one id per family (the matrix game on the
# prisoner's dilemma, the games on tic-tac-toe, the text games' base class on text Kuhn,
# the robot arena on navigation, the grid robots on rware, the mean-field games on the
# epidemic); these further ids of the same families run it with `pytest -m slow`
# (10-20 s of compiling each: the default suite keeps its 10 minutes). Every id,
# these and the heavy ones included, is traced by the default suite's
# test_contract_traced below.
SLOW_IDS = {
    "kuhn_poker",  # VecEnv against vmap(AutoReset) on Kuhn by default in tests/core/test_env_and_wrappers.py
    "connect_four", "leduc_poker", "negotiation", "hanabi", "overcooked",  # games: their own jitted rules and parity tests (tests/environments/games)
    "text_tic_tac_toe",  # base.TextGame, as text_kuhn_poker
    "robots_discovery",  # the robot arena, as robots_navigation
    "lbf",  # grid robots, as rware; jitted step for step against lbforaging in tests/environments/robots
    "mf_crowd", "mf_opinion",  # mean-field games, as mf_epidemic; their own tests in tests/environments/meanfield
}


def _tier(env_id):
    if env_id in HEAVY_IDS:
        return pytest.param(env_id, marks=pytest.mark.heavy)
    if env_id in SLOW_IDS:
        return pytest.param(env_id, marks=pytest.mark.slow)
    return env_id


@pytest.fixture(scope="module", params=[_tier(i) for i in jaxagents.list_envs()])
def ro(request):
    return Rollout(request.param)


def _per_role_checks(env, ts, batch, values=True):
    """Shapes and dtypes of every field; with ``values`` (arrays, not traced shapes)
    also the static promises ``always_legal`` and ``always_active``."""
    for name, role in env.roles.items():
        n = role.num_agents
        why = role.observation_space.check(ts.obs[name], batch + (n,))
        assert why is None, f"obs[{name!r}]: {why}"
        assert ts.reward[name].shape == batch + (n,) and ts.reward[name].dtype == np.float32
        assert ts.action_mask[name].shape == batch + role.mask_shape and ts.action_mask[name].dtype == bool
        if values and role.always_legal:  # the static promise consumers rely on to skip the mask
            assert np.all(ts.action_mask[name]), f"{name}: declared always_legal but has an illegal action"
        if values and role.always_active:  # learners then train on every sample with weight 1
            assert np.all(ts.active[name]), f"{name}: declared always_active but has an inactive agent"
        assert ts.active[name].shape == batch + (n,) and ts.active[name].dtype == bool
    assert ts.terminated.shape == batch and ts.terminated.dtype == bool
    assert ts.truncated.shape == batch and ts.truncated.dtype == bool


@pytest.mark.parametrize("env_id", jaxagents.list_envs())
def test_contract_traced(env_id):
    """Every registered id, in the default suite: the contract's structural half on a
    traced (``jax.eval_shape``), not compiled, reset and step -- well under a second an
    id where the compiled checks below take 10-40 s. Spaces match observations, rewards,
    masks, flags and info keep their shapes and dtypes from reset to step, the state a
    step returns has the shapes, dtypes and weak types of the one it was given (so
    stepping again does not retrace), and malformed actions are refused while tracing.
    The compiled contract (values, determinism, auto-reset, masks, illegal actions) runs
    on each id in its tier: by default, ``-m slow`` or ``-m heavy`` (``_tier``)."""
    env = jaxagents.make(env_id, **MAKE_KWARGS.get(env_id, {}))
    assert env.roles and all(isinstance(k, str) for k in env.roles)
    assert env.num_agents == sum(r.num_agents for r in env.roles.values())
    params = env.validate_params()
    assert jax.tree_util.tree_structure(params) == jax.tree_util.tree_structure(env.default_params())

    def reset_and_step(key):
        k0, k1, k2 = jax.random.split(key, 3)
        state, ts0 = env.reset(k0)
        acts = random_actions(env, k1, ts0)
        state1, ts1 = env.step(k2, state, acts)
        return state, ts0, acts, state1, ts1

    state, ts0, acts, state1, ts1 = jax.eval_shape(reset_and_step, jax.random.key(0))
    _per_role_checks(env, ts0, (), values=False)
    _per_role_checks(env, ts1, (), values=False)
    assert set(acts) == set(env.roles)
    assert jax.tree_util.tree_structure(ts0.info) == jax.tree_util.tree_structure(ts1.info)
    shapes = lambda t: [(x.shape, x.dtype) for x in jax.tree_util.tree_leaves(t)]  # noqa: E731
    assert shapes(ts0) == shapes(ts1), "reset and step return time steps of different shapes or dtypes"
    avals = lambda t: [(x.shape, x.dtype, x.weak_type) for x in jax.tree_util.tree_leaves(t)]  # noqa: E731
    assert jax.tree_util.tree_structure(state) == jax.tree_util.tree_structure(state1)
    assert avals(state) == avals(state1), "the state a step returns differs from its input (the next step retraces)"

    name = next(iter(env.roles))

    def step_with(change):
        def f(key):
            k0, k1, k2 = jax.random.split(key, 3)
            s, ts = env.reset(k0)
            good = random_actions(env, k1, ts)
            return env.step(k2, s, change(good))

        return jax.eval_shape(f, jax.random.key(0))

    with pytest.raises(ValueError, match="roles"):
        step_with(lambda good: {**good, "no_such_role": good[name]})
    with pytest.raises(ValueError, match="roles"):
        step_with(lambda good: {k: v for k, v in good.items() if k != name})
    with pytest.raises(ValueError, match="shape"):
        step_with(lambda good: {**good, name: jnp.concatenate([good[name], good[name]])})
    if isinstance(env.roles[name].action_space, Discrete):
        with pytest.raises(TypeError, match="integers"):
            step_with(lambda good: {**good, name: good[name].astype(jnp.float32)})


def test_observations_match_spaces(ro):
    env = ro.env
    _per_role_checks(env, ro.ts0, (NUM_ENVS,))
    _per_role_checks(env, ro.after, (STEPS, NUM_ENVS))
    # a single, unbatched environment
    state, ts = ro.reset1(jax.random.key(3))
    _per_role_checks(env, ts, ())
    acts = ro.sample1(jax.random.key(4), ts)
    _, ts = ro.step1(jax.random.key(5), state, acts)
    _per_role_checks(env, ts, ())


def test_observation_values_inside_spaces(ro):
    for name, role in ro.env.roles.items():
        assert bool(role.observation_space.contains(ro.after.obs[name], (STEPS, NUM_ENVS, role.num_agents)))


def test_roles_and_metadata(ro):
    env = ro.env
    assert env.roles and all(isinstance(k, str) for k in env.roles)
    assert env.num_agents == sum(r.num_agents for r in env.roles.values())
    params = env.validate_params()
    assert jax.tree_util.tree_structure(params) == jax.tree_util.tree_structure(env.default_params())


def test_reset_reward_is_zero_and_info_structure_is_stable(ro):
    for name in ro.env.roles:
        assert np.all(ro.ts0.reward[name] == 0)
    assert not ro.ts0.terminated.any() and not ro.ts0.truncated.any()
    # auto-reset merges reset and step outputs, so their info keys must agree
    assert jax.tree_util.tree_structure(ro.ts0.info) == jax.tree_util.tree_structure(
        jax.tree_util.tree_map(lambda x: x[0], ro.after.info)
    )


def test_same_key_same_trajectory(ro):
    again = jax.device_get(ro.rollout(ro.key, False))
    chex.assert_trees_all_equal(again[1][2], ro.after)
    other = jax.device_get(ro.rollout(jax.random.key(99), False))
    leaves = lambda t: np.concatenate([np.ravel(np.asarray(x, np.float32)) for x in jax.tree_util.tree_leaves(t)])
    # a different key gives a different trajectory (random actions differ)
    assert not np.array_equal(leaves(other[1][1]), leaves(ro.actions))


@pytest.fixture(scope="module")
def replayed(ro):
    """The recorded legal rollout's actions replayed through ``vmap(AutoReset)``."""
    return jax.device_get(ro.replay(ro.key, ro.actions))


def test_vecenv_equals_vmapped_autoreset(ro, replayed):
    """VecEnv is an optimisation of vmap(AutoReset), not a different semantics: the
    recorded random-legal actions (several episodes end and reset on the way) give
    the same time steps. With a reset budget of 1 and 4 envs both of VecEnv's paths
    run (gather/scatter when one episode ends, the whole-batch reset when several do;
    tests/core checks that the budget never changes results)."""
    # continuous-state envs: XLA may round the same maths differently in the two
    # programs (1 ulp), and the difference then drifts through the dynamics
    tol = DRIFT_TOLERANCE.get(ro.env_id, 0.0)
    chex.assert_trees_all_close(ro.after, replayed, rtol=max(tol, 1e-6), atol=tol)


def test_no_recompilation_across_steps(ro):
    state, ts = ro.reset1(jax.random.key(0))
    for i in range(4):
        acts = ro.sample1(jax.random.key(i), ts)
        state, ts = ro.step1(jax.random.key(10 + i), state, acts)
    assert ro.step_traces == 1, f"env.step was traced {ro.step_traces} times for one input structure"


def test_random_legal_play_respects_masks(ro):
    for name, role in ro.env.roles.items():
        if not isinstance(role.action_space, Discrete):
            continue
        mask = ro.before.action_mask[name]
        active = ro.before.active[name]
        # every active agent has at least one legal action
        assert np.all(mask.any(-1) | ~active), f"{name}: an active agent has no legal action"
        a = ro.actions[name]
        taken = np.take_along_axis(mask, a[..., None].astype(np.int64), -1)[..., 0]
        assert np.all(taken | ~mask.any(-1)), f"{name}: a masked action was sampled"
    if "illegal_action" in ro.after.info:
        assert not np.any(ro.after.info["illegal_action"]), "legal play was reported illegal"


def test_episodes_end_and_autoreset_restarts_them(ro):
    done = ro.after.terminated | ro.after.truncated
    assert done.any(), f"{ro.env_id}: no episode ended in {STEPS} random steps"
    length = ro.after.info["episode_length"]
    # after a finished episode the next step is the first of a new one
    t, e = np.nonzero(done[:-1])
    assert np.all(length[t + 1, e] == 1)
    # and the episode-length counter otherwise goes up by one
    t, e = np.nonzero(~done[:-1])
    assert np.all(length[t + 1, e] == length[t, e] + 1)


def test_terminated_takes_precedence_over_truncated(ro):
    assert not np.any(ro.after.terminated & ro.after.truncated)


def test_no_nan_or_inf_under_illegal_actions(ro):
    _, (before, acts, after) = ro.illegal
    for leaf in jax.tree_util.tree_leaves((after.obs, after.reward, after.info)):
        leaf = np.asarray(leaf)
        if np.issubdtype(leaf.dtype, np.floating):
            assert np.all(np.isfinite(leaf))
    _per_role_checks(ro.env, after, (STEPS, NUM_ENVS))


def test_wrong_actions_are_rejected_before_compiling(ro):
    env = ro.env
    state, ts = ro.reset1(jax.random.key(0))
    good = ro.sample1(jax.random.key(1), ts)
    name = next(iter(env.roles))
    with pytest.raises(ValueError, match="roles"):
        env.step(jax.random.key(0), state, {**good, "no_such_role": good[name]})
    with pytest.raises(ValueError, match="roles"):
        env.step(jax.random.key(0), state, {k: v for k, v in good.items() if k != name})
    with pytest.raises(ValueError, match="shape"):
        env.step(jax.random.key(0), state, {**good, name: jnp.concatenate([good[name], good[name]])})
    if isinstance(env.roles[name].action_space, Discrete):
        with pytest.raises(TypeError, match="integers"):
            env.step(jax.random.key(0), state, {**good, name: good[name].astype(jnp.float32)})
