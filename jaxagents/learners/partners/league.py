"""A league for self-play in competitive games: who the learning ("main") agent
plays in each environment's episode, and what it learns about its past selves.

The opponents are the snapshots of self-play's ring buffer (``partners.pool``:
``pool_size`` parameter sets, the current parameters pushed every ``pool_every``
updates). Per environment and update, one of three kinds of game is drawn with the
probabilities of the mix (``LeagueConfig.self_play / pfsp / latest``, summing to 1):

* self-play: the current parameters in every seat;
* PFSP (prioritised fictitious self-play, AlphaStar): a snapshot ``k`` drawn with
  probability ``f(p_k) / sum_j f(p_j)`` over the filled slots, ``p_k`` the main
  agent's win rate against it and ``f`` the weighting: ``"hard"`` ``(1 - p)^2``
  (the opponents it loses to), ``"variance"`` ``p (1 - p)`` (the even matches),
  ``"uniform"`` 1 (classic fictitious self-play);
* latest: the newest snapshot;
* exploiter (optional, ``LeagueConfig.exploiter``): the league's main exploiter, a
  second network that trains only against the main agent (``partners.exploiter``).

Outside self-play games the main agent takes one random seat and trains only on
that seat's samples; the snapshot plays the others.

The payoff table (``LeagueState``) lives in the train state: per slot, decayed counts
of the main agent's wins and games, ``wins <- decay * wins + new wins`` each update
(a draw is half a win), and the win rate ``p = (wins + 1/2) / (games + 1)``, i.e. one
prior half-won game so an unplayed snapshot starts at 1/2 and a few games do not
drive ``f`` to 0 or to its maximum. Counts, not an exponential average per episode:
how many of a slot's games finish in an update varies (0 to thousands), and a count
weights every finished game equally within an update, whatever the batch; the decay
(``payoff_decay``, per update) forgets games the main agent played as an older self
(``1.0``: plain counts). A slot's counts restart when a push overwrites it. A game
is credited only when its episode both started and ended in the update's rollout
(the opponent is drawn per rollout, so an episode that crossed a rollout boundary
met two opponents).

The ring buffer of plain self-play is one configuration of this:
``LeagueConfig.ring_buffer(pool_prob)`` (uniform weighting, the mix
``1 - pool_prob / pool_prob / 0``, no payoff table) -- and draws exactly the same
random numbers as before the league existed (``draw``). With a payoff table the
draws of update ``u`` come from ``fold_in(LeagueState.key, u)`` so that
``after_update`` can redraw them and credit each finished game to its opponent.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from flax import struct

from jaxagents.core.validate import check_choice, check_float
from jaxagents.core.wrappers.autoreset import fold_in_each
from jaxagents.learners.partners.exploiter import ExploiterConfig
from jaxagents.learners.partners.part import Context, Part
from jaxagents.learners.partners.pool import SnapshotPool
from jaxagents.learners.skeleton.data_parallel import local_env_ids


def _uniform(p):
    return jnp.ones_like(p)


def _hard(p):
    return (1.0 - p) ** 2


def _variance(p):
    return p * (1.0 - p)


# the PFSP weighting functions f(win rate), by their config name
WEIGHTINGS = {"uniform": _uniform, "hard": _hard, "variance": _variance}


@dataclasses.dataclass(frozen=True)
class LeagueConfig:
    """The league's settings (the ``train.league`` section of a self-play config).

    Attributes:
        weighting: PFSP weighting of the snapshots: ``"hard"``, ``"variance"`` or
            ``"uniform"`` (see the module docstring).
        self_play, pfsp, latest: the mix: probability that an environment's update
            is a self-play game, a game against a PFSP-drawn snapshot, against the
            newest snapshot. With ``exploiter.share`` they sum to 1.
        payoff_decay: per-update decay of the payoff table's counts, in (0, 1].
        exploiter: None, or the main exploiter's ``ExploiterConfig`` (or a mapping of
            its fields): its ``share`` of the games, its optimiser and its resets.
    """

    weighting: str = "hard"
    self_play: float = 0.35
    pfsp: float = 0.5
    latest: float = 0.15
    payoff_decay: float = 0.99
    exploiter: ExploiterConfig | None = None
    # not a config key: the ring buffer's configuration keeps no payoff table (``ring_buffer``)
    track_payoff: bool = dataclasses.field(default=True, init=False)

    def __post_init__(self):
        check_choice("league.weighting", self.weighting, tuple(WEIGHTINGS))
        for name in ("self_play", "pfsp", "latest"):
            object.__setattr__(self, name, check_float(f"league.{name}", getattr(self, name), low=0.0, high=1.0))
        if isinstance(self.exploiter, dict):
            try:
                object.__setattr__(self, "exploiter", ExploiterConfig(**self.exploiter))
            except TypeError as e:  # an unknown key (the runner's config check names it first)
                raise ValueError(f"league.exploiter: {e}") from None
        if self.exploiter is not None and not isinstance(self.exploiter, ExploiterConfig):
            raise ValueError("league.exploiter must be an ExploiterConfig, a mapping of its fields or None, "
                             f"got {type(self.exploiter).__name__}")
        total = self.self_play + self.pfsp + self.latest + self.exploiter_share
        if abs(total - 1.0) > 1e-6:
            parts = [self.self_play, self.pfsp, self.latest] + ([self.exploiter_share] if self.exploiter else [])
            names = "league.self_play + league.pfsp + league.latest" + (" + league.exploiter.share" if self.exploiter else "")
            raise ValueError(f"{names} must be 1 (the mix), got {' + '.join(f'{x:g}' for x in parts)} = {total:g}")
        object.__setattr__(self, "payoff_decay", check_float("league.payoff_decay", self.payoff_decay, low=0.0, high=1.0,
                                                              low_open=True))

    @classmethod
    def ring_buffer(cls, pool_prob: float) -> "LeagueConfig":
        """Plain self-play's pool: a uniformly drawn snapshot with probability
        ``pool_prob``, no payoff table."""
        cfg = cls(weighting="uniform", self_play=1.0 - pool_prob, pfsp=pool_prob, latest=0.0)
        object.__setattr__(cfg, "track_payoff", False)
        return cfg

    @property
    def opponent_prob(self) -> float:
        """Probability of a game against a snapshot."""
        return self.pfsp + self.latest

    @property
    def exploiter_share(self) -> float:
        """The mix's share of games against the exploiter: ``exploiter.share``, 0 without one."""
        return self.exploiter.share if self.exploiter is not None else 0.0


