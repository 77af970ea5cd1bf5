"""Grid level-based foraging against ``lbforaging`` 2.0.0, plus invariants and errors.

One jitted, vmapped ``lax.scan`` per configuration records hundreds of episodes from
our resets with random actions (load taken half the time it is legal, otherwise
uniform over all six ids, invalid ones included) and per-episode random params
(penalty, normalisation, cooperative foods, automatic food levels, shared reward,
level ranges). The host then writes each start state into a ``ForagingEnv`` and
replays the actions: positions, food, rewards, done flags, valid actions and the
vector and grid observations must agree at every step.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from jaxagents_environments.robots.grid_lbf import LOAD, LevelBasedForaging

N_EPISODES = 200
# Non-square, partial observability (the reference's window quirks near the border).
CONFIG = dict(num_agents=4, field_size=(6, 7), max_num_food=3, sight=2, horizon=30)
# Square, full observability, the registered id's horizon.
SLOW_CONFIG = dict(num_agents=5, field_size=8, max_num_food=4, horizon=50)


def _random_params(env: LevelBasedForaging, rng: np.random.Generator, count: int):
    n, f = env.n, env.num_food
    lo = rng.integers(1, 3, (count, n))
    hi = np.minimum(lo + rng.integers(0, 2, (count, n)), env.player_level_cap)
    flo = rng.integers(1, 3, (count, f))
    fhi = np.minimum(flo + rng.integers(0, 3, (count, f)), env.food_level_cap)
    p = env.default_params()
    return p.replace(
        min_player_level=jnp.asarray(lo, jnp.int32), max_player_level=jnp.asarray(hi, jnp.int32),
        min_food_level=jnp.asarray(flo, jnp.int32), max_food_level=jnp.asarray(fhi, jnp.int32),
        auto_food_level=jnp.asarray(rng.random(count) < 0.5), force_coop=jnp.asarray(rng.random(count) < 0.3),
        normalize_reward=jnp.asarray(rng.random(count) < 0.7),
        penalty=jnp.asarray(np.where(rng.random(count) < 0.5, 0.0, 0.25), jnp.float32),
        shared_reward=jnp.asarray(rng.random(count) < 0.3), horizon=jnp.full((count,), p.horizon),
    )


def _policy(key, ts):
    """Load half the time it is legal; otherwise uniform over the six ids (invalid ones
    included) and, 5% of the time, an out-of-range id (-2..9)."""
    mask = ts.action_mask["player"]
    k1, k2, k3 = jax.random.split(key, 3)
    u = jax.random.uniform(k1, mask.shape[:1])
    wild = jax.random.randint(k3, mask.shape[:1], -2, 10)
    act = jnp.where(u > 0.95, wild, jax.random.randint(k2, mask.shape[:1], 0, 6))
    return jnp.where(mask[:, LOAD] & (u < 0.5), LOAD, act)


class Recorded:
    def __init__(self, kwargs, n_episodes=N_EPISODES):
        self.env = env = LevelBasedForaging(max_player_level=3, **kwargs)
        self.params = _random_params(env, np.random.default_rng(0), n_episodes)
        steps = self.horizon = kwargs["horizon"]

        def episode(key, params):
            k0, k1 = jax.random.split(key)
            state, ts = env.reset(k0, params)

            def body(carry, k):
                state, ts = carry
                ka, ks = jax.random.split(k)
                act = {"player": _policy(ka, ts)}
                state, nts = env.step(ks, state, act, params)
                return (state, nts), (act["player"], state, nts)

            _, traj = jax.lax.scan(body, (state, ts), jax.random.split(k1, steps))
            return state, ts, traj

        run = jax.jit(jax.vmap(episode))
        keys = jax.random.split(jax.random.key(1), n_episodes)
        self.s0, self.ts0, (self.acts, self.states, self.ts) = jax.device_get(run(keys, self.params))
        self.params = jax.device_get(self.params)
        # the grid observation and the level-free vector observation of the same states
        grid_env = LevelBasedForaging(max_player_level=3, **{**kwargs, "obs_type": "grid"})
        nolvl_env = LevelBasedForaging(max_player_level=3, **{**kwargs, "observe_agent_levels": False})
        both = jax.jit(jax.vmap(jax.vmap(
            lambda s: (grid_env.grid_obs(s), nolvl_env.vector_obs(s), env.field(s), env.global_obs(s)))))
        self.grid_obs, self.nolvl_obs, self.fields, self.global_obs = jax.device_get(both(self.states))
        self.grid_space = grid_env.roles["player"].observation_space
        self.field0 = jax.device_get(jax.jit(jax.vmap(env.field))(self.s0))


@pytest.fixture(scope="module")
def rec():
    return Recorded(CONFIG)


def _take(tree, *idx):
    return jax.tree_util.tree_map(lambda x: x[idx], tree)


def _reference(env: LevelBasedForaging, grid: bool, levels: bool = True):
    import gymnasium as gym
    from lbforaging.foraging.environment import ForagingEnv

    ref = ForagingEnv(
        players=env.n, min_player_level=1, max_player_level=3, min_food_level=1, max_food_level=None,
        field_size=(env.rows, env.cols), max_num_food=env.num_food, sight=env.sight, max_episode_steps=50,
        force_coop=False, grid_observation=False, observe_agent_levels=levels,
    )
    # Two defects of the reference's spaces, not of its dynamics: with gymnasium >= 1.0
    # its grid space does not construct (a Box given shape=[3] for [3, w, w] bounds),
    # and its vector space swaps rows and cols, so non-square grids fail its own check.
    ref._grid_observation = grid
    w = 2 * env.sight + 1
    shape = (3, w, w) if grid else ref.observation_space[0].shape
    ref.observation_space = gym.spaces.Tuple([gym.spaces.Box(-np.inf, np.inf, shape, np.float32)] * env.n)
    return ref


def _write(ref, env, s, field, params=None, t=0):
    """Write our (numpy, unbatched) state into the reference."""
    for p, pos, lvl in zip(ref.players, s.pos, s.level):
        p.setup((int(pos[0]), int(pos[1])), int(lvl), (env.rows, env.cols))
    ref.field = np.array(field)
    ref.current_step = t
    ref._game_over = False
    if params is not None:
        ref._food_spawned = float(s.food_spawned)
        ref.penalty = float(params.penalty)
        ref._normalize_reward = bool(params.normalize_reward)
        ref._max_episode_steps = int(params.horizon)
    ref._gen_valid_moves()


def _ref_mask(ref):
    from lbforaging.foraging.environment import Action

    return np.array([[Action(a) in ref._valid_actions[p] for a in range(6)] for p in ref.players])


def test_step_for_step_against_lbforaging(rec):
    """Replay every episode in the reference from our start state, to its end. Ids out
    of range go to the reference as none (our documented effect; it would raise)."""
    _step_for_step(rec)


@pytest.mark.slow
def test_full_observability_against_lbforaging():
    rec = Recorded(SLOW_CONFIG, n_episodes=500)
    _step_for_step(rec, coverage=False)
    _grid_and_levelless(rec)


def _step_for_step(rec, coverage=True):
    pytest.importorskip("lbforaging")
    env = rec.env
    ref = _reference(env, grid=False)
    E, T, n = rec.acts.shape
    live = np.zeros((E, T), bool)  # steps up to and including the first done
    pos, field = np.zeros((E, T, n, 2), int), np.zeros((E, T, env.rows, env.cols), int)
    rew, done, obs = np.zeros((E, T, n)), np.zeros((E, T), bool), np.zeros(rec.ts.obs["player"].shape, np.float32)
    mask = np.zeros(rec.ts.action_mask["player"].shape, bool)
    for e in range(E):
        params = _take(rec.params, e)
        _write(ref, env, _take(rec.s0, e), rec.field0[e], params)
        np.testing.assert_array_equal(np.stack(ref._make_gym_obs()), rec.ts0.obs["player"][e])
        np.testing.assert_array_equal(_ref_mask(ref), rec.ts0.action_mask["player"][e])
        for t in range(T):
            acts = [int(a) if 0 <= a < 6 else 0 for a in rec.acts[e, t]]
            o, r, d, trunc, _ = ref.step(acts)
            assert not trunc
            live[e, t], done[e, t], obs[e, t], mask[e, t] = True, d, np.stack(o), _ref_mask(ref)
            pos[e, t], field[e, t] = [p.position for p in ref.players], ref.field
            rew[e, t] = np.sum(r) if params.shared_reward else r
            if d:
                break
    ts = rec.ts
    np.testing.assert_array_equal(pos[live], rec.states.pos[live])
    np.testing.assert_array_equal(field[live], rec.fields[live])
    np.testing.assert_allclose(rew[live], ts.reward["player"][live], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(done[live], (ts.terminated | ts.truncated)[live])
    np.testing.assert_array_equal(ts.terminated[live], (field[live].sum((-1, -2)) == 0))
    np.testing.assert_array_equal(obs[live], ts.obs["player"][live])
    np.testing.assert_array_equal(mask[live], ts.action_mask["player"][live])
    wild = (rec.acts < 0) | (rec.acts >= 6)
    np.testing.assert_array_equal(ts.info["illegal_action"][wild], True)
    if not coverage:
        return
    # the random play covered the interesting cases
    shared_cell = np.array([len({tuple(p) for p in ps}) < n for ps in rec.states.pos[live]])
    failed_loads = np.any((rew[live] < 0), -1)
    assert live.sum() > 4000 and ts.info["food_collected"][live].sum() > 150, live.sum()
    assert shared_cell.sum() > 0 and failed_loads.sum() > 20 and wild[live].sum() > 100


def test_grid_and_levelless_observations_match_lbforaging(rec):
    _grid_and_levelless(rec)


def _grid_and_levelless(rec):
    pytest.importorskip("lbforaging")
    env = rec.env
    ref_grid = _reference(env, grid=True)
    ref_nolvl = _reference(env, grid=False, levels=False)
    for e in range(0, rec.acts.shape[0], 4):
        for t in range(0, rec.acts.shape[1], 3):
            s = _take(rec.states, e, t)
            for ref in (ref_grid, ref_nolvl):
                _write(ref, env, s, rec.fields[e, t])
            np.testing.assert_array_equal(np.stack(ref_grid._make_gym_obs()), rec.grid_obs[e, t])
            np.testing.assert_array_equal(np.stack(ref_nolvl._make_gym_obs()), rec.nolvl_obs[e, t])


def test_rewards_sum_to_one_per_food_and_groups_load_together(rec):
    """Normalised rewards of an eaten food sum to ``level / food_spawned``; unnormalised
    ones are ``level_i * food_level`` (checked on the recorded episodes)."""
    env = rec.env
    fl_before = np.concatenate([rec.s0.food_level[:, None], rec.states.food_level[:, :-1]], 1)
    eaten = (fl_before > 0) & (rec.states.food_level == 0)  # [E, T, F]
    gained = np.sum(fl_before * eaten, -1) / rec.s0.food_spawned[:, None]
    pen0 = (rec.params.penalty == 0) & rec.params.normalize_reward & ~rec.params.shared_reward
    total = rec.ts.reward["player"].sum(-1)
    np.testing.assert_allclose(total[pen0], gained[pen0], rtol=1e-5, atol=1e-6)


RESET_CONFIG = dict(num_agents=5, field_size=6, max_num_food=3, max_player_level=3)


@pytest.fixture(scope="module")
def resets():
    """256 resets of a crowded 6x6 grid (not every food always fits) in one call."""
    env = LevelBasedForaging(**RESET_CONFIG)
    run = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))
    return env, lambda seed, params: jax.device_get(run(jax.random.split(jax.random.key(seed), 256), params))


def test_reset_distribution_against_lbforaging(resets):
    """Mean player level, food level and food count, ours (512 resets) vs the
    reference's (300), within 4 standard errors (fixed seeds: deterministic)."""
    pytest.importorskip("lbforaging")
    from lbforaging.foraging.environment import ForagingEnv

    env, reset = resets
    s = [reset(i, env.default_params())[0] for i in range(2)]
    s = jax.tree_util.tree_map(lambda *x: np.concatenate(x), *s)
    ref = ForagingEnv(players=5, min_player_level=1, max_player_level=3, min_food_level=1, max_food_level=None,
                      field_size=(6, 6), max_num_food=3, sight=6, max_episode_steps=50, force_coop=False)
    ref_levels, ref_foods, ref_food_levels = [], [], []
    for i in range(300):
        ref.reset(seed=i)
        ref_levels += [p.level for p in ref.players]
        ref_foods.append(np.count_nonzero(ref.field))
        ref_food_levels += list(ref.field[ref.field > 0])
    for a, b in ((s.level.ravel(), ref_levels), (s.food_level[s.food_level > 0], ref_food_levels),
                 ((s.food_level > 0).sum(-1), ref_foods)):
        a, b = np.asarray(a, float), np.asarray(b, float)
        se = np.sqrt(a.var() / a.size + b.var() / b.size) + 1e-9
        assert abs(a.mean() - b.mean()) < 4 * se + 1e-6, (a.mean(), b.mean())


