"""Grid RWARE against ``rware`` 2.0.0, plus the conflict resolution on its own.

One jitted, vmapped ``lax.scan`` records hundreds of episodes on a dense custom
layout (8 robots, two thirds of the shelves requested) with random actions (forward
favoured, 3% out-of-range ids) and per-episode random params (reward type, coordinate
normalisation, inactivity limit). Half the episodes start from our resets, half from
random mid-game states built on the host (robots on corridors carrying shelves, some
with a pending two-stage reward), so that pickups, drops and deliveries are frequent.
The host writes each start state into a ``Warehouse`` and replays the actions:
positions, headings, loads, shelves, rewards and done flags must agree at every step.

Two things are pinned in the reference, neither part of its rules: (1) the tie between
equally long chains claiming one free cell, which it breaks by CPython's set order (we
give it to the lower agent index; ``dag_longest_path`` is fed the component with its
edges in agent order), and (2) the random replacement of a delivered request: its
``np_random.choice`` returns the shelf we drew (``info["new_requests"]``), which must
be one of the candidates it offers.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxagents_environments.robots.grid_rware import RobotWarehouse, RWAREState, make_layout, parse_layout
from jaxagents_environments.robots.grid_rware_moves import resolve_moves

LAYOUT = """
........
.xx..xx.
.xx..xx.
........
.xx..xx.
........
...gg...
"""
CONFIG = dict(num_agents=8, layout=LAYOUT, request_queue_size=8, horizon=30)
# the registered defaults' parametric layout (two shelf rows), a wider sensor range
SLOW_CONFIG = dict(num_agents=6, shelf_rows=2, request_queue_size=6, sensor_range=2, horizon=60)
N_EPISODES = 200
P_ACTIONS = np.array([0.1, 0.4, 0.15, 0.15, 0.2])


def _random_states(env: RobotWarehouse, rng: np.random.Generator, count: int):
    """Mid-game states: half the robots carry a shelf (mostly a requested one) on a
    corridor cell of the two bottom rows, next to the goals."""
    n, s = env.n, env.num_shelves
    corridor = np.flatnonzero(env.highway.reshape(-1))
    corridor = corridor[corridor >= (env.height - 2) * env.width]
    out = {k: [] for k in ("pos", "dir", "carrying", "has_delivered", "shelf_pos", "queue")}
    for _ in range(count):
        loaded = rng.random(n) < 0.5
        pos = np.empty(n, np.int32)
        pos[loaded] = rng.choice(corridor, loaded.sum(), replace=False)
        free = np.setdiff1d(np.arange(env.height * env.width), pos[loaded])
        pos[~loaded] = rng.choice(free, (~loaded).sum(), replace=False)
        queue = rng.choice(s, env.queue_size, replace=False)
        carrying = np.full(n, -1, np.int32)
        carrying[loaded] = rng.choice(s, loaded.sum(), replace=False)
        shelf_pos = env.shelf_cells.copy()
        shelf_pos[carrying[loaded]] = pos[loaded]
        out["pos"].append(pos)
        out["dir"].append(np.where(rng.random(n) < 0.5, 1, rng.integers(0, 4, n)))  # mostly facing down
        out["carrying"].append(carrying)
        out["has_delivered"].append(loaded & (rng.random(n) < 0.5))
        out["shelf_pos"].append(shelf_pos)
        out["queue"].append(queue)
    return {k: jnp.asarray(np.stack(v)) for k, v in out.items()}


class Recorded:
    def __init__(self, config, e=N_EPISODES):
        self.config, self.horizon = config, config["horizon"]
        self.env = env = RobotWarehouse(**config)
        rng = np.random.default_rng(0)
        p = env.default_params()
        self.params = p.replace(
            horizon=jnp.full(e, self.horizon, jnp.int32),
            max_inactivity_steps=jnp.asarray(np.where(rng.random(e) < 0.3, 12, 0), jnp.int32),
            reward_type=jnp.asarray(rng.integers(0, 3, e), jnp.int32),
            normalised_coordinates=jnp.asarray(rng.random(e) < 0.3),
            random_tie_break=jnp.zeros(e, bool),
        )
        given = _random_states(env, rng, e)
        use_given = jnp.arange(e) % 2 == 1
        probs = jnp.log(jnp.asarray(P_ACTIONS))

        def episode(key, params, given, use_given):
            k0, k1 = jax.random.split(key)
            state, _ = env.reset(k0, params)
            state = state.replace(**{k: jnp.where(use_given, v, getattr(state, k)) for k, v in given.items()})

            def body(state, k):
                ka, kb, kc, ks = jax.random.split(k, 4)
                act = jax.random.categorical(ka, probs, shape=(env.n,))
                wild = jax.random.randint(kb, (env.n,), -2, 8)
                act = jnp.where(jax.random.uniform(kc, (env.n,)) < 0.03, wild, act).astype(jnp.int32)
                nstate, nts = env.step(ks, state, {"robot": act}, params)
                return nstate, (act, nstate, nts)

            _, traj = jax.lax.scan(body, state, jax.random.split(k1, self.horizon))
            return state, traj

        run = jax.jit(jax.vmap(episode))
        out = run(jax.random.split(jax.random.key(0), e), self.params, given, use_given)
        self.s0, (self.acts, self.states, self.ts) = jax.device_get(out)
        self.params = jax.device_get(self.params)
        img = RobotWarehouse(**config, obs_type="image")
        img_nd = RobotWarehouse(**config, obs_type="image", image_directional=False)
        both = jax.jit(jax.vmap(jax.vmap(lambda s: (img.image_obs(s), img_nd.image_obs(s), env.global_obs(s)))))
        self.img, self.img_nd, self.global_obs = jax.device_get(both(self.states))
        self.img_space = img.roles["robot"].observation_space


@pytest.fixture(scope="module")
def rec():
    return Recorded(CONFIG)


def _take(tree, *idx):
    return jax.tree_util.tree_map(lambda x: x[idx], tree)


def _reference(rec, obs_type=None, directional=True):
    from rware.warehouse import ObservationType, RewardType, Warehouse

    c, env = rec.config, rec.env
    ref = Warehouse(c.get("shelf_columns", 3), c.get("column_height", 8), c.get("shelf_rows", 1), env.n, 0,
                    env.sensor_range, env.queue_size, None, rec.horizon, RewardType.INDIVIDUAL,
                    layout=c.get("layout"), observation_type=obs_type or ObservationType.FLATTENED,
                    image_observation_directional=directional)
    ref.reset(seed=0)
    return ref


def _write(ref, env, s, params=None):
    """Write our (numpy, unbatched) state into the reference."""
    from rware.warehouse import Direction, RewardType

    w = env.width
    for shelf, cell in zip(ref.shelfs, s.shelf_pos):
        shelf.y, shelf.x = divmod(int(cell), w)
    for agent, cell, d, c, hd in zip(ref.agents, s.pos, s.dir, s.carrying, s.has_delivered):
        agent.y, agent.x = divmod(int(cell), w)
        agent.dir = Direction(int(d))
        agent.carrying_shelf = ref.shelfs[c] if c >= 0 else None
        agent.has_delivered = bool(hd)
    ref.request_queue = [ref.shelfs[q] for q in s.queue]
    ref._recalc_grid()
    if params is not None:
        ref._cur_steps = int(s.t)
        ref._cur_inactive_steps = int(s.inactive)
        ref.reward_type = RewardType(int(params.reward_type))
        ref.max_inactivity_steps = int(params.max_inactivity_steps) or None
        ref.normalised_coordinates = bool(params.normalised_coordinates)


def _lowest_index_wins(ref, original):
    """``dag_longest_path`` on the component with its edges in agent order, so equally
    long chains resolve to the lowest agent index (what our env does)."""
    import networkx as nx

    def patched(comp, *args, **kwargs):
        agent = lambda node: ref.grid[0, node[1], node[0]]
        ordered = nx.DiGraph()
        ordered.add_nodes_from(comp.nodes)
        ordered.add_edges_from(sorted(comp.edges, key=lambda e: agent(e[0])))
        return original(ordered, *args, **kwargs)

    return patched


def _ref_state(ref, w):
    pos = [a.y * w + a.x for a in ref.agents]
    carrying = [a.carrying_shelf.id - 1 if a.carrying_shelf else -1 for a in ref.agents]
    return (pos, [a.dir.value for a in ref.agents], carrying,
            [s.y * w + s.x for s in ref.shelfs], [s.id - 1 for s in ref.request_queue])


class _Draws:
    """Stands in for the reference's ``np_random``: ``choice`` returns our draws in order."""

    draws: list = []

    def choice(self, candidates):
        shelf = self.draws.pop(0)
        assert shelf in candidates, "our new request is not one the reference could draw"
        return shelf


