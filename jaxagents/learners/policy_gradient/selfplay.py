"""Self-play: one policy plays every seat, with the seat's role as an input.

``make_train(config, env)`` merges the environment's roles into one role
(``MergeRoles``: observations padded, a one-hot role id appended, action sets
padded and masked) and trains it with the PPO machinery of ``ppo.py``; both seats'
samples are trained on in the same batch. The advantage estimator is config
(``rae`` by default -- SPIRAL's role-conditioned baselines; ``returns`` with
``normalize="role"`` is MARS's per-role normalisation; ``gae``, ``grpo``,
``gigpo``).

The partner mechanisms are parts (``jaxagents.learners.partners``; each owns one field
of ``SelfPlayExtra``, its update after every PPO step and its evaluation), which the
config picks (``partner_parts``), listed in the order they update:

* ``pool_size > 0``: a ring buffer of past parameters (``partners.pool``), one pushed
  every ``pool_every`` updates, and a league over it (``partners.league``) that draws
  each environment's game: with probability ``pool_prob`` a uniformly drawn snapshot
  in the other seats (``LeagueConfig.ring_buffer``, no payoff table), or with ``league``
  a mix of self-play, PFSP and latest-snapshot games weighted by a payoff table kept in
  the train state, optionally against a main exploiter (``partners.exploiter``). The
  learner plays one random seat there and trains only on its own seats' samples.
  Pools need a feed-forward network;
* ``average_decay > 0``: the parameters' exponential moving average
  (``ParameterAverage``), under ``eval/average/...``. Near an equilibrium the last
  iterate keeps moving by the gradient noise, and exploitability -- a maximum over best
  responses -- is steep there; the average moves far less (Kuhn:
  docs/results_selfplay.md);
* ``average_policy``: a distilled average policy (``partners.average_policy``, NFSP's
  average network), under ``eval/distilled/...``.

The regulariser's magnet (``magnet``): ``ent_coef`` weighs the policy's entropy (a pull
towards the uniform policy, ``"uniform"``), or with ``"average"``
``(1 - w) H(pi) - w KL(pi || pi_average)``, ``w = magnet_weight``: a pull towards the
parameter average's policy (the magnet of magnetic mirror descent moved to the
exponential moving average of the parameters, as EMAgnet, Maidment et al. 2026) mixed
with the entropy's pull towards uniform play. Where the policy equals the average the
KL term's gradient vanishes, so a fixed point is the entropy-regularised equilibrium at
``(1 - w) ent_coef``; the KL term is friction against moving away from the average.
On Leduc hold'em it does not help: with ``w = 1`` the policy collapses, with
``w = 0.5`` it ends level with the entropy alone (docs/results_partners.md).

A distilled average policy (``average_policy``: an ``AveragePolicyConfig``,
``jaxagents.learners.partners.average_policy``): a second network of the same architecture,
trained after every update by cross-entropy on the actions the learner's own seats took
in the rollout -- the reach-weighted average of the iterates' policies that NFSP's
average network keeps -- and evaluated exactly under ``eval/distilled/...``.

Evaluation during training (every ``eval_every`` updates, NaN in between) knows no
game; it uses the environment's capabilities (``jaxagents.core.env``), which
wrappers forward:

* sampled games against a uniformly random opponent and against every scripted
  player the game offers (``env.scripted_policies()``, e.g. tic-tac-toe's minimax):
  mean return, win and loss rates per seat, ``eval/{opponent}/{metric}/seat{k}``;
* the game's exact evaluation, when it has one (``env.exact_evaluation(params)``):
  the shared policy is handed over as one logits function per original role, on
  that role's own observations (``MergeRoles`` encodes them), and its metrics are
  reported under ``eval/`` -- exact exploitability for Kuhn poker (one hand) and
  Leduc hold'em, exact outcome probabilities against minimax for tic-tac-toe;
  and each part's own policies (``Part.evaluate``: the averages, the pool's
  snapshots as one mixed strategy under ``eval/pool/``).

The default fitness (for populations) is minus the exploitability where the game
has one, else the mean return against the random opponent.

Data parallelism (``data_axis``/``data_shards``, as ``ppo.make_train``): each
environment's opponent-pool draws (whether it meets the pool, which member, the
learner's seat) come from a key folded with its global index, so they do not depend
on how the environments are split; the pool, the average and the evaluation are
replicated (every device evaluates the same policy with the same key).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from jaxagents.core.validate import check_float, check_int, check_positive_int
from jaxagents.core.wrappers import FlattenObservation, MergeRoles, VecEnv
from jaxagents.learners.partners import part as part_lib
from jaxagents.learners.partners.average_policy import AveragePolicy, AveragePolicyConfig, DistilledAverage, ParameterAverage
from jaxagents.learners.partners.exploiter import Exploiter, MainExploiter
from jaxagents.learners.partners.league import League, LeagueConfig, LeagueState
from jaxagents.learners.partners.part import Part
from jaxagents.learners.partners.pool import Pool, SnapshotPool
from jaxagents.learners.policy_gradient import ppo
from jaxagents.learners.skeleton.agents import Agents
from jaxagents.learners.skeleton.interface import Fitness, Learner

ROLE = "agents"
MAGNETS = ("uniform", "average")  # what the ent_coef regulariser pulls the policy towards


@dataclasses.dataclass(frozen=True)
class SelfPlayConfig:
    """Self-play settings: ``ppo`` (with ``advantage="rae"``, ``normalize="none"``
    by default) plus the opponent pool, the league (None: the pool's snapshots are
    drawn uniformly with probability ``pool_prob``; a ``LeagueConfig`` or a mapping
    of its fields: PFSP over the pool, ``pool_prob`` unused), the parameter average
    (``average_decay``), the distilled average policy (``average_policy``: None, an
    ``AveragePolicyConfig`` or a mapping of its fields), the regulariser's ``magnet``
    (``MAGNETS``: the uniform policy, i.e. the entropy bonus, or the parameter average,
    with weight ``magnet_weight`` against the entropy) and the evaluation schedule."""

    ppo: ppo.PPOConfig = ppo.PPOConfig(advantage="rae", normalize="none")
    pool_size: int = 0
    pool_every: int = 10
    pool_prob: float = 0.5
    eval_every: int = 10
    eval_envs: int = 256
    eval_steps: int = 32
    average_decay: float = 0.0
    league: LeagueConfig | None = None
    average_policy: AveragePolicyConfig | None = None
    magnet: str = "uniform"
    magnet_weight: float = 1.0

    def __post_init__(self):
        if isinstance(self.ppo, dict):
            base = {"advantage": "rae", "normalize": "none"}
            object.__setattr__(self, "ppo", ppo.PPOConfig(**{**base, **self.ppo}))
        if not isinstance(self.ppo, ppo.PPOConfig):
            raise ValueError(f"ppo must be a PPOConfig or a mapping of its fields, got {type(self.ppo).__name__}")
        object.__setattr__(self, "pool_size", check_int("pool_size", self.pool_size, low=0))
        for name in ("pool_every", "eval_every", "eval_envs", "eval_steps"):
            object.__setattr__(self, name, check_positive_int(name, getattr(self, name)))
        object.__setattr__(self, "average_decay", check_float("average_decay (0 = no parameter average)", self.average_decay, low=0.0, high=1.0, high_open=True))
        object.__setattr__(self, "pool_prob", check_float("pool_prob", self.pool_prob, low=0.0, high=1.0))
        if self.magnet not in MAGNETS:
            raise ValueError(f"magnet must be one of {MAGNETS}, got {self.magnet!r}")
        object.__setattr__(self, "magnet_weight", check_float("magnet_weight", self.magnet_weight, low=0.0, high=1.0))
        if self.magnet == "uniform" and self.magnet_weight != SelfPlayConfig.magnet_weight:
            raise ValueError(f"magnet_weight={self.magnet_weight} has no effect with magnet='uniform' "
                             "(the entropy bonus): set magnet='average'")
        if self.magnet == "average" and not self.average_decay:
            raise ValueError("magnet='average' pulls towards the parameter average: set average_decay in (0, 1)")
        if self.magnet == "average" and self.ppo.network.recurrent:
            raise ValueError("magnet='average' needs a feed-forward network (network.recurrent=False)")
        if self.pool_size and self.ppo.network.recurrent:
            raise ValueError("opponent pools need a feed-forward network (network.recurrent=False)")
        if isinstance(self.league, dict):
            try:
                object.__setattr__(self, "league", LeagueConfig(**self.league))
            except TypeError as e:  # an unknown key (the runner's config check names it first)
                raise ValueError(f"league: {e}") from None
        if isinstance(self.average_policy, dict):
            try:
                object.__setattr__(self, "average_policy", AveragePolicyConfig(**self.average_policy))
            except TypeError as e:
                raise ValueError(f"average_policy: {e}") from None
        if self.average_policy is not None:
            if not isinstance(self.average_policy, AveragePolicyConfig):
                raise ValueError("average_policy must be an AveragePolicyConfig, a mapping of its fields or None, "
                                 f"got {type(self.average_policy).__name__}")
            if self.ppo.network.recurrent:
                raise ValueError("average_policy needs a feed-forward network (network.recurrent=False)")
        if self.league is not None:
            if not isinstance(self.league, LeagueConfig):
                raise ValueError(f"league must be a LeagueConfig, a mapping of its fields or None, got {type(self.league).__name__}")
            if not self.pool_size:
                raise ValueError("league needs snapshots to draw: set pool_size > 0 (and pool_every)")
            if self.pool_prob != SelfPlayConfig.pool_prob:
                raise ValueError(f"pool_prob={self.pool_prob} has no effect with a league: its mix is "
                                 "league.self_play / league.pfsp / league.latest")

    @property
    def mix(self) -> LeagueConfig:
        """How the pool is used: the league, or the plain pool's ring-buffer configuration of it."""
        return self.league if self.league is not None else LeagueConfig.ring_buffer(self.pool_prob)

    @property
    def num_updates(self) -> int:
        """The run's updates: ``ppo.num_updates``."""
        return self.ppo.num_updates