def test_invariants_of_recorded_play(rec):
    """Over all recorded steps (finished episodes keep stepping): foods never move and
    only disappear, players never stand on food, move at most one cell and only by a
    legal move, rewards are positive only for loaders."""
    s, a = rec.states, rec.acts
    prev = jax.tree_util.tree_map(lambda x0, x: np.concatenate([x0[:, None], x[:, :-1]], 1), rec.s0, s)
    mask = np.concatenate([rec.ts0.action_mask["player"][:, None], rec.ts.action_mask["player"][:, :-1]], 1)
    assert np.all(s.food_pos == prev.food_pos) and np.all((s.food_level == prev.food_level) | (s.food_level == 0))
    food_cells = np.where((s.food_level > 0)[..., None], s.food_pos, -9)
    assert not np.any(np.all(s.pos[..., :, None, :] == food_cells[..., None, :, :], -1))
    assert np.all(s.level == prev.level)
    step = np.abs(s.pos - prev.pos).sum(-1)
    ok = (a >= 0) & (a < 6)
    legal = ok & np.take_along_axis(mask, np.clip(a, 0, 5)[..., None], -1)[..., 0]
    assert np.all(step <= 1) and np.all((step == 0) | (legal & (a >= 1) & (a <= 4)))
    np.testing.assert_array_equal(rec.ts.info["illegal_action"], ~legal)
    r = rec.ts.reward["player"]
    shared = rec.params.shared_reward[:, None, None]
    assert np.all(shared | (r <= 0) | (a == LOAD))
    assert np.all(r >= -rec.params.penalty[:, None, None] * np.where(shared, rec.env.n, 1) - 1e-6)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), lo=st.lists(st.integers(1, 3), min_size=5, max_size=5),
       coop=st.booleans(), auto=st.booleans())
