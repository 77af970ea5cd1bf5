"""``from_jaxmarl`` / ``to_jaxmarl`` against the real JaxMARL package.

Each JaxMARL env is compiled once (module-scoped ``case`` fixture): one jitted
program rolls out, from the same keys and actions,

* JaxMARL's ``step_env`` (no auto-reset) next to our adapter's ``step``, and
* JaxMARL's ``step`` (with its auto-reset) next to ``to_jaxmarl(from_jaxmarl(x)).step``,

and the tests compare the recorded trajectories step for step.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

jaxmarl = pytest.importorskip("jaxmarl")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jaxmarl.environments import spaces as jm_spaces  # noqa: E402
from jaxmarl.environments.multi_agent_env import MultiAgentEnv  # noqa: E402
from jaxmarl.environments.overcooked import overcooked_layouts  # noqa: E402
from jaxmarl.environments.smax import map_name_to_scenario  # noqa: E402
from jaxmarl.wrappers.baselines import LogWrapper  # noqa: E402

import jaxagents  # noqa: E402
from jaxagents import AutoReset, Box, Discrete, VecEnv, random_actions  # noqa: E402
from jaxagents.compat import JaxMARLAdapter, JaxMARLState, from_jaxmarl, to_jaxmarl  # noqa: E402
from jaxagents.compat.jaxmarl.roles import _group_roles  # noqa: E402

pytestmark = pytest.mark.jaxmarl

T = 30  # steps per rollout: MPE's episode (26 steps) ends inside it
INF = np.inf


def jit(fn):
    """``jax.jit`` with XLA's backend optimisations off: these rollouts run in
    milliseconds, compiling them is what takes the time (about half as long)."""
    return jax.jit(fn, compiler_options={"xla_backend_optimization_level": 0})


ENVS = {
    "mpe": dict(
        make=lambda: jaxmarl.make("MPE_simple_spread_v3"),
        role_agents={"agents": ["agent_0", "agent_1", "agent_2"]},  # from env.agent_classes
        obs=Box(-INF, INF, (18,), jnp.float32),
        act=Discrete(5),
    ),
    "overcooked": dict(
        make=lambda: jaxmarl.make("overcooked", layout=overcooked_layouts["cramped_room"]),
        role_agents={"agent": ["agent_0", "agent_1"]},
        # JaxMARL declares f32[5, 4, 26]; the observations really are u8[4, 5, 26].
        obs=Box(0, 255, (4, 5, 26), jnp.uint8),
        act=Discrete(6, jnp.uint32),
    ),
    "smax": dict(
        make=lambda: jaxmarl.make("HeuristicEnemySMAX", scenario=map_name_to_scenario("3m")),
        role_agents={"ally": ["ally_0", "ally_1", "ally_2"]},
        obs=Box(-1.0, 1.0, (75,), jnp.float32),
        act=Discrete(8),
    ),
    "hanabi": dict(
        make=lambda: jaxmarl.make("hanabi"),
        role_agents={"agent": ["agent_0", "agent_1"]},
        obs=Box(0.0, 1.0, (658,), jnp.float32),
        act=Discrete(21),
    ),
}


def _ref_masks(x, state):
    """JaxMARL's own legal actions ``{agent: bool[A]}``, or None where it has none."""
    if hasattr(x, "get_legal_moves"):
        return {a: m.astype(bool) for a, m in x.get_legal_moves(state).items()}
    try:
        return {a: m.astype(bool) for a, m in x.get_avail_actions(state).items()}
    except NotImplementedError:
        return None


def _ref_global(x, state, obs):
    if hasattr(x, "get_world_state"):
        return x.get_world_state(state)
    return jnp.concatenate([jnp.ravel(obs[a]).astype(jnp.float32) for a in x.agents])