def test_step_for_step_against_rware(rec, monkeypatch):
    _step_for_step(rec, monkeypatch)


def _step_for_step(rec, monkeypatch, coverage=True):
    pytest.importorskip("rware")
    import networkx as nx

    env = rec.env
    ref = _reference(rec)
    monkeypatch.setattr(nx.algorithms, "dag_longest_path", _lowest_index_wins(ref, nx.algorithms.dag_longest_path))
    monkeypatch.setattr(ref, "_make_obs", lambda agent: None)  # observations: next test
    rng = _Draws()
    monkeypatch.setattr(ref, "_np_random", rng)
    E, T, n = rec.acts.shape
    live = np.zeros((E, T), bool)
    pos, dirs, carry = (np.zeros((E, T, n), int) for _ in range(3))
    queue = np.zeros((E, T, env.queue_size), int)
    shelves = np.zeros((E, T, env.num_shelves), int)
    rew, done = np.zeros((E, T, n)), np.zeros((E, T), bool)
    for e in range(E):
        _write(ref, env, _take(rec.s0, e), _take(rec.params, e))
        for t in range(T):
            rng.draws = [ref.shelfs[i] for i in rec.ts.info["new_requests"][e, t] if i >= 0]
            _, r, d, trunc, _ = ref.step([int(a) if 0 <= a < 5 else 0 for a in rec.acts[e, t]])
            assert not trunc and not rng.draws, f"episode {e} step {t}: deliveries differ"
            live[e, t], done[e, t], rew[e, t] = True, d, r
            pos[e, t], dirs[e, t], carry[e, t], shelves[e, t], queue[e, t] = _ref_state(ref, env.width)
            if d:
                break
    s, ts = rec.states, rec.ts
    for name, got, want in (("pos", pos, s.pos), ("dir", dirs, s.dir), ("carrying", carry, s.carrying),
                            ("shelf_pos", shelves, s.shelf_pos), ("queue", queue, s.queue)):
        np.testing.assert_array_equal(got[live], want[live], err_msg=name)
    np.testing.assert_allclose(rew[live], ts.reward["robot"][live], atol=1e-6)
    np.testing.assert_array_equal(done[live], ts.truncated[live])
    assert not ts.terminated.any()
    a = rec.acts
    wild = (a < 0) | (a >= 5)
    np.testing.assert_array_equal(ts.info["illegal_action"], wild)
    if not coverage:
        return
    # the random play covered the interesting cases
    moved = (s.pos != np.concatenate([rec.s0.pos[:, None], s.pos[:, :-1]], 1))
    blocked = (a == 1) & ~moved
    deliveries = ts.info["deliveries"][live].sum()
    drops_paid = ((rew[live] == 0.5).sum(-1) > 0).sum()
    assert live.sum() > 4000 and deliveries > 60 and drops_paid > 10 and blocked[live].sum() > 1000, (
        live.sum(), deliveries, drops_paid, blocked[live].sum())
    wild = (a < 0) | (a >= 5)
    np.testing.assert_array_equal(ts.info["illegal_action"], wild)


