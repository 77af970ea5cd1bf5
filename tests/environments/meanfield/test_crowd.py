"""Crowd modelling against OpenSpiel: flows, rewards, exact values, and the fictitious
play / mirror descent iterates of OpenSpiel's python MFG algorithms.

OpenSpiel's value functions cache player nodes by ``(x, t)``, which ignores the last
action and so the move cost that OpenSpiel charges at the *next* node: its
``NashConv``, best responses and mirror descent see the cost of whichever path first
reached ``(x, t)``. Hence three kinds of comparison:

* flows and rewards: directly on OpenSpiel's games (exact);
* values with the move cost: against an exact evaluation over OpenSpiel's own game
  states, cached by ``(state, last action)``;
* the algorithms: on the same game without move cost (OpenSpiel's 1-D state with the
  move cost removed; the 2-D game's ``only_distribution_reward``), where the caching
  is exact. OpenSpiel's ``MirrorDescent`` also reads its cumulative values while it
  updates them (the policy changes during its own evaluation); we compare with a copy
  of it that evaluates a snapshot of the policy, which is the algorithm as published.
"""

from __future__ import annotations

import ast
import collections

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxagents_environments.meanfield import CrowdModelling
from jaxagents_environments.meanfield.crowd import MOVES
from jaxagents_environments.meanfield import solvers

pyspiel = pytest.importorskip("pyspiel")
os_policy = pytest.importorskip("open_spiel.python.policy")
from open_spiel.python.mfg import value as os_value  # noqa: E402
from open_spiel.python.mfg.algorithms import distribution as os_distribution  # noqa: E402
from open_spiel.python.mfg.algorithms import fictitious_play, mirror_descent, nash_conv  # noqa: E402
from open_spiel.python.mfg.games import crowd_modelling as os_crowd  # noqa: E402
from open_spiel.python.mfg.games import crowd_modelling_2d as os_crowd_2d  # noqa: E402

DEFAULT = pyspiel.PlayerId.DEFAULT_PLAYER_ID
MOVES_2D = MOVES[2]
FP_ITERS = 3
# compiled once per environment and reused by every test
forward = jax.jit(solvers.forward, static_argnums=0)
evaluate = jax.jit(solvers.evaluate, static_argnums=0)
our_fictitious_play = jax.jit(solvers.fictitious_play, static_argnums=(0, 2))


class TablePolicy(os_policy.Policy):
    """Our ``pi[H, S, A]`` as an OpenSpiel policy (cells parsed from the state string)."""

    def __init__(self, game, table, size):
        super().__init__(game, [0])
        self.table, self.size = np.asarray(table, np.float64), size

    def action_probabilities(self, state, player_id=None):
        *xy, t = ast.literal_eval(str(state))
        cell = xy[0] if len(xy) == 1 else xy[0] * self.size + xy[1]
        return {a: float(self.table[t, cell, a]) for a in state.legal_actions()}


