"""Fictitious co-play (FCP) for cooperative games: a best response to a pool of
frozen self-play partners and their past checkpoints.

FCP (Strouse et al. 2021) has two stages; each is a learner on the learner interface
(checkpointed, resumed bit-identically, a member of a population), chosen by the
config's ``partners`` field:

* **Stage 1, partners** (``partners=None``): self-play PPO (``ppo.make_train``) with
  ``K`` snapshots of the member's parameters kept *inside* the compiled program: a
  preallocated params tree with a leading ``[K]`` axis in ``TrainState.extra``
  (``Snapshots``), slot ``k`` written right after update ``snapshots[k]`` (slot ``k``
  of a snapshot at update 0 keeps the initial parameters). N partners are a
  ``Population`` of this learner (``population: {size: N}``): seeds vmapped and,
  with a mesh, sharded over devices, each member keeping its own snapshots.
* **Stage 2, the FCP agent** (``partners=RUN_DIR``, a stage-1 run): PPO against
  partners drawn from the pool of the first ``M - holdout`` partners' ``K`` snapshots
  (``M`` partners over the run's seeds and members, in that order). The pool is a
  frozen ``{role: [pool, ...]}`` tree in the train state (checkpointed with it,
  never updated); at every update each environment draws a pool entry uniformly
  and a seat for the learner uniformly (``Extension.opponents``); the partner plays
  every other seat. The last ``holdout`` partners' final parameters are never
  trained with: every ``eval_every`` updates the agent plays each of them in every
  seat (``evaluation.crossplay.make_play``) and reports the team return,
  ``eval/heldout/return`` (its default fitness) and per seat.

Both stages play one view of the environment: the environment itself when it has
one role (a shared policy plays every seat, e.g. Overcooked's ``cook``), else the
self-play view (``selfplay.merge``: one role with a role id input). Seats are that
role's slots, so the same parameters can sit in any of them.

The partner draws are keyed per environment by its global index (``fold_in``), so a
data-parallel run (``data_axis``) draws what one device would. The pool needs a
feed-forward network (a partner has no memory of its own in the rollout).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxagents.core.validate import check_int, check_positive_int
from jaxagents.core.wrappers.autoreset import fold_in_each
from jaxagents.evaluation.crossplay import make_play
from jaxagents.learners.policy_gradient import ppo
from jaxagents.learners.skeleton.agents import Agents
from jaxagents.learners.skeleton.interface import Fitness, Learner


@dataclasses.dataclass(frozen=True)
class FCPConfig:
    """FCP settings.

    Attributes:
        ppo: the PPO settings of either stage (a ``PPOConfig`` or a mapping of its fields).
        partners: None: this run trains partners (stage 1); a stage-1 run directory:
            this run trains the FCP agent against its pool (stage 2).
        snapshots: stage 1: the updates after which a snapshot is kept, increasing,
            in ``[0, num_updates]`` (0: the initial parameters); default
            ``(0, num_updates // 2, num_updates)``.
        holdout: stage 2: the last ``holdout`` partners of the run are held out of
            the pool and used for evaluation.
        eval_every: stage 2: updates between held-out evaluations (and the last update).
        eval_episodes: stage 2: episodes per held-out partner and seat.
        eval_steps: stage 2: steps each evaluation episode may take to finish.
    """

    ppo: ppo.PPOConfig = ppo.PPOConfig()
    partners: str | None = None
    snapshots: tuple[int, ...] | None = None
    holdout: int = 0
    eval_every: int = 10
    eval_episodes: int = 16
    eval_steps: int = 128

    def __post_init__(self):
        if isinstance(self.ppo, dict):
            object.__setattr__(self, "ppo", ppo.PPOConfig(**self.ppo))
        if not isinstance(self.ppo, ppo.PPOConfig):
            raise ValueError(f"ppo must be a PPOConfig or a mapping of its fields, got {type(self.ppo).__name__}")
        if self.partners is not None and (not isinstance(self.partners, str) or not self.partners):
            raise ValueError(f"partners must be a stage-1 run directory or null (this run trains partners), got {self.partners!r}")
        U = self.ppo.num_updates
        snaps = (0, U // 2, U) if self.snapshots is None else self.snapshots
        if not isinstance(snaps, (list, tuple)) or not snaps:
            raise ValueError(f"snapshots must be a non-empty list of update indices, got {snaps!r}")
        snaps = tuple(check_int(f"snapshots[{i}]", s, low=0, high=U) for i, s in enumerate(snaps))
        if any(b <= a for a, b in zip(snaps, snaps[1:])):
            raise ValueError(f"snapshots must be strictly increasing update indices, got {list(snaps)}")
        object.__setattr__(self, "snapshots", snaps)
        object.__setattr__(self, "holdout", check_int("holdout", self.holdout, low=0))
        for name in ("eval_every", "eval_episodes", "eval_steps"):
            object.__setattr__(self, name, check_positive_int(name, getattr(self, name)))
        if self.partners is not None and self.ppo.network.recurrent:
            raise ValueError("fcp partners need a feed-forward network (ppo.network.recurrent=False)")

    @property
    def num_updates(self) -> int:
        """The run's updates (of either stage): ``ppo.num_updates``."""
        return self.ppo.num_updates


@struct.dataclass
class Snapshots:
    """Stage 1's part of ``TrainState.extra``: ``params``, the ``{role: params}``
    tree with a leading ``[K]`` axis, slot ``k`` the parameters after update
    ``config.snapshots[k]`` (the initial parameters until then)."""

    params: dict


@struct.dataclass
class Partners:
    """Stage 2's frozen partners (``TrainState.extra``): ``pool``, ``{role: params}``
    with a leading ``[pool]`` axis (``(M - holdout) * K`` snapshots); ``heldout``,
    the same with ``[holdout]`` final parameters, or None."""

    pool: dict
    heldout: dict | None = None


def view(env):
    """The environment both stages play: ``env`` with one role, else its self-play view."""
    if len(env.roles) == 1:
        return env
    from jaxagents.learners.policy_gradient.selfplay import merge

    return merge(env)


def partners_from(snapshots: dict, final: dict, lead: int, holdout: int, where: str = "the partners") -> Partners:
    """``Partners`` from stage-1 states: ``snapshots`` ``{role: [*lead, K, ...]}``
    and ``final`` params ``{role: [*lead, ...]}``, ``lead`` leading partner axes
    (seeds, or seeds x members) flattened in order into M partners."""
    flat = lambda x, skip=0: np.asarray(x).reshape(-1, *np.shape(x)[lead + skip:])  # noqa: E731
    M = int(np.prod(jax.tree.leaves(final)[0].shape[:lead]))
    if not holdout < M:
        raise ValueError(f"holdout={holdout} must leave partners for the pool: {where} has {M} (seeds x members)")
    K = jax.tree.leaves(snapshots)[0].shape[lead]
    keep = (M - holdout) * K
    pool = jax.tree.map(lambda x: jnp.asarray(flat(x, 1)[:keep]), snapshots)  # partner-major: entry m * K + k
    heldout = jax.tree.map(lambda x: jnp.asarray(flat(x)[M - holdout:]), final) if holdout else None
    return Partners(pool, heldout)


def partner_batch(pool: dict, key: jax.Array, env_ids: jax.Array, num_seats: int):
    """This update's partners: ``(opp_params {role: [E, ...]}, learner {role: bool[E, n]})``
    (``Extension.opponents``), each environment's pool entry and learner seat from ``draw``."""
    pool_size = jax.tree.leaves(pool)[0].shape[0]
    idx, seat = draw(key, env_ids, pool_size, num_seats)
    opp = jax.tree.map(lambda x: x[idx], pool)
    return opp, {r: jnp.arange(num_seats)[None, :] == seat[:, None] for r in pool}


def _check_partners(partners: Partners, agents: Agents) -> None:
    """One-line error unless the partners' networks are the agent's (shapes)."""
    mine = jax.eval_shape(agents.init, jax.random.key(0))
    for name, tree in (("pool", partners.pool), ("heldout", partners.heldout)):
        if tree is None:
            continue
        theirs = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape[1:], x.dtype), tree)
        same = jax.tree.structure(theirs) == jax.tree.structure(mine) and all(
            a.shape == b.shape for a, b in zip(jax.tree.leaves(theirs), jax.tree.leaves(mine)))
        if not same:
            raise ValueError(f"the partners' {name} networks differ from this agent's (parameter shapes): "
                             "stage 2 needs stage 1's ppo.network and environment")