@struct.dataclass
class SelfPlayExtra:
    """Self-play's part of ``TrainState.extra``, one field per partner part (None where
    the config leaves the part out): the opponent ``pool`` (``Pool``), the parameter
    ``average`` (a params tree), the league's payoff table (``league.LeagueState``; None
    also for the plain pool), the ``distilled`` average policy
    (``average_policy.AveragePolicy``) and the league's main ``exploiter``
    (``exploiter.Exploiter``). The field names are the checkpoint's: keep them."""

    pool: Pool | None = None
    average: dict | None = None
    league: LeagueState | None = None
    distilled: AveragePolicy | None = None
    exploiter: Exploiter | None = None


def merge(env):
    """The self-play view of ``env``: one role ``agents`` with a role id input."""
    flat = FlattenObservation(env)
    return MergeRoles(flat, {ROLE: list(flat.roles)})


# --------------------------------------------------------------------------- evaluation


def _random_opponent(state, ts, key):
    mask = ts.action_mask[ROLE]
    return jax.random.categorical(key, jnp.where(mask, 0.0, -jnp.inf)).astype(jnp.int32)


def scripted_opponents(merged) -> dict:
    """``{name: opponent_fn(state, timestep, key) -> i32[n]}``: a uniformly random
    player and every scripted player the game offers (``scripted_policies``)."""
    opp = {"random": _random_opponent}
    for name, policy in merged.scripted_policies().items():
        opp[name] = lambda state, ts, key, policy=policy: policy(state, key)[ROLE]
    return opp