def _sample(key, masks, agents, spaces):
    """Random legal action per agent (uniform where a mask is missing)."""
    out = {}
    for k, a in zip(jax.random.split(key, len(agents)), agents):
        space = spaces[a]
        logits = jnp.zeros((space.n,)) if masks is None else jnp.where(masks[a], 0.0, -jnp.inf)
        out[a] = jax.random.categorical(k, logits).astype(space.dtype)
    return out


class Case:
    """One JaxMARL env, its adapter and view, and the recorded rollouts."""

    def __init__(self, name):
        spec = ENVS[name]
        self.name, self.spec = name, spec
        self.x = spec["make"]()
        self.env = from_jaxmarl(self.x)
        self.view = to_jaxmarl(self.env)
        self.out = jax.tree_util.tree_map(np.asarray, jit(self._run)(jax.random.key(7)))

    def per_role(self, per_agent, dtype=None):
        """JaxMARL's per-agent dict laid out like our per-role arrays (reference side)."""
        out = {}
        for role, members in self.spec["role_agents"].items():
            x = jnp.stack([jnp.asarray(per_agent[a]) for a in members])
            out[role] = x if dtype is None else x.astype(dtype)
        return out

    def _run(self, key):
        x, env, view = self.x, self.env, self.view
        k_reset, k_roll = jax.random.split(key)
        obs_j, st_j = x.reset(k_reset)
        s, ts = env.reset(k_reset)
        vobs, vst = view.reset(k_reset)
        ref_mask = _ref_masks(x, st_j)
        reset = dict(
            obs=ts.obs, ref_obs=self.per_role(obs_j), ts=ts,
            ref_mask=None if ref_mask is None else self.per_role(ref_mask),
            glob=env.global_obs(s), ref_glob=_ref_global(x, st_j, obs_j),
            view_obs=vobs, view_mask=view.get_avail_actions(vst),
        )
        jm_act_spaces = {a: x.action_space(a) for a in x.agents}

        def body(carry, k):
            st_j, s, ts, xst, vst = carry
            k_act, k_rt, k_step, k_new = jax.random.split(k, 4)
            # (1) adapter vs JaxMARL step_env, actions legal under our mask
            actions = random_actions(env, k_act, ts)
            per_agent = {a: actions[r][i] for r, m in env.role_agents.items() for i, a in enumerate(m)}
            obs_j, st_j, rew_j, d_j, info_j = x.step_env(k_step, st_j, per_agent)
            s, ts = env.step(k_step, s, actions)
            ref_mask = _ref_masks(x, st_j)
            step_ts, step_glob, ref_glob = ts, env.global_obs(s), _ref_global(x, st_j, obs_j)
            # Both sides start a new episode when one ends, so later steps stay informative.
            sel = lambda done, new, old: jax.tree_util.tree_map(lambda u, v: jnp.where(done, u, v), new, old)
            st_j = sel(d_j["__all__"], x.reset(k_new)[1], st_j)
            s, ts = sel(ts.done, env.reset(k_new), (s, ts))
            # (2) view of the adapter vs JaxMARL's step (both auto-reset)
            rt_act = _sample(k_rt, view.get_avail_actions(vst), view.agents, jm_act_spaces)
            xobs, xst, xrew, xd, _ = x.step(k_step, xst, rt_act)
            vobs, vst, vrew, vd, vinfo = view.step(k_step, vst, rt_act)
            rec = dict(
                ts=step_ts, glob=step_glob, ref_glob=ref_glob,
                ref_obs=self.per_role(obs_j), ref_reward=self.per_role(rew_j, jnp.float32),
                ref_done=d_j["__all__"], ref_agent_done=self.per_role(d_j),
                ref_mask=None if ref_mask is None else self.per_role(ref_mask),
                ref_info=jax.tree_util.tree_leaves(info_j),
                x_obs=xobs, x_rew=xrew, x_done=xd, x_mask=_ref_masks(x, xst),
                v_obs=vobs, v_rew=vrew, v_done=vd, v_mask=view.get_avail_actions(vst),
            )
            return (st_j, s, ts, xst, vst), rec

        _, xst = x.reset(k_reset)
        _, steps = jax.lax.scan(body, (st_j, s, ts, xst, vst), jax.random.split(k_roll, T))
        return reset, steps