def test_observations_match_rware(rec):
    """Vector, image and non-directional image observations of every 3rd recorded state."""
    assert _observations(rec) > 400


@pytest.mark.heavy
def test_registered_layout_against_rware(monkeypatch):
    rec = Recorded(SLOW_CONFIG, e=400)
    _step_for_step(rec, monkeypatch, coverage=False)
    _observations(rec)


def _observations(rec):
    pytest.importorskip("rware")
    from rware.warehouse import ObservationType

    env = rec.env
    refs = (_reference(rec), _reference(rec, ObservationType.IMAGE), _reference(rec, ObservationType.IMAGE, False))
    ours = (rec.ts.obs["robot"], rec.img, rec.img_nd)
    checked = 0
    for e in range(0, rec.acts.shape[0], 3):
        params = _take(rec.params, e)
        for t in range(0, rec.horizon, 4):
            s = _take(rec.states, e, t)
            for ref, want in zip(refs, ours):
                _write(ref, env, s, params)
                got = np.stack([ref._make_obs(agent) for agent in ref.agents])
                np.testing.assert_allclose(got, want[e, t], atol=1e-6, err_msg=f"episode {e} step {t}")
            checked += 1
    return checked


def _reference_resolution(pos, target):
    """The reference's graph resolution (``Warehouse.step``), ties to the lowest index."""
    import networkx as nx

    agent_at = {int(p): i for i, p in enumerate(pos)}
    g = nx.DiGraph()
    for p, q in zip(pos, target):
        g.add_edge(int(p), int(q))
    committed = set()
    for comp in (g.subgraph(c).copy() for c in nx.weakly_connected_components(g)):
        try:
            cycle = nx.find_cycle(comp)
            if len(cycle) != 2:
                committed |= {agent_at[u] for u, _ in cycle}
        except nx.NetworkXNoCycle:
            ordered = nx.DiGraph()
            ordered.add_nodes_from(comp.nodes)
            ordered.add_edges_from(sorted(comp.edges, key=lambda e: agent_at[e[0]]))
            committed |= {agent_at[v] for v in nx.dag_longest_path(ordered) if v in agent_at}
    return np.array([i in committed for i in range(len(pos))])