def openspiel_flow(game, policy, env):
    """``f64[H, S]`` OpenSpiel's distribution at the decision nodes of every time."""
    dist = os_distribution.DistributionPolicy(game, policy)
    out = np.zeros((env.horizon, env.num_states))
    for t in range(env.horizon):
        for cell in range(env.num_states):
            key = str((cell, t)) if env.dims == 1 else str((cell // env.size, cell % env.size, t))
            out[t, cell] = dist.value_str(key, 0.0)
    return out


def exact_exploitability(game, policy):
    """Best response minus policy value from OpenSpiel's states, cached by
    ``(state string, last action)`` (the last action decides the move cost)."""
    dist = os_distribution.DistributionPolicy(game, policy)
    memo = {}

    def value(s, best):
        key = (str(s), getattr(s, "_last_action", None), best)
        if key not in memo:
            if s.is_terminal():
                v = s.rewards()[0]
            elif s.current_player() == pyspiel.PlayerId.CHANCE:
                v = sum(p * value(s.child(a), best) for a, p in s.chance_outcomes())
            elif s.current_player() == pyspiel.PlayerId.MEAN_FIELD:
                c = s.clone()
                c.update_distribution([dist.value_str(x, 0.0) for x in s.distribution_support()])
                v = s.rewards()[0] + value(c, best)
            else:
                q = {a: value(s.child(a), best) for a in s.legal_actions()}
                probs = policy.action_probabilities(s)
                v = s.rewards()[0] + (max(q.values()) if best else sum(p * q[a] for a, p in probs.items()))
            memo[key] = v
        return memo[key]

    root = game.new_initial_state()
    return value(root, True) - value(root, False)


@pytest.fixture(scope="module")
def crowd():
    env = CrowdModelling(num_agents=16)
    return env, env.default_params()


@pytest.fixture(scope="module")
def fp_policy(crowd):
    env, params = crowd
    return np.asarray(our_fictitious_play(env, params, FP_ITERS).policy)


def test_flows_match_openspiel(crowd, fp_policy):
    env, params = crowd
    game = pyspiel.load_game("python_mfg_crowd_modelling")
    for table in (solvers.uniform_policy(env), fp_policy):
        ours = np.asarray(forward(env, params, table)[0][: env.horizon])
        np.testing.assert_allclose(ours, openspiel_flow(game, TablePolicy(game, table, env.size), env), atol=1e-6)


def test_rewards_match_openspiel_states(crowd):
    """Every (cell, last move) pair at t = 1 under the uniform flow: our reward of the
    move (charged at t = 0) plus our state reward at t = 1 equals OpenSpiel's t = 1 reward."""
    env, params = crowd
    game = pyspiel.load_game("python_mfg_crowd_modelling")
    mu = np.full(env.num_states, 1.0 / env.num_states)
    reward = jax.jit(env.reward)
    R0 = np.asarray(reward(jnp.asarray(mu)[:, None] * jnp.ones(3) / 3, jnp.asarray(mu), 0, params))
    R1 = np.asarray(reward(jnp.asarray(mu)[:, None] * jnp.ones(3) / 3, jnp.asarray(mu), 1, params))
    for x0 in range(env.size):
        for a in range(3):
            s = game.new_initial_state()
            s.apply_action(x0)
            assert s.rewards()[0] == pytest.approx(R0[x0, 1], abs=1e-5)  # t = 0, no previous move
            s.apply_action(a)
            s.apply_action(1)  # no noise
            s.update_distribution(list(mu))
            x1 = (x0 + a - 1) % env.size
            move_cost = R0[x0, 1] - R0[x0, a]
            assert s.rewards()[0] == pytest.approx(R1[x1, 1] - move_cost, abs=1e-5)


def test_exploitability_matches_exact_values_on_openspiel_states(crowd, fp_policy):
    env, params = crowd
    game = pyspiel.load_game("python_mfg_crowd_modelling")
    for table in (solvers.uniform_policy(env), fp_policy):
        ours = float(evaluate(env, params, table).exploitability)
        assert ours == pytest.approx(exact_exploitability(game, TablePolicy(game, table, env.size)), abs=1e-4)


# --------------------------------------------------------------------- the algorithms
POSITION = np.random.default_rng(0).normal(size=10)  # generic: no ties in the greedy best responses


class _NoMoveCostState(os_crowd.MFGCrowdModellingState):
    def _rewards(self):
        if self._player_id == DEFAULT:
            return POSITION[self.x] - np.log(self._distribution[self.x] + os_crowd._EPSILON)
        return 0.0


class _NoMoveCostGame(os_crowd.MFGCrowdModellingGame):
    def new_initial_state(self):
        return _NoMoveCostState(self)


class _SnapshotMirrorDescent(mirror_descent.MirrorDescent):
    """OpenSpiel's mirror descent with the projected policy frozen between iterations."""

    def get_projected_policy(self):
        frozen = os_value.TabularValueFunction(self._game)
        frozen._values = collections.defaultdict(float, self._cumulative_state_value._values)
        return mirror_descent.ProjectedPolicy(self._game, [0], frozen)


@pytest.fixture(scope="module")
def no_move_cost(crowd):
    env, params = crowd
    return env, params.replace(move_cost=jnp.float32(0.0), position_reward=jnp.asarray(POSITION, jnp.float32))


def test_fictitious_play_matches_openspiel(no_move_cost):
    env, params = no_move_cost
    game = _NoMoveCostGame()
    fp = fictitious_play.FictitiousPlay(game)
    theirs = [nash_conv.NashConv(game, fp.get_policy()).nash_conv()]
    for _ in range(FP_ITERS):
        fp.iteration()
        theirs.append(nash_conv.NashConv(game, fp.get_policy()).nash_conv())
    ours = our_fictitious_play(env, params, FP_ITERS)
    np.testing.assert_allclose(np.asarray(ours.exploitability), theirs, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(ours.mu[: env.horizon]),
                               openspiel_flow(game, fp.get_policy(), env), atol=1e-5)


def test_mirror_descent_matches_openspiel(no_move_cost):
    env, params = no_move_cost
    game = _NoMoveCostGame()
    md = _SnapshotMirrorDescent(game, lr=1.0)
    theirs = []
    for _ in range(3):
        md.iteration()
        theirs.append(nash_conv.NashConv(game, md.get_policy()).nash_conv())
    ours = jax.jit(solvers.mirror_descent, static_argnums=(0, 2))(env, params, 3, 1.0)
    np.testing.assert_allclose(np.asarray(ours.exploitability[1:]), theirs, rtol=1e-4, atol=1e-4)


ROWS = [".....", ".#.#.", ".....", "..#..", "....."]


def test_2d_with_walls_matches_openspiel():
    """OpenSpiel's C++ 2-D game with forbidden cells, partial noise and a point-mass start
    (on the diagonal: OpenSpiel's initial chance outcome swaps x and y)."""
    horizon = 5
    game = pyspiel.load_game("mfg_crowd_modelling_2d", {
        "size": 5, "horizon": horizon, "forbidden_states": os_crowd_2d.grid_to_forbidden_states(ROWS),
        "initial_distribution": "[2|2]", "initial_distribution_value": "[1.0]", "noise_intensity": 0.5,
        "only_distribution_reward": True,
    })
    env = CrowdModelling(num_agents=16, dims=2, size=5, layout=ROWS, horizon=horizon)
    init = np.zeros(env.num_states, np.float32)
    init[2 * 5 + 2] = 1.0
    params = env.default_params().replace(noise=jnp.float32(0.5), move_cost=jnp.float32(0.0),
                                          position_reward=jnp.zeros(env.num_states), init_dist=jnp.asarray(init))
    legal = env.legal_table
    rng = np.random.default_rng(1)
    random_table = rng.random((horizon, env.num_states, env.num_actions)) * legal
    random_table /= random_table.sum(-1, keepdims=True)
    for table in (solvers.uniform_policy(env), random_table):
        policy = TablePolicy(game, table, 5)
        ev = evaluate(env, params, table)
        np.testing.assert_allclose(np.asarray(ev.mu[:horizon]), openspiel_flow(game, policy, env), atol=1e-6)
        assert float(ev.exploitability) == pytest.approx(nash_conv.NashConv(game, policy).nash_conv(), abs=1e-4)
    # legal actions are OpenSpiel's, cell by cell (default start: every cell possible)
    game = pyspiel.load_game("mfg_crowd_modelling_2d", {"size": 5, "forbidden_states": os_crowd_2d.grid_to_forbidden_states(ROWS)})
    for cell in map(int, np.flatnonzero(~env.forbidden)):
        s = game.new_initial_state()
        s.apply_action(cell % 5 * 5 + cell // 5)  # OpenSpiel's chance outcome for (x, y)
        assert str(s).startswith(str((cell // 5, cell % 5, 0)))
        assert s.legal_actions() == list(np.flatnonzero(legal[cell]))


def test_2d_default_rewards_match_openspiel():
    game = pyspiel.load_game("mfg_crowd_modelling_2d")
    env = CrowdModelling(num_agents=16, dims=2)
    mu = jnp.full(env.num_states, 1.0 / env.num_states)
    R0 = np.asarray(jax.jit(env.reward)(mu[:, None] * jnp.full(5, 0.2), mu, 0, env.default_params()))
    for cell in range(env.num_states):
        s = game.new_initial_state()
        s.apply_action(cell % 10 * 10 + cell // 10)
        assert s.rewards()[0] == pytest.approx(R0[cell, env.neutral], abs=1e-4)


# --------------------------------------------------------------------- agent view
def test_agent_rewards_are_the_reward_table():
    """Without congestion an agent's reward is ``position_reward[x] - log(mu_t[x])`` minus
    the move cost of its (legal) action, with ``mu_t`` the empirical histogram."""
    env = CrowdModelling(num_agents=500, dims=2, layout="four_rooms")
    params = env.default_params()
    step, actions = jax.jit(env.step), jax.jit(env.tabular_actions)
    state, ts = jax.jit(env.reset)(jax.random.key(0), params)
    pos_reward, move_cost = np.asarray(params.position_reward), float(params.move_cost)
    for t in range(3):
        acts = actions(jax.random.key(t), state, jnp.ones((env.num_states, env.num_actions)))
        pos, hist, a = np.asarray(state.pos), np.asarray(state.hist), np.asarray(acts["agent"])
        new, ts = step(jax.random.key(10 + t), state, acts, params)
        moves = np.abs(MOVES_2D[a]).sum(1)
        expect = pos_reward[pos] - np.log(hist[pos]) - move_cost * moves
        np.testing.assert_allclose(np.asarray(ts.reward["agent"]), expect, rtol=1e-5)
        assert float(ts.info["illegal_action"]) == 0.0
        state = new
    # a move into a wall acts as the neutral action and is counted as illegal
    into_wall = np.argwhere(~np.asarray(ts.action_mask["agent"]))
    agent, action = into_wall[0]
    acts = {"agent": jnp.full((env.n,), env.neutral, jnp.int32).at[agent].set(int(action))}
    new, ts2 = step(jax.random.key(99), state, acts, params.replace(noise=jnp.float32(0.0)))
    assert float(ts2.info["illegal_action"]) == pytest.approx(1 / env.n, rel=1e-4)
    assert int(new.pos[agent]) == int(state.pos[agent])
    assert float(ts2.reward["agent"][agent]) == pytest.approx(pos_reward[state.pos[agent]] - np.log(state.hist[state.pos[agent]]), rel=1e-5)