def draw(key: jax.Array, env_ids: jax.Array, pool_size: int, num_seats: int):
    """Each environment's partner (pool entry) and learner seat, both uniform and
    independent, from ``fold_in(key, env_id)``: ``env_ids`` ``i32[E]`` global
    environment indices -> ``(idx i32[E], seat i32[E])``."""
    keys = fold_in_each(key, env_ids)
    idx = jax.vmap(lambda k: jax.random.randint(jax.random.fold_in(k, 0), (), 0, pool_size))(keys)
    seat = jax.vmap(lambda k: jax.random.randint(jax.random.fold_in(k, 1), (), 0, num_seats))(keys)
    return idx, seat


def make_train(config: FCPConfig, env, *, env_params=None, callback=None, data_axis: str | None = None,
               data_shards: int = 1, partners: Partners | None = None) -> Learner:
    """Stage 1 (``config.partners is None`` and no ``partners``) or stage 2 of FCP on
    ``env`` (see the module docstring). ``partners``: stage 2's ``Partners`` given
    as data (``jaxagents.runs.load_partners`` reads them from ``config.partners``, the
    stage-1 run; ``jaxagents.build`` does so for a run config). ``TrainState.extra`` is a
    ``Snapshots`` (stage 1) or ``Partners`` (stage 2)."""
    cfg = config
    env_params = env.default_params() if env_params is None else env_params
    played = view(env)
    (role,) = played.roles
    agents = Agents(played, cfg.ppo.network)
    build = dict(env_params=env_params, callback=callback, data_axis=data_axis, data_shards=data_shards)

    if partners is None and cfg.partners is None:  # ---- stage 1: self-play partners with snapshots
        snap_at = jnp.asarray(cfg.snapshots, jnp.int32)

        def init_snapshots(params, key):
            return Snapshots(jax.tree.map(lambda x: jnp.broadcast_to(x, (len(cfg.snapshots), *x.shape)), params))

        def keep(state, traj):
            hit = snap_at == state.update  # bool[K]: this update's slot, if any
            bufs = jax.tree.map(lambda buf, p: jnp.where(hit.reshape((-1,) + (1,) * p.ndim), p[None], buf),
                                state.extra.params, state.params)
            return state.replace(extra=Snapshots(bufs)), {}

        ext = ppo.Extension(agents=agents, init_extra=init_snapshots, after_update=keep)
        return dataclasses.replace(ppo.make_train(cfg.ppo, played, extension=ext, **build), config=cfg)

    # ---- stage 2: the FCP agent, a best response to the frozen pool
    if cfg.ppo.network.recurrent:
        raise ValueError("fcp partners need a feed-forward network (ppo.network.recurrent=False)")
    if partners is None:  # the learner reads no files: the caller loads the stage-1 run
        raise ValueError(f"partners={cfg.partners!r}: stage 2 takes its partners as data; load them with "
                         "jaxagents.runs.load_partners (jaxagents.build does) or build them with partners_from")
    _check_partners(partners, agents)
    n = played.roles[role].num_agents
    E = cfg.ppo.num_envs

    def init_partners(params, key):
        return partners

    def opponents(state, key, env_ids=None):
        return partner_batch(state.extra.pool, key, jnp.arange(E) if env_ids is None else env_ids, n)

    heldout = partners.heldout
    play = make_play(agents, played, env_params, episodes=cfg.eval_episodes, num_steps=cfg.eval_steps)

    def evaluate_heldout(params, held, key):
        """Team return with every held-out partner in every seat: mean and per seat."""
        seats = jnp.arange(n)

        def one(h, s):
            col = jax.tree.map(lambda x: x[h], held)
            ret, _ = play(params, col, s, key)  # common random numbers across cells
            return jnp.mean(ret)

        H = jax.tree.leaves(held)[0].shape[0]
        scores = jax.vmap(lambda h: jax.vmap(lambda s: one(h, s))(seats))(jnp.arange(H))  # [H, n]
        m = {"eval/heldout/return": jnp.nanmean(scores)}
        m.update({f"eval/heldout/return/seat{s}": jnp.nanmean(scores[:, s]) for s in range(n)})
        return m

    def after_update(state, traj):
        """Held-out evaluation every ``eval_every`` updates and at the last (NaN between)."""
        due = (state.update % cfg.eval_every == 0) | (state.update == cfg.num_updates)
        k_eval = jax.random.fold_in(state.key, 7)
        return state, jax.lax.cond(
            due,
            lambda: evaluate_heldout(state.params, state.extra.heldout, k_eval),
            lambda: jax.tree.map(lambda s: jnp.full(s.shape, jnp.nan, s.dtype), shape),
        )

    def evaluate(state, key):
        return evaluate_heldout(state.params, state.extra.heldout, key)

    ext = ppo.Extension(agents=agents, init_extra=init_partners, opponents=opponents)
    if heldout is not None:  # without held-out partners: PPO's own evaluation and fitness
        shape = jax.eval_shape(lambda k: evaluate_heldout(agents.init(k), heldout, k), jax.random.key(0))
        ext = dataclasses.replace(ext, after_update=after_update, evaluate=evaluate,
                                  fitness=Fitness(("eval/heldout/return",)))
    return dataclasses.replace(ppo.make_train(cfg.ppo, played, extension=ext, **build), config=cfg)
