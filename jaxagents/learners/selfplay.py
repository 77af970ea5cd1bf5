"""Self-play: one policy plays every seat, with the seat's role as an input.

``make_train(config, env)`` merges the environment's roles into one role
(``MergeRoles``: observations padded, a one-hot role id appended, action sets
padded and masked) and trains it with the PPO machinery of ``ppo.py``; both seats'
samples are trained on in the same batch. The advantage estimator is config
(``rae`` by default -- SPIRAL's role-conditioned baselines; ``returns`` with
``normalize="role"`` is MARS's per-role normalisation; ``gae``, ``grpo``,
``gigpo``).

Fictitious self-play: a ring buffer of ``pool_size`` past parameter sets lives in
the train state; every ``pool_every`` updates the current parameters are pushed.
With probability ``pool_prob`` an environment's episode pits the learner (one
random seat) against a uniformly drawn pool member (the other seats); the learner
trains only on its own seats' samples. Pools need a feed-forward network.

Policy averaging (``average_decay > 0``): an exponential moving average of the
parameters (Polyak averaging) is kept in the train state next to the pool, updated
after every update, and evaluated with the exact measures (exploitability; the exact
tic-tac-toe outcomes against minimax) under ``eval/average/...``. Near an equilibrium the
last iterate keeps moving by the gradient noise, and exploitability -- a maximum over
best responses -- is steep there; the average moves far less (Kuhn: see
docs/results_selfplay.md).

Evaluation during training (every ``eval_every`` updates, NaN in between): the
mean return, win and loss rates per seat against a uniformly random opponent and,
for tic-tac-toe, against exact minimax (``eval/{opponent}/{metric}/seat{k}``, sampled
games); exact exploitability for Kuhn poker (one hand) and Leduc hold'em.

Tic-tac-toe against minimax is also evaluated *exactly* (``tic_tac_toe_vs_minimax``):
the probability of each outcome, summed over every game the learner can reach
against a minimax player that picks uniformly among its optimal moves, for the
greedy policy (argmax over legal actions: ``eval/minimax/greedy/{loss,win}/seat{k}``)
and for the sampled policy (``eval/minimax/exact/{loss,win}/seat{k}``). A greedy loss
rate of exactly 0 means the greedy policy never loses, whatever minimax's tie-breaks.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxagents.core.wrappers import FlattenObservation, MergeRoles, VecEnv
from jaxagents.learners import ppo
from jaxagents.learners.agents import Agents

ROLE = "agents"


@dataclasses.dataclass(frozen=True)
class SelfPlayConfig:
    """Self-play settings: ``ppo`` (with ``advantage="rae"``, ``normalize="none"``
    by default) plus the opponent pool and the evaluation schedule."""

    ppo: ppo.PPOConfig = ppo.PPOConfig(advantage="rae", normalize="none")
    pool_size: int = 0
    pool_every: int = 10
    pool_prob: float = 0.5
    eval_every: int = 10
    eval_envs: int = 256
    eval_steps: int = 32
    average_decay: float = 0.0

    def __post_init__(self):
        if isinstance(self.ppo, dict):
            base = {"advantage": "rae", "normalize": "none"}
            object.__setattr__(self, "ppo", ppo.PPOConfig(**{**base, **self.ppo}))
        for name in ("pool_size",):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        for name in ("pool_every", "eval_every", "eval_envs", "eval_steps"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not 0.0 <= self.average_decay < 1.0:
            raise ValueError(f"average_decay must be in [0, 1) (0 = no parameter average), got {self.average_decay}")
        if not 0.0 <= self.pool_prob <= 1.0:
            raise ValueError(f"pool_prob must be in [0, 1], got {self.pool_prob}")
        if self.pool_size and self.ppo.network.recurrent:
            raise ValueError("opponent pools need a feed-forward network (network.recurrent=False)")

    @property
    def num_updates(self) -> int:
        return self.ppo.num_updates


@struct.dataclass
class Pool:
    """``params``: the ring buffer, a params tree with a leading ``[pool_size]``
    axis; ``count``: filled slots; ``next``: the slot the next push overwrites."""

    params: dict
    count: jax.Array
    next: jax.Array


@struct.dataclass
class SelfPlayExtra:
    """Self-play's part of ``TrainState.extra``: the opponent ``pool`` (``Pool`` or
    None) and the parameter ``average`` (a params tree, or None)."""

    pool: Pool | None = None
    average: dict | None = None


def merge(env):
    """The self-play view of ``env``: one role ``agents`` with a role id input."""
    flat = FlattenObservation(env)
    return MergeRoles(flat, {ROLE: list(flat.roles)})


# --------------------------------------------------------------------------- evaluation


def _random_opponent(state, ts, key):
    mask = ts.action_mask[ROLE]
    return jax.random.categorical(key, jnp.where(mask, 0.0, -jnp.inf)).astype(jnp.int32)


def _minimax_opponent(state, ts, key):
    from environments.games.tic_tac_toe_minimax import minimax_action

    n = ts.action_mask[ROLE].shape[0]
    a = minimax_action(state.board, key)
    return jnp.broadcast_to(a, (n,))


def scripted_opponents(env) -> dict:
    """``{name: opponent_fn(state, timestep, key) -> i32[n]}`` for ``env``."""
    opp = {"random": _random_opponent}
    if type(env).__name__ == "TicTacToe":
        opp["minimax"] = _minimax_opponent
    return opp


def exact_tree(env, env_params):
    """The game tree for exact exploitability, or None where the game has none."""
    name = type(env).__name__
    from jaxagents.evaluation import exploitability as ex

    if name == "KuhnPoker" and int(np.asarray(env_params.num_hands)) == 1:
        return ex.kuhn_tree()
    if name == "LeducPoker":
        return ex.leduc_tree()
    return None


@functools.lru_cache(maxsize=1)
def _tic_tac_toe_positions():
    """Every position reachable from the empty tic-tac-toe board (``R`` = 5,478), as
    host arrays: ``board i32[R, 9]`` (0 empty, 1 X, 2 O), ``mover i32[R]`` (0 X, 1 O),
    ``winner i32[R]`` (0 none, 1 X, 2 O), ``over bool[R]``, ``child i32[R, 9]`` (row of the
    position after each move; ``R`` -- a dummy row -- where illegal or over) and
    ``minimax f32[R, 9]`` (the minimax player's move distribution: uniform over its
    optimal moves, zero where the game is over)."""
    from environments.games.tic_tac_toe_minimax import NUM_BOARDS, _LINES, _POW3, solve

    value, q, _ = solve()
    idx = np.flatnonzero(~np.isnan(value))
    R = idx.size
    board = (idx[:, None] // _POW3[None, :]) % 3
    row = np.full(NUM_BOARDS, R, np.int64)
    row[idx] = np.arange(R)
    lines = board[:, np.asarray(_LINES)]  # [R, 8, 3]
    full_line = (lines[..., 0] != 0) & (lines[..., 0] == lines[..., 1]) & (lines[..., 1] == lines[..., 2])
    winner = np.max(np.where(full_line, lines[..., 0], 0), axis=1)
    over = (winner > 0) | np.all(board != 0, axis=1)
    mover = (np.sum(board != 0, axis=1) % 2).astype(np.int32)
    legal = (board == 0) & ~over[:, None]
    child = np.where(legal, row[np.where(legal, idx[:, None] + (mover[:, None] + 1) * _POW3[None, :], 0)], R)
    qv = q[idx]
    best = legal & (qv >= np.max(qv, axis=1, keepdims=True) - 1e-6)
    minimax = best / np.maximum(best.sum(1, keepdims=True), 1)
    return dict(board=board.astype(np.int32), mover=mover, winner=winner.astype(np.int32), over=over,
                child=child.astype(np.int32), legal=legal, minimax=minimax.astype(np.float32))


def tic_tac_toe_obs(board: jax.Array, seat: int, dim: int) -> jax.Array:
    """The merged self-play observation ``f32[..., dim]`` of ``seat`` (0 X, 1 O) on
    ``board i32[..., 9]``: own marks and the opponent's per cell (the env's
    ``[3, 3, 2]`` flattened row-major), zero padding, then the one-hot role id."""
    own, opp = (1, 2) if seat == 0 else (2, 1)
    marks = jnp.stack([board == own, board == opp], -1).astype(jnp.float32).reshape(*board.shape[:-1], 18)
    pad = jnp.zeros((*board.shape[:-1], dim - 18 - 2), jnp.float32)
    role = jnp.broadcast_to(jnp.eye(2, dtype=jnp.float32)[seat], (*board.shape[:-1], 2))
    return jnp.concatenate([marks, pad, role], -1)


def tic_tac_toe_vs_minimax(logits_fn, dim: int) -> dict:
    """Exact outcome probabilities of a policy against minimax in tic-tac-toe.

    Args:
        logits_fn: ``obs f32[S, dim] -> logits f32[S, >=9]``, the policy in the merged
            self-play format (see ``tic_tac_toe_obs``).
        dim: the merged observation size.

    The minimax player picks uniformly among its optimal moves. The probability mass
    of every reachable position is pushed forward one move at a time (nine plies,
    a ``segment_sum`` each) with the learner moving by its policy -- greedy (argmax
    over the legal moves) or sampled (softmax over them) -- and the mass of
    finished games is collected. Returns ``{"greedy/loss/seat{k}", "greedy/win/seat{k}",
    "exact/loss/seat{k}", "exact/win/seat{k}"}`` for the learner in seat ``k``
    (0 plays X, first). Jit-able; one network pass over the 5,478 positions per seat.
    """
    pos = _tic_tac_toe_positions()
    board, mover, child = (jnp.asarray(pos[k]) for k in ("board", "mover", "child"))
    legal, minimax, winner = jnp.asarray(pos["legal"]), jnp.asarray(pos["minimax"]), jnp.asarray(pos["winner"])
    over = jnp.asarray(pos["over"])
    R = board.shape[0]
    start = jnp.zeros(R, jnp.float32).at[0].set(1.0)  # row 0 is the empty board (index 0)
    out = {}
    for seat in (0, 1):
        logits = jnp.where(legal, logits_fn(tic_tac_toe_obs(board, seat, dim))[:, :9], -jnp.inf)
        sampled = jnp.where(legal, jax.nn.softmax(logits, -1), 0.0)
        greedy = jax.nn.one_hot(jnp.argmax(logits, -1), 9) * jnp.any(legal, -1, keepdims=True)
        for name, pi in (("greedy", greedy), ("exact", sampled)):
            move = jnp.where((mover == seat)[:, None], pi, minimax)
            mass, lost, won = start, 0.0, 0.0
            for _ in range(10):  # a game lasts at most nine moves
                lost = lost + jnp.sum(jnp.where(over & (winner == 2 - seat), mass, 0.0))
                won = won + jnp.sum(jnp.where(over & (winner == 1 + seat), mass, 0.0))
                flow = jnp.where(over[:, None], 0.0, mass[:, None] * move)
                mass = jax.ops.segment_sum(flow.reshape(-1), child.reshape(-1), R + 1)[:R]
            out[f"{name}/loss/seat{seat}"] = lost
            out[f"{name}/win/seat{seat}"] = won
    return out


def make_evaluate(agents, merged, env_params, opponents: dict, tree, num_envs: int, num_steps: int):
    """``evaluate(params, key) -> metrics``: sampled play of the learner against each
    scripted opponent, the learner in seat ``env_index % n``; plus exploitability."""
    vec = VecEnv(merged, num_envs)
    n = merged.roles[ROLE].num_agents
    seat = jnp.arange(num_envs) % n
    learner = seat[:, None] == jnp.arange(n)[None, :]

    def play(params, opp_fn, key):
        k0, key = jax.random.split(key)
        state, ts = vec.reset(k0, env_params)
        h = agents.initial_hidden(num_envs)[ROLE]

        def step(c, k):
            state, ts, h, first, ret = c
            k_a, k_o, k_e = jax.random.split(k, 3)
            obs = ts.obs[ROLE]
            reset = jnp.broadcast_to(first[:, None], obs.shape[:2])
            h, a, _, _, _ = agents.act(params, ROLE, h, obs, obs, reset, ts.action_mask[ROLE], k_a)
            o = jax.vmap(opp_fn)(state, ts, jax.random.split(k_o, num_envs))
            state, ts = vec.step(k_e, state, {ROLE: jnp.where(learner, a, o)}, env_params)
            ret = ret + ts.reward[ROLE]
            done = ts.done
            mine = jnp.sum(jnp.where(learner, ret, 0.0), axis=1)
            out = (done, mine)
            ret = jnp.where(done[:, None], 0.0, ret)
            return (state, ts, h, done, ret), out

        init = (state, ts, h, jnp.ones(num_envs, bool), jnp.zeros((num_envs, n)))
        _, (done, mine) = jax.lax.scan(step, init, jax.random.split(key, num_steps))
        m = {}
        for s in range(n):
            w = (done & (seat == s)[None]).astype(jnp.float32)
            cnt = jnp.maximum(jnp.sum(w), 1.0)
            m[f"return/seat{s}"] = jnp.sum(w * mine) / cnt
            m[f"win/seat{s}"] = jnp.sum(w * (mine > 0)) / cnt
            m[f"loss/seat{s}"] = jnp.sum(w * (mine < 0)) / cnt
        return m

    def evaluate_exact(params, prefix="eval/"):
        """The measures that need no sampling: exploitability, exact minimax outcomes."""
        metrics = {}
        if tree is not None:
            metrics[f"{prefix}exploitability"] = exploitability(agents, merged, params, tree)
        if "minimax" in opponents:  # tic-tac-toe: exact outcomes of greedy and sampled play
            exact = tic_tac_toe_vs_minimax(agents.logits_fn(params, ROLE), merged.roles[ROLE].observation_space.shape[0])
            metrics.update({f"{prefix}minimax/{k}": v for k, v in exact.items()})
        return metrics

    def evaluate(params, key):
        metrics = {}
        for k, (name, fn) in zip(jax.random.split(key, len(opponents)), opponents.items()):
            metrics.update({f"eval/{name}/{m}": v for m, v in play(params, fn, k).items()})
        return {**metrics, **evaluate_exact(params)}

    evaluate.exact = evaluate_exact
    return evaluate


def exploitability(agents, merged, params, tree):
    """Exact exploitability of the shared policy (each information state evaluated
    with its owner's role id)."""
    from jaxagents.evaluation.exploitability import exploitability as exact, policy_from_fn

    dim = merged._obs_dim[ROLE]
    members = merged.groups[ROLE]
    logits = agents.logits_fn(params, ROLE)

    def role_fn(i):
        def fn(obs):
            x = jnp.pad(jnp.asarray(obs, jnp.float32), ((0, 0), (0, dim - obs.shape[1])))
            x = jnp.concatenate([x, jnp.zeros((x.shape[0], len(members))).at[:, i].set(1.0)], 1)
            return logits(x)[:, : tree.num_actions]

        return fn

    return exact(tree, policy_from_fn(tree, {r: role_fn(i) for i, r in enumerate(members)}))


# --------------------------------------------------------------------------- train


def make_train(config: SelfPlayConfig, env, *, env_params=None, callback=None):
    """``train(key, hparams=None) -> (TrainState, metrics)`` for self-play on ``env``
    (any environment whose roles have vector or grid observations and discrete
    actions). ``TrainState.extra`` is a ``SelfPlayExtra``: the opponent pool and the
    parameter average."""
    cfg = config
    env_params = env.default_params() if env_params is None else env_params
    merged = merge(env)
    agents = Agents(merged, cfg.ppo.network)
    n = merged.roles[ROLE].num_agents
    role_ids = np.zeros(n, np.int32)
    for i, sl in enumerate(merged.role_slices[ROLE].values()):
        role_ids[sl] = i
    num_roles = len(merged.groups[ROLE])
    evaluate = make_evaluate(
        agents, merged, env_params, scripted_opponents(env), exact_tree(env, env_params), cfg.eval_envs, cfg.eval_steps
    )
    def evaluate_all(params, average, key):
        metrics = evaluate(params, key)
        if average is not None:
            metrics.update(evaluate.exact(average, "eval/average/"))
        return metrics

    E = cfg.ppo.num_envs

    def init_extra(params, key):
        pool = None
        if cfg.pool_size:
            stacked = jax.tree.map(lambda x: jnp.broadcast_to(x, (cfg.pool_size, *x.shape)), params[ROLE])
            pool = Pool(stacked, jnp.ones((), jnp.int32), jnp.ones((), jnp.int32) % cfg.pool_size)
        return SelfPlayExtra(pool, params[ROLE] if cfg.average_decay else None)

    p0 = jax.eval_shape(lambda k: agents.init(k)[ROLE], jax.random.key(0))
    eval_shape = jax.eval_shape(
        lambda k, avg: evaluate_all(agents.init(k)[ROLE], avg, k), jax.random.key(0), p0 if cfg.average_decay else None
    )

    def opponents(state, key):
        if not cfg.pool_size:
            return None
        k_use, k_idx, k_seat = jax.random.split(key, 3)
        pool: Pool = state.extra.pool
        use = jax.random.bernoulli(k_use, cfg.pool_prob, (E,))
        idx = jax.random.randint(k_idx, (E,), 0, pool.count)
        seat = jax.random.randint(k_seat, (E,), 0, n)
        learner = jnp.where(use[:, None], jnp.arange(n)[None, :] == seat[:, None], True)
        opp = jax.tree.map(lambda x: x[idx], pool.params)
        return {ROLE: opp}, {ROLE: learner}

    def after_update(state, traj):
        extra: SelfPlayExtra = state.extra
        if cfg.average_decay:
            d = cfg.average_decay
            extra = extra.replace(average=jax.tree.map(lambda a, p: d * a + (1.0 - d) * p, extra.average, state.params[ROLE]))
        if cfg.pool_size:
            pool: Pool = extra.pool
            push = state.update % cfg.pool_every == 0
            params = jax.tree.map(
                lambda buf, p: jnp.where(push, buf.at[pool.next].set(p), buf), pool.params, state.params[ROLE]
            )
            pool = Pool(
                params,
                jnp.where(push, jnp.minimum(pool.count + 1, cfg.pool_size), pool.count),
                jnp.where(push, (pool.next + 1) % cfg.pool_size, pool.next),
            )
            extra = extra.replace(pool=pool)
        state = state.replace(extra=extra)
        due = (state.update % cfg.eval_every == 0) | (state.update == cfg.num_updates)
        k_eval = jax.random.fold_in(state.key, 7)
        metrics = jax.lax.cond(
            due,
            lambda: evaluate_all(state.params[ROLE], extra.average, k_eval),
            lambda: jax.tree.map(lambda s: jnp.full(s.shape, jnp.nan, s.dtype), eval_shape),
        )
        return state, metrics

    train = ppo.make_train(
        cfg.ppo,
        merged,
        env_params=env_params,
        callback=callback,
        _hooks={
            "agents": agents,
            "role_ids": ({ROLE: jnp.asarray(role_ids)}, num_roles),
            "init_extra": init_extra,
            "opponents": opponents,
            "after_update": after_update,
            "slot_names": {ROLE: [r for r, sl in merged.role_slices[ROLE].items() for _ in range(sl.stop - sl.start)]},
        },
    )
    def evaluate_state(params, key, extra: SelfPlayExtra | None = None, **_):
        return evaluate_all(params[ROLE], None if extra is None else extra.average, key)

    train.evaluate = evaluate_state
    train.merged = merged
    return train