_CASES: dict[str, Case] = {}


# SMAX and Hanabi compile slowly (a minute each on 2 cores), Overcooked's parity takes
# ~20 s: they run with `pytest -m slow`; MPE covers the adapter in the default run.
SLOW_CASES = ("smax", "hanabi", "overcooked")


@pytest.fixture(scope="module", params=[pytest.param(k, marks=pytest.mark.slow) if k in SLOW_CASES else k for k in ENVS])
def case(request):
    if request.param not in _CASES:
        _CASES[request.param] = Case(request.param)
    yield _CASES[request.param]
    _CASES.pop(request.param, None)  # one compiled env alive at a time


def close(a, b, **kw):
    kw.setdefault("rtol", 1e-5)
    kw.setdefault("atol", 1e-5)
    jax.tree_util.tree_map(lambda u, v: np.testing.assert_allclose(np.asarray(u), np.asarray(v), **kw), a, b)


# --------------------------------------------------------------------------- per env
def test_roles_and_spaces(case):
    env, spec = case.env, case.spec
    assert isinstance(env, JaxMARLAdapter) and isinstance(env, jaxagents.Env)
    assert env.role_agents == spec["role_agents"]
    assert list(env.roles) == list(spec["role_agents"])
    for role, members in spec["role_agents"].items():
        r = env.roles[role]
        assert r.num_agents == len(members)
        assert r.observation_space == spec["obs"], (role, r.observation_space)
        assert r.action_space == spec["act"], (role, r.action_space)
    assert isinstance(env.default_params(), jaxagents.EmptyParams)


def test_observations_agree_with_spaces(case):
    reset, steps = case.out
    for role, r in case.env.roles.items():
        n = r.num_agents
        assert r.observation_space.check(reset["obs"][role], (n,)) is None
        assert r.observation_space.check(steps["ts"].obs[role], (T, n)) is None
        assert steps["ts"].action_mask[role].shape == (T, *r.mask_shape)
        assert steps["ts"].action_mask[role].dtype == np.bool_
        assert steps["ts"].reward[role].shape == (T, n) and steps["ts"].reward[role].dtype == np.float32
        assert steps["ts"].active[role].shape == (T, n) and steps["ts"].active[role].dtype == np.bool_


def test_reset_matches_jaxmarl(case):
    reset, _ = case.out
    close(reset["obs"], reset["ref_obs"], rtol=0, atol=0)
    ts = reset["ts"]
    assert not ts.terminated and not ts.truncated
    for role in case.env.roles:
        assert np.all(ts.reward[role] == 0)
    # info has the same keys (zeros) after reset as after a step
    assert set(ts.info) == set(case.out[1]["ts"].info)


def test_step_parity_with_step_env(case):
    _, steps = case.out
    ts = steps["ts"]
    close(ts.obs, steps["ref_obs"])
    close(ts.reward, steps["ref_reward"])
    np.testing.assert_array_equal(ts.terminated | ts.truncated, steps["ref_done"])
    assert not np.any(ts.terminated & ts.truncated)
    # JaxMARL infos survive, flattened (Overcooked's shaped rewards)
    close([ts.info[k] for k in sorted(ts.info)], steps["ref_info"])