def test_reset_invariants(resets, seed, lo, coop, auto):
    """Players on distinct cells with levels from the shuffled ranges; foods on interior
    cells, spaced, off the players, with levels in range (256 resets per example)."""
    env, reset = resets
    lo = np.asarray(lo, np.int32)
    p = env.default_params().replace(min_player_level=jnp.asarray(lo), max_player_level=jnp.full(5, 3, jnp.int32),
                                     force_coop=jnp.asarray(coop), auto_food_level=jnp.asarray(auto),
                                     max_food_level=jnp.full(3, 5, jnp.int32))
    s, ts = reset(seed, p)
    off = ~np.eye(env.n, dtype=bool)
    assert not np.any(np.all(s.pos[:, :, None] == s.pos[:, None], -1) & off)
    # some matching of players to the ranges fits (Hall's condition on sorted values)
    assert np.all(np.sort(s.level, -1) >= np.sort(lo)) and np.all(s.level <= 3)
    alive = s.food_level > 0
    assert np.all(alive[:, 0]), "the first food always fits"
    assert np.all(~alive[..., None] | ((s.food_pos >= 1) & (s.food_pos <= 4)))
    on_player = np.all(s.food_pos[:, :, None] == s.pos[:, None], -1).any(-1)
    assert not np.any(alive & on_player)
    d = np.abs(s.food_pos[:, :, None] - s.food_pos[:, None])
    near = (d.max(-1) <= 1) | ((d.min(-1) == 0) & (d.max(-1) <= 2))
    pair = alive[:, :, None] & alive[:, None] & ~np.eye(env.num_food, dtype=bool)
    assert not np.any(near & pair)
    hi = np.sort(s.level, -1)[:, :3].sum(-1, keepdims=True) if auto else 5
    assert np.all(~alive | (s.food_level <= hi)) and (not coop or np.all(~alive | (s.food_level == hi)))
    assert np.all(s.food_spawned == s.food_level.sum(-1))
    assert bool(env.roles["player"].observation_space.contains(ts.obs["player"], (256, env.n)))