def test_resolution_on_random_graphs():
    """Arbitrary targets (not only grid neighbours: odd cycles, long chains, many ties)."""
    pytest.importorskip("networkx")
    n, cells = 10, 24
    rng = np.random.default_rng(n)
    batch = 400
    pos = np.stack([rng.choice(cells, n, replace=False) for _ in range(batch)]).astype(np.int32)
    stay = rng.random((batch, n)) < 0.2
    target = np.where(stay, pos, rng.integers(0, cells, (batch, n))).astype(np.int32)
    # half the batch: targets among the occupied cells (cycles, swaps, chains)
    occupied = np.take_along_axis(pos, rng.integers(0, n, (batch, n)), 1)
    target[: batch // 2] = np.where(stay, pos, occupied)[: batch // 2]
    prio = np.broadcast_to(n - 1 - np.arange(n, dtype=np.int32), (batch, n))
    got = np.asarray(jax.jit(jax.vmap(lambda p, t, r: resolve_moves(p, t, r, cells)))(pos, target, prio))
    for b in range(batch):
        np.testing.assert_array_equal(got[b], _reference_resolution(pos[b], target[b]), err_msg=f"case {b}")
    moved = got & (target != pos)
    for b in range(batch):  # and nobody shares a cell afterwards
        end = np.where(moved[b], target[b], pos[b])
        assert len(set(end.tolist())) == n


def test_random_tie_break_is_fair():
    """Two robots facing the same free cell: with ``random_tie_break`` each wins about
    half the time; without, the lower index always wins."""
    env = RobotWarehouse(num_agents=2, layout="x.x\n...\n.g.", request_queue_size=1)
    w = env.width
    state = RWAREState(pos=jnp.array([1 * w + 0, 1 * w + 2]), dir=jnp.array([3, 2]),  # right, left into (1, 1)
                       carrying=jnp.array([-1, -1]), has_delivered=jnp.zeros(2, bool),
                       shelf_pos=jnp.asarray(env.shelf_cells), queue=jnp.array([0]), t=jnp.int32(0),
                       inactive=jnp.int32(0))

    @jax.jit
    @jax.vmap
    def winners(key, random_tie):
        params = env.default_params().replace(random_tie_break=random_tie)
        s, _ = env.step(key, state, {"robot": jnp.array([1, 1])}, params)
        return s.pos == 1 * w + 1

    keys = jax.random.split(jax.random.key(1), 400)
    wins = np.asarray(winners(keys, jnp.arange(400) < 300))
    assert np.all(wins.sum(-1) == 1)
    assert 100 < wins[:300, 0].sum() < 200 and np.all(wins[300:, 0])


@pytest.mark.parametrize("cols, height, rows", [(1, 4, 2), (3, 8, 2), (5, 4, 3)])
def test_parametric_layout_matches_rware(cols, height, rows):
    pytest.importorskip("rware")
    from rware.warehouse import RewardType, Warehouse

    ref = Warehouse(cols, height, rows, 2, 0, 1, 2, None, 10, RewardType.INDIVIDUAL)
    highway, goals = make_layout(cols, height, rows)
    np.testing.assert_array_equal(highway, ref.highways.astype(bool))
    assert goals == [tuple(g) for g in ref.goals]
    env = RobotWarehouse(num_agents=2, shelf_columns=cols, column_height=height, shelf_rows=rows)
    ref.reset(seed=0)
    assert [s.y * env.width + s.x for s in ref.shelfs] == env.shelf_cells.tolist()
    assert env.roles["robot"].observation_space.shape == ref.observation_space[0].shape


def test_global_obs_and_spaces(rec):
    env, g = rec.env, rec.global_obs
    assert g.shape == rec.acts.shape[:2] + env.global_obs_shape
    # one robot and one heading per robot, every shelf, the requests where their shelves are
    assert np.all(g[:, :, 2].sum((-1, -2)) == env.n) and np.all(g[:, :, 4:8].sum((2, 3, 4)) == env.n)
    assert np.all(g[:, :, 0].sum((-1, -2)) == env.num_shelves)
    np.testing.assert_array_equal(g[:, :, 3].sum((-1, -2)), (rec.states.carrying >= 0).sum(-1))
    req_cells = np.take_along_axis(rec.states.shelf_pos, rec.states.queue, -1)
    assert np.all(np.take_along_axis(g[:, :, 1].reshape(*g.shape[:2], -1), req_cells, -1) == 1)
    for obs, space in ((rec.ts.obs["robot"], env.roles["robot"].observation_space), (rec.img, rec.img_space)):
        assert bool(space.contains(obs, obs.shape[:3]))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(num_agents=0), "num_agents"),
        (dict(shelf_columns=2), "shelf_columns"),
        (dict(column_height=0), "column_height"),
        (dict(request_queue_size=32), "request_queue_size"),
        (dict(sensor_range=-1), "sensor_range"),
        (dict(obs_type="dict"), "obs_type"),
        (dict(image_layers=("walls",)), "image_layers"),
        (dict(reward_type="team"), "reward_type"),
        (dict(horizon=-1), "horizon"),
        (dict(layout="x.\n.x"), "goal"),
        (dict(layout="x.g\n.x"), "rectangle"),
        (dict(layout="x.g\n.yz"), "only contain"),
        (dict(num_agents=7, layout="x.g\n..."), "num_agents"),
    ],
)
def test_bad_constructor_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        RobotWarehouse(**kwargs)


def test_bad_params():
    env = RobotWarehouse()
    p = env.default_params()
    for bad, match in [(p.replace(reward_type=jnp.int32(3)), "reward_type"),
                       (p.replace(horizon=jnp.int32(-1)), "horizon"),
                       (p.replace(max_inactivity_steps=jnp.int32(-2)), "max_inactivity_steps")]:
        with pytest.raises(ValueError, match=match):
            env.reset(jax.random.key(0), bad)


def test_parse_layout():
    highway, goals = parse_layout("x.x\n.g.")
    np.testing.assert_array_equal(highway, [[False, True, False], [True, True, True]])
    assert goals == [(1, 1)]