def test_action_masks_and_active(case):
    reset, steps = case.out
    ts = steps["ts"]
    if steps["ref_mask"] is None:  # no masks in JaxMARL: all legal
        for role in case.env.roles:
            assert ts.action_mask[role].all() and reset["ts"].action_mask[role].all()
    else:
        for role in case.env.roles:
            np.testing.assert_array_equal(reset["ts"].action_mask[role], reset["ref_mask"][role])
            np.testing.assert_array_equal(ts.action_mask[role], steps["ref_mask"][role])
    for role in case.env.roles:
        # an agent done on its own (a dead SMAX unit) is inactive until the episode ends
        alone = steps["ref_agent_done"][role] & ~steps["ref_done"][:, None]
        assert not np.any(ts.active[role] & alone)
        if case.name == "hanabi":
            # the player to move is the one whose no-op is illegal; exactly one per step
            mover = ~steps["ref_mask"][role][..., -1]
            np.testing.assert_array_equal(ts.active[role], mover & ~alone)
            np.testing.assert_array_equal(ts.active[role].sum(-1), 1)
            np.testing.assert_array_equal(reset["ts"].active[role], ~reset["ref_mask"][role][..., -1])
        else:
            np.testing.assert_array_equal(ts.active[role], ~alone)
    if case.name == "smax":  # with this key some allies die before the episode ends
        assert any((steps["ref_agent_done"][r] & ~steps["ref_done"][:, None]).any() for r in case.env.roles)


def test_terminated_truncated(case):
    _, steps = case.out
    ts, done = steps["ts"], steps["ref_done"]
    if case.name == "mpe":  # only a time limit ends MPE: step 26 (max_steps=25 + 1)
        assert done[25] and not done[:25].any()
        np.testing.assert_array_equal(ts.truncated, done)
        assert not ts.terminated.any()
    elif case.name == "hanabi":  # no max_steps: every end is a termination
        np.testing.assert_array_equal(ts.terminated, done)
        assert not ts.truncated.any()
        assert done.sum() >= 2  # with this key the rollout spans several games
    elif case.name == "overcooked":  # 400-step limit, not reached
        assert not done.any()


def test_global_obs(case):
    reset, steps = case.out
    g = case.env.global_obs_shape
    assert reset["glob"].shape == g and steps["glob"].shape == (T, *g)
    close(reset["glob"], reset["ref_glob"])
    close(steps["glob"], steps["ref_glob"])


def test_round_trip_view_behaves_like_jaxmarl(case):
    reset, steps = case.out
    view, x = case.view, case.x
    assert isinstance(view, MultiAgentEnv)
    assert view.agents == list(x.agents) and view.num_agents == x.num_agents
    for a in x.agents:
        assert type(view.action_space(a)) is type(x.action_space(a))
        assert view.action_space(a).n == x.action_space(a).n
        assert isinstance(view.observation_space(a), jm_spaces.Box)
    ref_reset = {a: reset["ref_obs"][r][i] for r, m in case.spec["role_agents"].items() for i, a in enumerate(m)}
    close(reset["view_obs"], ref_reset)
    close(steps["v_obs"], {a: steps["x_obs"][a] for a in x.agents})
    close(steps["v_rew"], {a: steps["x_rew"][a] for a in x.agents})
    np.testing.assert_array_equal(steps["v_done"]["__all__"], steps["x_done"]["__all__"])
    if case.name != "smax":  # SMAX's per-agent dones mark dead units; ours carry that in `active`
        for a in x.agents:
            np.testing.assert_array_equal(steps["v_done"][a], steps["x_done"][a])
    if steps["x_mask"] is not None:
        for a in x.agents:
            np.testing.assert_array_equal(steps["v_mask"][a], steps["x_mask"][a])
    if case.name != "overcooked":  # with this key the rollout crosses an auto-reset
        assert steps["x_done"]["__all__"].any()