def test_global_obs_and_spaces(rec):
    env, g, h = rec.env, rec.global_obs, rec.horizon
    assert g.shape == rec.acts.shape[:2] + env.global_obs_shape and g.dtype == np.float32
    # foods (eaten: -1, -1, 0), then players, then t / horizon, in state order
    f = g[..., :3 * env.num_food].reshape(*g.shape[:2], env.num_food, 3)
    alive = rec.states.food_level > 0
    np.testing.assert_array_equal(f[..., 2], rec.states.food_level)
    np.testing.assert_array_equal(f[..., :2][alive], rec.states.food_pos[alive])
    assert np.all(f[..., :2][~alive] == -1)
    np.testing.assert_array_equal(g[..., 3 * env.num_food:-1].reshape(*g.shape[:2], env.n, 3)[..., :2], rec.states.pos)
    np.testing.assert_allclose(g[..., -1], rec.states.t / h)
    batch = rec.acts.shape[:2] + (env.n,)
    assert bool(env.roles["player"].observation_space.contains(rec.ts.obs["player"], batch))
    assert rec.grid_space.shape == (3, 5, 5) and bool(rec.grid_space.contains(rec.grid_obs, batch))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(field_size=2), "field_size rows"),
        (dict(field_size=(5, 2)), "field_size cols"),
        (dict(num_agents=0), "num_agents"),
        (dict(num_agents=10, field_size=3), "num_agents"),
        (dict(max_num_food=0), "max_num_food"),
        (dict(sight=0), "sight"),
        (dict(obs_type="image"), "obs_type"),
        (dict(min_player_level=3, max_player_level=2), "min_player_level"),
        (dict(max_player_level=[1, 2, 3]), "max_player_level"),
        (dict(min_food_level=3, max_food_level=2), "min_food_level"),
        (dict(penalty=-1.0), "penalty"),
        (dict(horizon=0), "horizon"),
    ],
)
def test_bad_constructor_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        LevelBasedForaging(**kwargs)


def test_bad_params():
    env = LevelBasedForaging()
    p = env.default_params()
    for bad, match in [
        (p.replace(horizon=jnp.int32(0)), "horizon"),
        (p.replace(penalty=jnp.float32(-0.1)), "penalty"),
        (p.replace(max_player_level=jnp.array([1, 9], jnp.int32)), "max_player_level"),
        (p.replace(min_player_level=jnp.array([2, 2], jnp.int32), max_player_level=jnp.array([1, 2], jnp.int32)),
         "min_player_level"),
        (p.replace(min_food_level=jnp.array([1, 2, 3], jnp.int32)), "min_food_level"),
    ]:
        with pytest.raises(ValueError, match=match):
            env.reset(jax.random.key(0), bad)