def make_evaluate(agents, merged, env_params, opponents: dict, exact, num_envs: int, num_steps: int):
    """``evaluate(params, key) -> metrics``: sampled play of the learner against each
    scripted opponent, the learner in seat ``env_index % n``; plus the game's exact
    evaluation ``exact`` (``merged.exact_evaluation(env_params)``, or None)."""
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

    def evaluate_exact(params, prefix="eval/", weights=None):
        """The game's sampling-free measures of the shared policy ``params``; with
        ``weights`` ``f32[K]``, of the mixed strategy over the ``K`` stacked ``params``."""
        if exact is None:
            return {}
        if weights is None:
            out = exact({ROLE: agents.logits_fn(params, ROLE)})
        else:
            members = lambda obs: jax.vmap(lambda p: agents.logits_fn(p, ROLE)(obs))(params)  # [K, S, A]
            out = exact({ROLE: members}, weights)
        return {f"{prefix}{k}": v for k, v in out.items()}

    def evaluate(params, key):
        metrics = {}
        for k, (name, fn) in zip(jax.random.split(key, len(opponents)), opponents.items()):
            metrics.update({f"eval/{name}/{m}": v for m, v in play(params, fn, k).items()})
        return {**metrics, **evaluate_exact(params)}

    evaluate.exact = evaluate_exact
    return evaluate


# --------------------------------------------------------------------------- train