@pytest.mark.slow  # compiles JaxMARL's Hanabi, as the slow "hanabi" case
def test_hanabi_turns_follow_shuffled_seats():
    # Seat order is shuffled: the player to move is seat_order[current seat].
    x = jaxmarl.make("hanabi", num_agents=3, shuffle_player_order=True)
    env = from_jaxmarl(x)

    @jit
    def run(key):
        s, ts = env.reset(key)

        def body(c, k):
            s, ts = c
            s, ts = env.step(k, s, random_actions(env, k, ts))
            legal = x.get_legal_moves(s.env_state)
            mover = jnp.stack([legal[a][-1] == 0 for a in x.agents])  # the no-op is illegal only for it
            return (s, ts), (ts.active["agent"], mover, s.env_state.seat_order)

        return jax.lax.scan(body, (s, ts), jax.random.split(key, 12))[1]

    active, mover, seat = run(jax.random.key(1))
    assert not np.array_equal(np.asarray(seat[0]), np.arange(3))  # the shuffle is exercised
    np.testing.assert_array_equal(active, mover)
    np.testing.assert_array_equal(np.asarray(active).sum(-1), 1)


# --------------------------------------------------------------------------- MPE only
@pytest.fixture(scope="module")
def mpe():
    return jaxmarl.make("MPE_simple_spread_v3")


def test_adapter_state_is_the_jaxmarl_state(mpe):
    # No wrapping (nothing to copy per step) unless global_obs must be carried (Hanabi).
    env = from_jaxmarl(mpe)
    state, _ = env.reset(jax.random.key(0))
    assert type(state) is type(mpe.reset(jax.random.key(0))[1])
    hanabi = from_jaxmarl(jaxmarl.make("hanabi"))
    assert isinstance(jax.eval_shape(hanabi.reset, jax.random.key(0))[0], JaxMARLState)


def test_autoreset_reproduces_jaxmarl_step(mpe):
    env = AutoReset(from_jaxmarl(mpe))

    @jit
    def run(key):
        obs_j, st_j = mpe.reset(key)
        s, ts = env.reset(key)

        def body(c, k):
            st_j, s = c
            k_a, k_s = jax.random.split(k)
            act = jax.random.randint(k_a, (3,), 0, 5)
            obs_j, st_j, r_j, d_j, _ = mpe.step(k_s, st_j, {a: act[i] for i, a in enumerate(mpe.agents)})
            s, ts = env.step(k_s, s, {"agents": act})
            return (st_j, s), (jnp.stack([obs_j[a] for a in mpe.agents]), ts.obs["agents"], d_j["__all__"], ts.done)

        return jax.lax.scan(body, (st_j, s), jax.random.split(key, T))[1]

    ref_obs, obs, ref_done, done = run(jax.random.key(3))
    np.testing.assert_array_equal(done, ref_done)
    assert done.any()
    close(obs, ref_obs)


def test_vecenv_over_adapter(mpe):
    n = 4
    venv = VecEnv(from_jaxmarl(mpe), n)

    @jit
    def run(key):
        s, ts = venv.reset(key)

        def body(c, k):
            s, ts = c
            k_a, k_s = jax.random.split(k)
            s, ts = venv.step(k_s, s, {"agents": jax.random.randint(k_a, (n, 3), 0, 5)})
            return (s, ts), (ts, s.step)

        return ts, jax.lax.scan(body, (s, ts), jax.random.split(key, T))[1]

    ts0, (ts, step) = run(jax.random.key(1))
    assert ts0.obs["agents"].shape == (n, 3, 18)
    assert ts.obs["agents"].shape == (T, n, 3, 18) and ts.reward["agents"].shape == (T, n, 3)
    assert ts.truncated.shape == (T, n)
    # every episode is truncated at its 26th step and restarts from step 0
    np.testing.assert_array_equal(ts.truncated[25], True)
    assert not ts.truncated[:25].any() and not ts.terminated.any()
    np.testing.assert_array_equal(step[25], 0)
    np.testing.assert_array_equal(step[26], 1)
    assert np.isfinite(ts.obs["agents"]).all()


# --------------------------------------------------------------------------- grouping
def test_agent_classes_name_roles():
    x = jaxmarl.make("MPE_simple_adversary_v3")  # adversary obs 8, good agents obs 10
    env = from_jaxmarl(x)
    assert env.role_agents == {"adversaries": ["adversary_0"], "agents": ["agent_0", "agent_1"]}
    assert env.roles["adversaries"].observation_space.shape == (8,)
    assert env.roles["agents"].observation_space.shape == (10,)