@struct.dataclass
class LeagueState:
    """The payoff table, ``f32[pool_size]`` per field: the main agent's decayed
    ``wins`` (draws count 1/2) and ``games`` against each slot; ``key``: the key the
    opponent draws are folded from (with the update index)."""

    key: jax.Array
    wins: jax.Array
    games: jax.Array

    @property
    def win_rate(self) -> jax.Array:
        """``f32[pool_size]``: ``(wins + 1/2) / (games + 1)``."""
        return (self.wins + 0.5) / (self.games + 1.0)


def init_state(key: jax.Array, pool_size: int) -> LeagueState:
    """An empty payoff table for ``pool_size`` slots (``wins`` and ``games`` zero) and the
    league's own key, folded from ``key``."""
    z = jnp.zeros((pool_size,), jnp.float32)
    return LeagueState(jax.random.fold_in(key, 0x1EA6), z, z)


def pfsp_weights(win_rate: jax.Array, count: jax.Array, weighting: str) -> jax.Array:
    """``f32[K]``: the PFSP probabilities of the filled slots (``[0, count)``),
    ``f(p) / sum f(p)``; uniform over them if every ``f(p)`` is 0."""
    filled = jnp.arange(win_rate.shape[0]) < count
    w = jnp.where(filled, WEIGHTINGS[weighting](win_rate), 0.0)
    w = jnp.where(jnp.sum(w) > 0, w, filled.astype(w.dtype))
    return w / jnp.sum(w)


@struct.dataclass
class Draws:
    """One update's games, ``[E]`` each: whether the environment meets a snapshot or
    the exploiter (``use``), which slot (``idx``; ``pool_size`` for the exploiter), and
    the main agent's seat there (``seat``)."""

    use: jax.Array
    idx: jax.Array
    seat: jax.Array