def partner_parts(cfg: SelfPlayConfig, agents: Agents, num_seats: int, data_axis: str | None = None,
                  data_shards: int = 1) -> list[Part]:
    """The partner parts ``cfg`` asks for (``partners.part``), in the order they update
    after each PPO step: the snapshot pool, then the league (it credits the rollout's
    games and reads the pool's new snapshots), the main exploiter (it fits the games
    the league drew), the parameter average, the distilled average policy."""
    parts = []
    if cfg.pool_size:
        pool = SnapshotPool(cfg.pool_size, cfg.pool_every)
        parts += [pool, League(cfg.mix, pool, cfg.ppo.num_envs, num_seats, data_axis, data_shards)]
        if cfg.mix.exploiter:
            parts.append(MainExploiter(cfg.mix.exploiter, agents, ROLE, cfg.pool_size, cfg.ppo.gamma, data_axis))
    if cfg.average_decay:
        parts.append(ParameterAverage(cfg.average_decay))
    if cfg.average_policy:
        parts.append(DistilledAverage(cfg.average_policy, agents, ROLE, data_axis))
    return parts


def make_train(config: SelfPlayConfig, env, *, env_params=None, callback=None, data_axis: str | None = None,
               data_shards: int = 1) -> Learner:
    """The self-play ``Learner`` on ``env`` (any environment whose roles have vector or
    grid observations and discrete actions): PPO on the merged view of ``env``
    (``learner.env``), extended with the partner parts (``partner_parts``) and the
    evaluation (``ppo.Extension``). ``TrainState.extra`` is a ``SelfPlayExtra``.
    ``data_axis``, ``data_shards``: environments split over devices (``ppo.make_train``)."""
    cfg = config
    env_params = env.default_params() if env_params is None else env_params
    merged = merge(env)
    agents = Agents(merged, cfg.ppo.network)
    n = merged.roles[ROLE].num_agents
    role_ids = np.zeros(n, np.int32)
    for i, sl in enumerate(merged.role_slices[ROLE].values()):
        role_ids[sl] = i
    num_roles = len(merged.groups[ROLE])
    exact = merged.exact_evaluation(env_params)
    evaluate = make_evaluate(agents, merged, env_params, scripted_opponents(merged), exact, cfg.eval_envs, cfg.eval_steps)
    parts = partner_parts(cfg, agents, n, data_axis, data_shards)
    league = next((p for p in parts if isinstance(p, League)), None)

    def init_extra(params, key):
        return part_lib.init(parts, SelfPlayExtra, params[ROLE], key)

    def evaluate_all(params, extra: SelfPlayExtra | None, key):
        metrics = evaluate(params, key)
        if extra is not None:
            metrics.update(part_lib.evaluate(parts, extra, evaluate.exact))
        return metrics

    def abstract_eval(k):
        params = agents.init(k)
        return evaluate_all(params[ROLE], init_extra(params, k), k)

    eval_shape = jax.eval_shape(abstract_eval, jax.random.key(0))

    def opponents(state, key, env_ids=None):
        opp, learner = league.opponents(state.extra, key, state.update, env_ids)
        return {ROLE: opp}, {ROLE: learner}

    def after_update(state, traj):
        extra, update_metrics = part_lib.after_update(parts, state.extra, state.params[ROLE], state.update, traj[ROLE])
        state = state.replace(extra=extra)
        due = (state.update % cfg.eval_every == 0) | (state.update == cfg.num_updates)
        k_eval = jax.random.fold_in(state.key, 7)
        metrics = jax.lax.cond(
            due,
            lambda: evaluate_all(state.params[ROLE], extra, k_eval),
            lambda: jax.tree.map(lambda s: jnp.full(s.shape, jnp.nan, s.dtype), eval_shape),
        )
        return state, {**update_metrics, **metrics}

    def evaluate_state(state, key):
        return evaluate_all(state.params[ROLE], state.extra, key)

    if "eval/exploitability" in eval_shape:
        fitness = Fitness(("eval/exploitability",), sign=-1.0)
    else:
        fitness = Fitness(tuple(f"eval/random/return/seat{s}" for s in range(n)))
    extension = ppo.Extension(
        agents=agents,
        role_ids=({ROLE: jnp.asarray(role_ids)}, num_roles),
        slot_names={ROLE: [r for r, sl in merged.role_slices[ROLE].items() for _ in range(sl.stop - sl.start)]},
        init_extra=init_extra,
        opponents=opponents if league else None,
        after_update=after_update,
        evaluate=evaluate_state,
        fitness=fitness,
        magnet=(lambda state: {ROLE: state.extra.average}) if cfg.magnet == "average" else None,
        magnet_weight=cfg.magnet_weight,
    )
    learner = ppo.make_train(cfg.ppo, merged, env_params=env_params, callback=callback, extension=extension,
                             data_axis=data_axis, data_shards=data_shards)
    return dataclasses.replace(learner, config=cfg)