def test_roles_override_and_errors(mpe):
    env = from_jaxmarl(mpe, roles={"lead": ["agent_2"], "rest": ["agent_0", "agent_1"]})
    assert env.role_agents == {"lead": ["agent_2"], "rest": ["agent_0", "agent_1"]}
    assert env.roles["lead"].num_agents == 1 and env.roles["rest"].num_agents == 2
    _, ts = env.reset(jax.random.key(0))
    obs_j, _ = mpe.reset(jax.random.key(0))
    close(ts.obs["lead"][0], obs_j["agent_2"])
    close(ts.obs["rest"], jnp.stack([obs_j["agent_0"], obs_j["agent_1"]]))
    with pytest.raises(ValueError, match="agent_2"):
        from_jaxmarl(mpe, roles={"all": ["agent_0", "agent_1"]})
    with pytest.raises(ValueError, match="several roles"):
        from_jaxmarl(mpe, roles={"a": ["agent_0", "agent_1", "agent_2"], "b": ["agent_0"]})
    with pytest.raises(ValueError, match="different spaces"):
        from_jaxmarl(jaxmarl.make("MPE_simple_adversary_v3"), roles={"all": ["adversary_0", "agent_0", "agent_1"]})


def test_fallback_role_names():
    a, b = (Box(0, 1, (2,)), Discrete(3)), (Box(0, 1, (4,)), Discrete(3))
    spaces = {"ally_0": a, "ally_1": a, "enemy_0": b, "agent_0": a, "agent_1": b}
    groups = _group_roles(list(spaces), spaces, None, None)
    # same-space agents group together, in the agents' order
    assert groups == {"ally_agent": ["ally_0", "ally_1", "agent_0"], "enemy_agent": ["enemy_0", "agent_1"]}
    spaces = {"red_tank_0": a, "red_scout_0": a, "blue_0": b}
    assert _group_roles(list(spaces), spaces, None, None) == {"red": ["red_tank_0", "red_scout_0"], "blue": ["blue_0"]}
    spaces = {"ally_0": a, "ally_1": a, "enemy_0": b}
    assert _group_roles(list(spaces), spaces, None, None) == {"ally": ["ally_0", "ally_1"], "enemy": ["enemy_0"]}
    spaces = {"agent_0": a, "agent_1": b}  # two groups would both be "agent": suffixed
    assert _group_roles(list(spaces), spaces, None, None) == {"agent_0": ["agent_0"], "agent_1": ["agent_1"]}
    # inconsistent agent_classes (mixed spaces) are ignored
    assert _group_roles(list(spaces), spaces, None, {"all": ["agent_0", "agent_1"]}) == {
        "agent_0": ["agent_0"], "agent_1": ["agent_1"],
    }


def test_not_a_jaxmarl_env(mpe):
    for bad in (object(), 3, jaxagents.make("tic_tac_toe"), type(mpe), LogWrapper(mpe)):
        with pytest.raises(TypeError, match="from_jaxmarl"):
            from_jaxmarl(bad)


