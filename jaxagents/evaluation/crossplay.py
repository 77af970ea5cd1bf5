"""Cross-play: how K policies do with (cooperative games) or against (competitive
games) each other, every pair and every seat assignment in one compiled program.

A *seat* is one agent slot of the environment, numbered over its roles in order
(``role_a`` slots first, then ``role_b``'s ...; self-play's merged view has one role
whose slots are the original players). A *cell* ``(s, i, j)`` puts the row policy
``i`` in seat ``s`` and the column policy ``j`` in every other seat; each policy is
a ``{role: params}`` tree for ``agents`` (one per run or population member, stacked
on a leading ``[K]`` axis), and a slot acts with its policy's parameters of the
slot's role. Every cell plays ``episodes`` environments until each has finished one
episode (within ``num_steps`` steps) and scores:

* ``team=False`` (competitive): the row policy's return, the return of seat ``s``;
* ``team=True`` (cooperative): the team return, the mean over every seat's return
  (with a shared reward, e.g. Overcooked, each seat's return).

All ``S x seats x K x K`` cells run in one jitted program: ``jax.lax.map`` over the
cells, ``vmap`` inside batches of ``batch_size`` cells (all of them by default) --
no Python loop over pairs. Evaluation seed ``t`` gives every cell the same keys
(common random numbers: cells differ only by their policies), and a step's actions
are drawn from one key for every slot whoever plays it, so cell ``(s, i, j)`` and
the mirror assignment of a two-seat game, ``(1 - s, j, i)``, play the very same
games: in a zero-sum game their scores are exact negatives, in a team game equal.

``intervals`` aggregates the seeds: the diagonal (self-play, ``i == j``) against the
off-diagonal (cross-play) with IQMs and bootstrap intervals (``CrossPlay.summary``).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from jaxagents.core.validate import check_positive_int
from jaxagents.core.wrappers import VecEnv
from jaxagents.evaluation import intervals


def seat_slots(roles: dict) -> list[tuple[str, int]]:
    """``[(role, slot within the role)]`` in seat order."""
    return [(r, a) for r, role in roles.items() for a in range(role.num_agents)]


def num_policies(params) -> int:
    """K, the leading axis of a stacked ``{role: params}`` tree."""
    leaves = jax.tree.leaves(params)
    if not leaves:
        raise ValueError("params has no leaves")
    sizes = {int(np.shape(x)[0]) if np.ndim(x) else -1 for x in leaves}
    if len(sizes) != 1 or -1 in sizes:
        raise ValueError(f"params must carry one leading [K] policy axis on every leaf, got leading sizes {sorted(sizes)}")
    return sizes.pop()


def make_play(agents, env, env_params, *, episodes: int, num_steps: int):
    """``play(row_params, col_params, seat, key) -> (returns f32[N], finished f32[])``:
    one cell (see the module docstring); ``returns`` is every seat's return averaged
    over the episodes that finished (NaN if none did), ``finished`` their number."""
    vec = VecEnv(env, episodes)
    slots = seat_slots(agents.roles)
    offsets, start = {}, 0
    for r, role in agents.roles.items():
        offsets[r] = start
        start += role.num_agents
    N = len(slots)

    def critic_in(role, obs):  # the critic does not change actions: MAPPO's gets zeros of its shape
        if not agents.central_critic:
            return obs
        return agents.critic_input(role, obs, jnp.zeros((obs.shape[0], *agents.global_obs_shape)))

    def play(row_params, col_params, seat, key):
        k0, key = jax.random.split(key)
        state, ts = vec.reset(k0, env_params)
        mine = {r: (offsets[r] + jnp.arange(role.num_agents)) == seat for r, role in agents.roles.items()}
        h = (agents.initial_hidden(episodes), agents.initial_hidden(episodes))

        def step(c, k):
            state, ts, h, first, ret, result, finished = c
            k_act, k_env = jax.random.split(k)
            actions, new_h = {}, ([{}, {}])
            for kr, r in zip(jax.random.split(k_act, len(agents.roles)), agents.roles):
                obs = ts.obs[r]
                reset = jnp.broadcast_to(first[:, None], obs.shape[:2])
                out = []
                for side, p in enumerate((row_params, col_params)):
                    # the same key for both policies: a slot's draw does not depend on who plays it
                    hs, a, _, _, _ = agents.act(p[r], r, h[side][r], obs, critic_in(r, obs), reset, ts.action_mask[r], kr)
                    new_h[side][r] = hs
                    out.append(a)
                m = mine[r].reshape((1, -1) + (1,) * (out[0].ndim - 2))
                actions[r] = jnp.where(m, out[0], out[1])
            state, ts = vec.step(k_env, state, actions, env_params)
            ret = ret + jnp.concatenate([ts.reward[r].reshape(episodes, -1) for r in agents.roles], axis=1)
            done = ts.done & ~finished
            result = jnp.where(done[:, None], ret, result)
            finished = finished | ts.done
            ret = jnp.where(ts.done[:, None], 0.0, ret)
            return (state, ts, tuple(new_h), ts.done, ret, result, finished), None

        zeros = jnp.zeros((episodes, N), jnp.float32)
        init = (state, ts, h, jnp.ones(episodes, bool), zeros, zeros, jnp.zeros(episodes, bool))
        (_, _, _, _, _, result, finished), _ = jax.lax.scan(step, init, jax.random.split(key, num_steps))
        count = jnp.sum(finished)
        mean = jnp.sum(jnp.where(finished[:, None], result, 0.0), axis=0) / jnp.maximum(count, 1)
        return jnp.where(count > 0, mean, jnp.nan), count.astype(jnp.float32)

    return play


@dataclasses.dataclass(frozen=True)
class CrossPlay:
    """Cross-play results (numpy).

    Attributes:
        returns: ``f32[S, seats, K, K, seats]``: seed ``t``, row policy ``i`` in seat
            ``s``, column policy ``j`` in the other seats: every seat's mean return
            (NaN where no episode finished).
        finished: ``f32[S, seats, K, K]`` episodes that finished per cell.
        team: whether ``scores`` are team returns (cooperative) or the row's
            (competitive); ``dataclasses.replace(result, team=...)`` reads the same
            games the other way.
        names: the K policies' names.
        seats: ``[(role, slot)]`` per seat.
    """

    returns: np.ndarray
    finished: np.ndarray
    team: bool
    names: tuple[str, ...]
    seats: tuple[tuple[str, int], ...]

    @property
    def scores(self) -> np.ndarray:
        """``f32[S, seats, K, K]``: the team return (mean over seats) or the row policy's
        (its seat's return)."""
        if self.team:
            return self.returns.mean(axis=-1)
        n = self.returns.shape[1]
        return self.returns[:, np.arange(n), :, :, np.arange(n)].transpose(1, 0, 2, 3)

    @property
    def matrix(self) -> np.ndarray:
        """``[K, K]``: the mean over seeds and seats."""
        return np.nanmean(self.scores, axis=(0, 1))

    def per_seed(self) -> np.ndarray:
        """``[S, K, K]``: each seed's matrix (mean over seats)."""
        return np.nanmean(self.scores, axis=1)

    def split(self) -> tuple[np.ndarray, np.ndarray]:
        """``(self_play [S, K], cross_play [S, K * (K - 1)])``: each seed's diagonal and
        off-diagonal cells (the tables ``intervals`` aggregates: seeds are the runs)."""
        m = self.per_seed()
        K = m.shape[-1]
        off = ~np.eye(K, dtype=bool)
        return m[:, np.arange(K), np.arange(K)], m[:, off]

    def versus_field(self) -> np.ndarray:
        """``[S, K]``: each seed's mean score of every policy against (or with) the
        K - 1 others. In a zero-sum game the diagonal is 0 and the off-diagonal
        antisymmetric, so this -- how each policy fares against the field -- is the
        informative summary."""
        m = self.per_seed()
        K = m.shape[-1]
        off = ~np.eye(K, dtype=bool)
        return np.where(off[None], m, 0.0).sum(-1) / max(K - 1, 1)

    def summary(self, reps: int = 2000, confidence: float = 0.95, seed: int = 0) -> dict:
        """``{"self_play": {"mean": Interval, "iqm": Interval}, "cross_play": {...}}``:
        stratified bootstrap over seeds (cells are the strata); ``cross_play`` is
        absent with one policy."""
        diag, off = self.split()
        out = {"self_play": intervals.summary(diag, reps=reps, confidence=confidence, seed=seed)}
        if off.shape[1]:
            out["cross_play"] = intervals.summary(off, reps=reps, confidence=confidence, seed=seed)
        return out

    def to_dict(self) -> dict:
        """JSON-ready: the names, the matrix, per-seat matrices, per-seed scores and the summary."""
        nan_none = lambda a: np.where(np.isnan(a), None, a).tolist()  # noqa: E731
        summ = {k: {s: dataclasses.asdict(v) for s, v in d.items()} for k, d in self.summary().items()}
        return {
            "names": list(self.names), "team": self.team, "seats": [f"{r}[{a}]" for r, a in self.seats],
            "matrix": nan_none(self.matrix), "per_seat": nan_none(np.nanmean(self.scores, axis=0)),
            "scores": nan_none(self.scores), "seat_returns": nan_none(self.returns), "finished": self.finished.tolist(), "summary": summ,
        }

    def to_csv(self) -> str:
        """The matrix as CSV: a header of column names, one row per row policy."""
        lines = ["row\\column," + ",".join(self.names)]
        for name, row in zip(self.names, self.matrix):
            lines.append(name + "," + ",".join(f"{v:.6g}" for v in row))
        return "\n".join(lines) + "\n"


def crossplay(agents, env, params, key: jax.Array, *, env_params=None, episodes: int = 64, num_steps: int = 128,
              seeds: int = 1, team: bool = False, names=None, batch_size: int | None = None) -> CrossPlay:
    """The cross-play of the K policies ``params`` (a ``{role: params}`` tree for
    ``agents``, every leaf with a leading ``[K]`` axis) on ``env`` (the environment
    the agents act in -- a learner's ``learner.env``). See the module docstring;
    ``batch_size`` bounds how many cells run side by side (memory)."""
    env_params = env.default_params() if env_params is None else env_params
    K = num_policies(params)
    episodes, num_steps, seeds = (check_positive_int(n, v) for n, v in
                                  (("episodes", episodes), ("num_steps", num_steps), ("seeds", seeds)))
    names = tuple(names) if names is not None else tuple(f"policy{i}" for i in range(K))
    if len(names) != K:
        raise ValueError(f"{len(names)} names for {K} policies")
    seats = seat_slots(agents.roles)
    n = len(seats)
    play = make_play(agents, env, env_params, episodes=episodes, num_steps=num_steps)
    t, s, i, j = (x.reshape(-1) for x in np.meshgrid(np.arange(seeds), np.arange(n), np.arange(K), np.arange(K), indexing="ij"))
    cells = len(t)
    batch = cells if batch_size is None else min(check_positive_int("batch_size", batch_size), cells)

    @jax.jit
    def run(params, key, t, s, i, j):
        def cell(x):
            t, s, i, j = x
            pick = lambda k: jax.tree.map(lambda leaf: leaf[k], params)  # noqa: E731
            return play(pick(i), pick(j), s, jax.random.fold_in(key, t))

        return jax.lax.map(cell, (t, s, i, j), batch_size=batch)

    returns, count = run(params, key, *(jnp.asarray(x, jnp.int32) for x in (t, s, i, j)))
    shape = (seeds, n, K, K)
    return CrossPlay(np.asarray(returns).reshape(*shape, n), np.asarray(count).reshape(shape), bool(team), names,
                     tuple(seats))


def heatmap(result: CrossPlay, path: str, title: str | None = None) -> None:
    """The ``[K, K]`` matrix as an annotated heatmap image at ``path`` (written
    atomically, like every file the library writes)."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from jaxagents.tracking import atomic_write

    m = result.matrix
    K = m.shape[0]
    size = max(4.0, 0.6 * K + 2.5)
    fig, ax = plt.subplots(figsize=(size, size * 0.85))
    im = ax.imshow(m, cmap="viridis")
    ax.set_xticks(range(K), result.names, rotation=60, ha="right", fontsize=8)
    ax.set_yticks(range(K), result.names, fontsize=8)
    ax.set_xlabel("column policy (the other seats)")
    ax.set_ylabel("row policy")
    if K <= 16:
        for a in range(K):
            for b in range(K):
                ax.text(b, a, f"{m[a, b]:.2g}", ha="center", va="center", fontsize=7, color="w")
    fig.colorbar(im, ax=ax, label="team return" if result.team else "row policy's return")
    ax.set_title(title or ("cross-play: team return" if result.team else "cross-play: row policy's return"))
    fig.tight_layout()
    buf = io.BytesIO()
    fmt = path.rsplit(".", 1)[-1].lower() if "." in path else "png"
    fig.savefig(buf, format=fmt, dpi=120)
    plt.close(fig)
    atomic_write(path, buf.getvalue())


# --------------------------------------------------------------------------- what to play


@dataclasses.dataclass(frozen=True)
class Policies:
    """Policies to cross-play: ``params`` stacked ``[K]``, their ``names``, and what
    plays them (``agents``, ``env``, ``env_params``); ``learner`` is the name of the
    learner that trained them (``selfplay``, ``ippo``...). ``jaxagents.runs.load_policies``
    reads them from run directories."""

    params: dict
    names: tuple[str, ...]
    agents: object
    env: object
    env_params: object
    learner: str