def draw(cfg: LeagueConfig, key: jax.Array, count: jax.Array, next_slot: jax.Array, win_rate: jax.Array | None,
         pool_size: int, num_envs: int, num_seats: int, env_ids: jax.Array | None = None) -> Draws:
    """Each environment's game for one update (``num_envs`` of them, or one per
    global index in ``env_ids``, each from its own folded key, so the draws do not
    depend on how the environments are split over devices). ``count``/``next_slot``:
    the ring buffer's filled slots and its next write position; ``win_rate``
    ``f32[pool_size]`` the payoff table's (unused with uniform weighting)."""
    k_use, k_idx, k_seat = jax.random.split(key, 3)
    logits = None
    if cfg.weighting != "uniform":
        logits = jnp.log(pfsp_weights(win_rate, count, cfg.weighting))

    def pick(k, shape):  # uniform keeps the ring buffer's draw: randint over the filled slots
        if logits is None:
            return jax.random.randint(k, shape, 0, count)
        return jax.random.categorical(k, logits, shape=shape)

    if env_ids is None:
        u = jax.random.uniform(k_use, (num_envs,))
        idx = pick(k_idx, (num_envs,))
        seat = jax.random.randint(k_seat, (num_envs,), 0, num_seats)
    else:  # one draw per environment from its own key: the same draws however the batch is split
        each = lambda k, f: jax.vmap(f)(fold_in_each(k, env_ids))  # noqa: E731
        u = each(k_use, lambda k: jax.random.uniform(k, ()))
        idx = each(k_idx, lambda k: pick(k, ()))
        seat = each(k_seat, lambda k: jax.random.randint(k, (), 0, num_seats))
    # u < p is how jax.random.bernoulli(k, p) draws: with latest = 0 this is the ring buffer's draw
    use = u < cfg.opponent_prob
    if cfg.latest > 0.0:  # the lowest `latest` of the interval picks the newest snapshot
        idx = jnp.where(u < cfg.latest, (next_slot - 1) % pool_size, idx)
    if cfg.exploiter is not None:  # the next `share` of the interval meets the exploiter, slot pool_size
        vs_exploiter = (u >= cfg.opponent_prob) & (u < cfg.opponent_prob + cfg.exploiter_share)
        use = use | vs_exploiter
        idx = jnp.where(vs_exploiter, pool_size, idx)
    return Draws(use, idx, seat)


def outcomes(traj, draws: Draws, pool_size: int, axis_name: str | None = None) -> tuple[jax.Array, jax.Array]:
    """``(wins f32[K + 1], games f32[K + 1])`` of the main agent in this rollout, per
    slot and (last) against the exploiter: the games against an opponent
    (``draws.use``) whose episode started and finished in the rollout; a positive
    return of the main agent's seat is a win, zero half of one. ``traj``: the merged
    role's ``Transition`` ``[T, E, n]``."""
    done = (traj.terminated | traj.truncated)[..., 0]  # [T, E]
    started = jax.lax.cummax(traj.reset[..., 0].astype(jnp.int32), axis=0) > 0  # a first step at or before t
    ret = jnp.sum(jnp.where(traj.learner, traj.episode_return, 0.0), axis=-1)
    score = jnp.where(ret > 0, 1.0, jnp.where(ret < 0, 0.0, 0.5))
    valid = (done & started & draws.use[None, :]).astype(jnp.float32)
    onehot = jax.nn.one_hot(draws.idx, pool_size + 1, dtype=jnp.float32)  # [E, K + 1]
    games = jnp.einsum("te,ek->k", valid, onehot)
    wins = jnp.einsum("te,ek->k", valid * score, onehot)
    if axis_name is not None:
        games, wins = jax.lax.psum((games, wins), axis_name)
    return wins, games


def record(state: LeagueState, wins: jax.Array, games: jax.Array, decay: float) -> LeagueState:
    """The payoff table after one update's finished games."""
    return state.replace(wins=decay * state.wins + wins, games=decay * state.games + games)


def forget(state: LeagueState, slot: jax.Array, push: jax.Array) -> LeagueState:
    """A new snapshot overwrote ``slot`` (where ``push``): its counts restart."""
    keep = ~(push & (jnp.arange(state.wins.shape[0]) == slot))
    return state.replace(wins=jnp.where(keep, state.wins, 0.0), games=jnp.where(keep, state.games, 0.0))