# --------------------------------------------------------------------------- to_jaxmarl
def test_to_jaxmarl_tic_tac_toe_jaxmarl_loop():
    view = to_jaxmarl(jaxagents.make("tic_tac_toe"))
    assert isinstance(view, MultiAgentEnv)
    assert view.agents == ["first_0", "second_0"] and view.num_agents == 2
    assert isinstance(view.action_space("first_0"), jm_spaces.Discrete) and view.action_space("first_0").n == 9
    assert isinstance(view.observation_space("second_0"), jm_spaces.Box)
    assert view.observation_space("second_0").shape == (3, 3, 2)
    env = LogWrapper(view)  # JaxMARL's own wrapper accepts the view

    @jit
    def run(key):
        obs, state = env.reset(key)

        def body(c, k):
            obs, state = c
            avail = view.get_avail_actions(state.env_state)
            keys = jax.random.split(k, 3)
            act = {
                a: jax.random.categorical(kk, jnp.where(avail[a], 0.0, -jnp.inf)).astype(jnp.int32)
                for kk, a in zip(keys[:2], view.agents)
            }
            obs, state, rew, dones, info = env.step(keys[2], state, act)
            return (obs, state), (obs, rew, dones, info["returned_episode"])

        return obs, jax.lax.scan(body, (obs, state), jax.random.split(key, 40))[1]

    obs0, (obs, rew, dones, returned) = run(jax.random.key(0))
    assert set(obs0) == {"first_0", "second_0"} and obs0["first_0"].shape == (3, 3, 2)
    assert set(dones) == {"first_0", "second_0", "__all__"}
    d = np.asarray(dones["__all__"])
    assert d.any()  # 40 legal moves finish several games
    np.testing.assert_array_equal(np.asarray(rew["first_0"]), -np.asarray(rew["second_0"]))  # zero-sum
    assert np.all(np.asarray(rew["first_0"])[~d] == 0)  # rewards only at the end
    np.testing.assert_array_equal(np.asarray(obs["first_0"])[d], 0)  # auto-reset: empty board
    assert np.asarray(returned)[d].all()


def test_to_jaxmarl_matches_autoreset_prisoners_dilemma():
    game = jaxagents.make("prisoners_dilemma")
    view, auto = to_jaxmarl(game), AutoReset(game)
    assert view.agents == [f"{r}_0" for r in game.roles]

    @jit
    def run(key):
        obs, vst = view.reset(key)
        s, ts = auto.reset(key)

        def body(c, k):
            vst, s = c
            k_a, k_s = jax.random.split(k)
            acts = {r: jax.random.randint(kk, (1,), 0, 2) for kk, r in zip(jax.random.split(k_a), game.roles)}
            obs, vst, rew, dones, info = view.step(k_s, vst, {f"{r}_0": a[0] for r, a in acts.items()})
            s, ts = auto.step(k_s, s, acts)
            return (vst, s), (obs, rew, dones, info, ts)

        return jax.lax.scan(body, (vst, s), jax.random.split(key, 25))[1]

    obs, rew, dones, info, ts = run(jax.random.key(0))
    for r in game.roles:
        close(obs[f"{r}_0"], ts.obs[r][:, 0])
        close(rew[f"{r}_0"], ts.reward[r][:, 0])
    np.testing.assert_array_equal(dones["__all__"], ts.done)
    np.testing.assert_array_equal(info["truncated"], ts.truncated)
    assert np.asarray(dones["__all__"]).sum() == 2  # horizon 10


_WITHOUT_JAXMARL = """
import sys
import jaxagents.compat as compat
assert "jaxmarl" not in sys.modules, "importing jaxagents.compat imported jaxmarl"
sys.modules["jaxmarl"] = None  # from here on `import jaxmarl...` raises ImportError
import jax, jaxagents
view = compat.to_jaxmarl(jaxagents.make("prisoners_dilemma"))
assert isinstance(view.action_space(view.agents[0]), jaxagents.Discrete)  # our spaces
obs, state = view.reset(jax.random.key(0))
obs, state, rew, dones, info = view.step(jax.random.key(1), state, {a: 0 for a in view.agents})
assert set(dones) == set(view.agents) | {"__all__"}
try:
    compat.from_jaxmarl(object())
except TypeError:
    pass
else:
    raise AssertionError("from_jaxmarl(object()) did not raise")
"""


def test_jaxmarl_stays_optional():
    # A fresh interpreter: importing jaxagents.compat does not import jaxmarl, and
    # to_jaxmarl works (with jaxagents spaces) where jaxmarl cannot be imported.
    subprocess.run([sys.executable, "-c", _WITHOUT_JAXMARL], check=True, env={**os.environ, "JAX_PLATFORMS": "cpu"})