def metrics(state: LeagueState, count: jax.Array, games: jax.Array, weighting: str) -> dict:
    """``league/...``: the win rates (min and mean over the filled slots), this
    update's credited games and the PFSP distribution's entropy."""
    filled = jnp.arange(state.wins.shape[0]) < count
    p = state.win_rate
    w = pfsp_weights(p, count, weighting)
    return {
        "league/win_rate_mean": jnp.sum(jnp.where(filled, p, 0.0)) / jnp.maximum(count, 1),
        "league/win_rate_min": jnp.min(jnp.where(filled, p, jnp.inf)),
        "league/games": jnp.sum(games),
        "league/pfsp_entropy": jnp.maximum(-jnp.sum(jnp.where(w > 0, w * jnp.log(jnp.where(w > 0, w, 1.0)), 0.0)), 0.0),
    }


class League(Part):
    """The ``league`` part: who the main agent meets in each environment (``opponents``)
    and, with a payoff table (``LeagueConfig.track_payoff``; the plain pool's ring buffer
    keeps none, its state is None), what it learns of them after every update.

    It draws from the ``pool`` part's snapshots and credits the games to them, so it
    comes after that part in the list: ``after_update`` redraws the rollout's games
    from the pool and table the rollout saw (``Context.before``), records their
    outcomes, restarts the counts of the slot the pool's push overwrote and reports
    ``league/...`` over the pool's new filled slots (``Context.new``). It leaves
    ``Context.notes["league"] = (Draws, wins f32[K + 1], games f32[K + 1])`` for the
    exploiter, slot ``K = pool.size``. ``num_envs``: all environments (over every
    device); ``num_seats``: the merged role's slots."""

    field = "league"

    def __init__(self, cfg: LeagueConfig, pool: SnapshotPool, num_envs: int, num_seats: int,
                 axis_name: str | None = None, shards: int = 1):
        self.cfg, self.pool, self.num_envs, self.num_seats = cfg, pool, num_envs, num_seats
        self.axis_name, self.shards = axis_name, shards

    def draws(self, extra, key: jax.Array | None, update: jax.Array, env_ids: jax.Array | None = None) -> Draws:
        """The games of update ``update`` (``draw``) against ``extra``'s pool: from the
        opponent ``key``, or with a payoff table from the table's key folded with
        ``update`` (so ``after_update`` can redraw them)."""
        pool, table = extra.pool, extra.league
        if self.cfg.track_payoff:
            key = jax.random.fold_in(table.key, update)
        return draw(self.cfg, key, pool.count, pool.next, None if table is None else table.win_rate,
                    self.pool.size, self.num_envs, self.num_seats, env_ids)

    def opponents(self, extra, key: jax.Array, update: jax.Array, env_ids: jax.Array | None = None):
        """``(opp_params, learner bool[E, n])``: each environment's opponent, a params tree
        ``[E, ...]`` (a snapshot, or with an exploiter its network, slot ``pool.size``),
        and the seats the main agent plays (every seat in self-play games)."""
        d = self.draws(extra, key, update, env_ids)
        seats = jnp.arange(self.num_seats)[None, :]
        learner = jnp.where(d.use[:, None], seats == d.seat[:, None], True)
        table = extra.pool.params
        if self.cfg.exploiter:  # the exploiter is slot pool.size, one past the snapshots
            table = jax.tree.map(lambda buf, p: jnp.concatenate([buf, p[None]]), table, extra.exploiter.params)
        return jax.tree.map(lambda x: x[d.idx], table), learner

    def init(self, params, key):
        return init_state(key, self.pool.size) if self.cfg.track_payoff else None

    def after_update(self, table: LeagueState | None, ctx: Context):
        if not self.cfg.track_payoff:
            return table, {}
        K = self.pool.size
        env_ids = local_env_ids(self.axis_name, self.shards, self.num_envs // self.shards)  # as the rollout drew them
        d = self.draws(ctx.before, None, ctx.update - 1, env_ids)
        wins, games = outcomes(ctx.traj, d, K, self.axis_name)
        ctx.notes[self.field] = (d, wins, games)
        table = record(table, wins[:K], games[:K], self.cfg.payoff_decay)
        # the slot the pool's push overwrote holds a new opponent
        table = forget(table, ctx.before.pool.next, self.pool.pushes(ctx.update))
        return table, metrics(table, ctx.new[self.pool.field].count, games[:K], self.cfg.weighting)
