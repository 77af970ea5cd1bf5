"""Self-play of a language model: one shared model plays every seat of text games.

``make_train(config, env)`` returns a ``Learner`` (``jaxagents.learners.skeleton.interface``),
so seeds, populations, PBT, checkpoints, preemption and the run directory apply as to
every other learner. One update is one compiled call, read top to bottom:

1. **rollout**: for each game of the batch (the run's ``env`` and ``config.games``),
   ``num_envs`` games played to the end by the model in both seats, generation
   included (``jaxagents.lm.episode.play``; GRPO's groups of ``group_size`` games are
   dealt alike);
2. **advantages**: the turns split by seat into the ``[T, E, 2]`` samples of the vector
   learners, and the config's estimator from ``jaxagents.learners.policy_gradient.estimators``
   (``jaxagents.advantages``): RAE per (game, role), turn-level returns, GRPO, GiGPO,
   with ``none``/``batch``/``role`` normalisation (the config module's table says which
   system each setting is). Role ids are ``2 * game + seat``: baselines and per-role
   statistics are per (game, role). Every token of a reply gets its turn's advantage;
   turns of games unfinished within ``num_steps`` turns get weight 0;
3. **loss**: token-level policy gradient on the replies, scored under the distribution
   they were drawn from (``policy.reply_logprobs``): REINFORCE, ``-sum_tokens logp * A``,
   or PPO's clipped per-token ratio against the generation's own logprobs; minus
   ``ent_coef`` times the per-token entropy, plus ``kl_coef`` times the k3 estimate of
   the KL to a reference model: the frozen initial model, or a moving magnet: with
   ``kl_ref_rate > 0`` the trained weights' exponential average, with
   ``kl_ref_snapshots > 0`` the mixture of recent snapshots' strategies. Each term is a sum over a
   reply's tokens (no length normalisation, as SPIRAL) averaged over the turns trained on.

The train state (``LanguageTrainState``) holds the trainable weights (every weight, or
LoRA adapters with the frozen weights beside them), the optimiser state, the RAE table
and the key: checkpointed whole, a resumed run continues bit-identically.

Update metrics: ``loss``, ``pg_loss``, ``entropy``, ``kl``, ``grad_norm``;
``selfplay/...``: games finished, seat 0's return and win rate, draws, invalid-move rate,
mean reply length in tokens (SPIRAL's collapse signal), prompts cut, generated tokens.
Evaluation (every ``eval_every`` updates): the games' own exact or scripted measures
(``evaluations``; ``evaluation.game_evaluations``), and those of the ``held_out`` games,
which are evaluated only (``eval/heldout/...``: transfer in MARS's sense). The self-play statistics above are of
every update's own rollout, so no separate sampled self-play is evaluated.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import optax
from flax import struct

from jaxagents.learners.language import policy as policy_lib
from jaxagents.learners.language.config import LanguageSelfPlayConfig
from jaxagents.learners.policy_gradient import estimators
from jaxagents.learners.skeleton.interface import ConfigHParams, Fitness, Learner, hparam_space
from jaxagents.learners.skeleton.optim import make_optimizer
from jaxagents.learners.skeleton.rollout import Transition
from jaxagents.lm.episode import Turns, play
from jaxagents.lm.generate import Sampling

SEATS = "seats"  # the one role of the [T, E, 2] samples handed to the estimators
TEXT_GAME_ATTRS = ("piece_table", "capacity", "actions", "action_moves", "parse", "echo", "legal_actions", "step_move")


@struct.dataclass
class LanguageHParams(ConfigHParams):
    """The traced hyper-parameters (``f32[]`` each): a population may vary them."""

    lr: jax.Array
    max_grad_norm: jax.Array
    gamma: jax.Array
    clip_eps: jax.Array
    ent_coef: jax.Array
    kl_coef: jax.Array


RANGES = {"lr": (1e-5, 1e-2, "log"), "max_grad_norm": (0.1, 10.0, "log"), "gamma": (0.9, 1.0, "linear"),
          "clip_eps": (0.05, 0.5, "linear"), "ent_coef": (0.0, 0.1, "linear"), "kl_coef": (0.0, 1.0, "linear")}


@struct.dataclass
class LanguageTrainState:
    """What a language self-play run carries from update to update.

    Attributes:
        params: the trainable weights (every weight, or the LoRA adapters).
        frozen: the frozen weights under LoRA adapters (None without).
        reference: the KL's reference: the initial trainable weights, or with
            ``kl_ref_rate > 0`` their exponential average (the magnet), or with
            ``kl_ref_snapshots = K`` a ring of K snapshots stacked on a leading axis. None when
            ``kl_coef`` is 0, or under LoRA with a fixed reference (the frozen weights).
        opt_state: the optimiser's state.
        baseline: ``f32[1, 2 * num_games]`` the RAE table, one cell per (game, seat).
        key: the PRNG key of the next update.
        update: ``i32[]`` updates done; turns: ``i32[]`` turns played (``env_steps``).
    """

    params: Any
    frozen: Any
    reference: Any
    opt_state: Any
    baseline: jax.Array
    key: jax.Array
    update: jax.Array
    turns: jax.Array


def text_games(config: LanguageSelfPlayConfig, env, env_params) -> tuple[list, list]:
    """The games of a run: ``env`` and ``config.games`` (built with their kwargs), each
    checked to be a text game; ``(envs, env_params)``."""
    envs, params = make_games("games", config.games)
    return check_text_games([env, *envs]), [env.default_params() if env_params is None else env_params, *params]


def make_games(field: str, specs) -> tuple[list, list]:
    """The text games of ``specs`` (``(id, kwargs)`` pairs of the config field ``field``)
    and their default params, each checked to be a text game."""
    import jaxagents

    envs = []
    for gid, kwargs in specs:
        try:
            envs.append(jaxagents.make(gid, **dict(kwargs)))
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"{field}: cannot make {gid!r}: {e}") from None
    return check_text_games(envs), [g.default_params() for g in envs]


def check_text_games(envs: list) -> list:
    """``envs``, once each is found to be a text game (one line naming the first that is not)."""
    for e in envs:
        missing = [a for a in TEXT_GAME_ATTRS if not hasattr(e, a)]
        if missing:
            raise ValueError(f"{type(e).__name__} is not a text game (it lacks {missing}): the language learner plays "
                             "the text_* environments (`jaxagents list`)")
    return envs


def seat_samples(turns: Turns, game: int, group_size: int, anchors: bool) -> Transition:
    """One game's turns as the vector learners' samples ``[T, E, 2]`` (one slot per seat):
    a seat is active at its own turns, the rewards are each seat's, the episode return
    sits at the turn that ended the game, and ``start_hash`` names the deal group
    (``E // group_size`` groups of this game). With ``anchors`` the prompt is the
    observation (GiGPO's anchor states: equal prompts)."""
    k, b = turns.active.shape
    seat = jnp.arange(2)
    active = turns.active[..., None] & (turns.player[..., None] == seat)
    ended = turns.done & turns.active  # the turn a game ended (later turns are inactive padding)
    episode_return = jnp.where(ended[..., None], jnp.cumsum(turns.reward, axis=0), 0.0)
    done = jnp.broadcast_to(turns.done[..., None], active.shape)
    group = (jnp.uint32(game) * jnp.uint32(1_000_003) + (jnp.arange(b) // group_size).astype(jnp.uint32))
    obs = turns.prompt.astype(jnp.float32) if anchors else jnp.zeros((k, b, 1), jnp.float32)
    zeros = jnp.zeros(active.shape, jnp.float32)
    return Transition(obs=jnp.broadcast_to(obs[:, :, None], (k, b, 2, obs.shape[-1])), critic_in=None,
                      action=jnp.zeros(active.shape, jnp.int32), log_prob=zeros, value=zeros, mask=None,
                      reset=jnp.zeros(active.shape, bool), reward=turns.reward, terminated=done,
                      truncated=jnp.zeros(active.shape, bool), active=active, learner=jnp.ones(active.shape, bool),
                      final_value=zeros, episode_return=episode_return,
                      start_hash=jnp.broadcast_to(group[None, :, None], active.shape))


def selfplay_stats(turns: Turns) -> dict:
    """Summary of a batch of self-play turns (``[K, B]``): finished games, seat 0's mean
    return and win rate, draws, invalid moves per turn, mean reply length (tokens), prompts
    cut, tokens generated."""
    ended = turns.done & turns.active
    games = jnp.maximum(ended.sum(), 1)
    final = jnp.where(ended[..., None], jnp.cumsum(turns.reward, axis=0), 0.0).sum((0, 1))  # [2]
    won0 = jnp.sum(ended * (jnp.cumsum(turns.reward, axis=0)[..., 0] > jnp.cumsum(turns.reward, axis=0)[..., 1]))
    draws = jnp.sum(ended * (jnp.cumsum(turns.reward, axis=0)[..., 0] == jnp.cumsum(turns.reward, axis=0)[..., 1]))
    n_turns = jnp.maximum(turns.active.sum(), 1)
    tokens = turns.mask.sum()
    return {"games": ended.sum().astype(jnp.float32), "return_seat0": final[0] / games, "win_seat0": won0 / games,
            "draw": draws / games, "invalid_rate": turns.invalid.sum() / n_turns, "reply_tokens": tokens / n_turns,
            "overflow": turns.overflow.sum() / n_turns, "tokens": tokens.astype(jnp.float32)}


def make_train(config: LanguageSelfPlayConfig, env, *, env_params=None, callback=None, data_axis: str | None = None,
               data_shards: int = 1, evaluations=None) -> Learner:
    """The language self-play ``Learner`` on the text game ``env`` (plus ``config.games``).

    ``evaluations``: ``{name: fn(params, key) -> {metric: f32[]}}`` extra evaluations of
    the decoder's weights, reported as ``eval/{name}/{metric}`` (default: each game's own,
    ``jaxagents.learners.language.evaluation.game_evaluations``). ``data_axis``: not
    supported (one device per member; populations vmap members)."""
    cfg = config
    if data_axis is not None or data_shards != 1:
        raise ValueError("the language learner runs on one device per member: data_axis/data_shards are not supported "
                         "(a population vmaps or places whole members)")
    envs, env_params = text_games(cfg, env, env_params)
    held, held_params = make_games("held_out", cfg.held_out)  # evaluated only (their text joins the tokenizer's)
    policy = policy_lib.LanguagePolicy.build(cfg.model, envs + held)
    model = policy.cfg
    names = [f"{type(e).__name__}" if i == 0 else f"{type(e).__name__}{i}" for i, e in enumerate(envs)]
    # constrained replies where a game has move strings; a game of free-text moves (a
    # negotiation's offers) is always played with free replies
    constrained = [cfg.constrained and t.choices is not None for t in policy.tables]
    stop = tuple(t for t in (policy.tokenizer.eos_token_id,) if t is not None)
    sampling = Sampling(max_new_tokens=cfg.max_new_tokens, temperature=cfg.temperature, stop_token_ids=stop)
    num_games, B, K = len(envs), cfg.num_envs, cfg.num_steps
    role_ids = jnp.concatenate([jnp.broadcast_to(2 * g + jnp.arange(2), (B, 2)) for g in range(num_games)])
    anchors = cfg.advantage == "gigpo"
    normalize = None if cfg.normalize == "none" else cfg.normalize
    if evaluations is None:
        from jaxagents.learners.language.evaluation import game_evaluations

        evaluations = game_evaluations(policy, envs, env_params, cfg)
        evaluations.update(game_evaluations(policy, held, held_params, cfg, tables=policy.tables[num_games:],
                                            prefix="heldout/"))

    def rollout(params, key):
        keys = jax.random.split(key, num_games)
        return [play(params, model, e, t, k, B, sampling=sampling, max_turns=K, prompt_len=cfg.prompt_len,
                     prompt=policy.prompt, constrained=c, env_params=p, deal_groups=cfg.group_size)[0]
                for e, t, k, p, c in zip(envs, policy.tables[:num_games], keys, env_params, constrained)]

    def advantages(all_turns, baseline, hp):
        parts = [seat_samples(t, g, cfg.group_size, anchors) for g, t in enumerate(all_turns)]
        traj = jax.tree.map(lambda *x: jnp.concatenate(x, axis=1), *parts)  # games side by side: [K, E, 2]
        out, baseline = estimators.compute(
            cfg.advantage, {SEATS: traj}, {SEATS: jnp.zeros((B * num_games, 2))}, {SEATS: role_ids}, baseline,
            gamma=hp.gamma, gae_lambda=jnp.ones(()), rae_alpha=cfg.rae_alpha, gigpo_omega=cfg.gigpo_omega,
            normalize=normalize)
        adv = out[SEATS]
        # each turn's own seat: its advantage and whether it is trained on
        per_turn = []
        for g, t in enumerate(all_turns):
            cols = slice(g * B, (g + 1) * B)
            own = t.player[..., None] == jnp.arange(2)
            per_turn.append((jnp.sum(jnp.where(own, adv.advantage[:, cols], 0.0), -1),
                             jnp.any(own & adv.weight[:, cols], -1)))
        return per_turn, baseline

    def init(key, hparams=None):
        k_model, k_next = jax.random.split(key)
        trainable, frozen = policy.init(k_model)
        hp = default_hparams if hparams is None else hparams
        tx = make_optimizer(hp, jnp.ones(()), cfg.optimizer)
        moving = cfg.kl_ref_rate > 0 or cfg.kl_ref_snapshots > 0
        reference = trainable if cfg.kl_coef > 0 and (frozen is None or moving) else None
        if cfg.kl_ref_snapshots:
            reference = jax.tree.map(lambda x: jnp.stack([x] * cfg.kl_ref_snapshots), reference)
        return LanguageTrainState(params=trainable, frozen=frozen, reference=reference, opt_state=tx.init(trainable),
                                  baseline=jnp.zeros((1, 2 * num_games), jnp.float32), key=k_next,
                                  update=jnp.zeros((), jnp.int32), turns=jnp.zeros((), jnp.int32))

    def score(trainable, frozen, batch):
        """Per game: ``(logprobs, entropy)`` ``[S, N]`` of the batch's replies."""
        params = policy.params(trainable, frozen)
        return [policy_lib.reply_logprobs(params, model, t, cfg.temperature, tab.choices if c else None)
                for t, tab, c in zip(batch, policy.tables, constrained)]

    def loss_fn(trainable, frozen, batch, adv, weight, reference_lp, hp, total=None):
        # total: the whole update's trained turns when ``batch`` is one of grad_chunks pieces
        scored = score(trainable, frozen, batch)
        pg = ent = kl = 0.0
        count = 0.0
        for (lp, h), t, a, w, ref in zip(scored, batch, adv, weight, reference_lp):
            m = t.mask.reshape(lp.shape) & w.reshape(-1)[:, None]
            old = jnp.where(m, t.logprobs.reshape(lp.shape), 0.0)  # (finished games' padding turns hold NaN)
            a = a.reshape(-1)[:, None]
            if cfg.loss == "ppo":
                ratio = jnp.exp(lp - old)
                term = -jnp.minimum(ratio * a, jnp.clip(ratio, 1 - hp.clip_eps, 1 + hp.clip_eps) * a)
            else:
                term = -lp * a
            pg = pg + jnp.sum(jnp.where(m, term, 0.0))
            ent = ent + jnp.sum(jnp.where(m, h, 0.0))
            if ref is not None:
                d = jnp.where(m, ref - lp, 0.0)
                kl = kl + jnp.sum(jnp.where(m, jnp.exp(d) - d - 1.0, 0.0))
            count = count + jnp.sum(w)
        count = jnp.maximum(count if total is None else total, 1.0)
        loss = (pg - hp.ent_coef * ent + hp.kl_coef * kl) / count
        return loss, {"pg_loss": pg / count, "entropy": ent / count, "kl": kl / count}

    def update(state: LanguageTrainState, hparams=None):
        hp = default_hparams if hparams is None else hparams
        key, k_play, k_perm = jax.random.split(state.key, 3)
        params = policy.params(state.params, state.frozen)
        all_turns = rollout(params, k_play)
        per_turn, baseline = advantages(all_turns, state.baseline, hp)
        flat = [jax.tree.map(lambda x: x.reshape((K * B,) + x.shape[2:]), t) for t in all_turns]
        adv = [a.reshape(-1) for a, _ in per_turn]
        weight = [w.reshape(-1) for _, w in per_turn]
        if cfg.kl_coef > 0:  # the reference model's scores, once per update
            # LoRA with a fixed reference: the frozen weights alone (the adapters start at zero)
            def ref_scores(weights, t, tab, c):
                ref_params = state.frozen if weights is None else policy.params(weights, state.frozen)
                return policy_lib.reply_logprobs(ref_params, model, t, cfg.temperature, tab.choices if c else None)[0]

            if cfg.kl_ref_snapshots:  # the snapshots' strategies mixed, one model at a time
                reference_lp = [policy_lib.mixture_logprobs(jax.lax.map(lambda w: ref_scores(w, *g), state.reference))
                                for g in zip(flat, policy.tables, constrained)]
            else:
                reference_lp = [ref_scores(state.reference, *g) for g in zip(flat, policy.tables, constrained)]
            reference_lp = jax.lax.stop_gradient(reference_lp)
        else:
            reference_lp = [None] * num_games
        lr_scale = 1.0 - state.update / num_updates if cfg.anneal_lr else 1.0  # linearly to 0 over the run
        tx = make_optimizer(hp, lr_scale, cfg.optimizer)
        mb = K * B // cfg.num_minibatches

        def epoch(carry, k):
            trainable, opt_state = carry
            order = jax.random.permutation(k, K * B)
            take = lambda x: x[order].reshape((cfg.num_minibatches, mb) + x.shape[1:])  # noqa: E731
            data = jax.tree.map(take, (flat, adv, weight, reference_lp))

            def step(carry, batch):
                trainable, opt_state = carry
                b_turns, b_adv, b_w, b_ref = batch
                (loss, aux), grads = jax.value_and_grad(loss_fn, has_aux=True)(
                    trainable, state.frozen, b_turns, b_adv, b_w, b_ref, hp)
                updates, opt_state = tx.update(grads, opt_state, trainable)
                return (optax.apply_updates(trainable, updates), opt_state), {
                    "loss": loss, "grad_norm": optax.global_norm(grads), **aux}

            return jax.lax.scan(step, (trainable, opt_state), data)

        if cfg.loss == "ppo":
            (trainable, opt_state), stats = jax.lax.scan(epoch, (state.params, state.opt_state),
                                                         jax.random.split(k_perm, cfg.update_epochs))
        elif cfg.grad_chunks == 1:  # one full-batch step, in the rollout's order
            (loss, aux), grads = jax.value_and_grad(loss_fn, has_aux=True)(
                state.params, state.frozen, flat, adv, weight, reference_lp, hp)
        else:  # the same step, its loss and gradient summed over pieces of the turns
            total = sum(jnp.sum(w) for w in weight).astype(jnp.float32)
            piece = lambda x: x.reshape((cfg.grad_chunks, K * B // cfg.grad_chunks) + x.shape[1:])  # noqa: E731
            pieces = jax.tree.map(piece, (flat, adv, weight, reference_lp))

            def add_piece(acc, batch):
                out = jax.value_and_grad(loss_fn, has_aux=True)(state.params, state.frozen, *batch, hp, total)
                return jax.tree.map(jnp.add, acc, out), None

            zero = jax.tree.map(jnp.zeros_like, jax.eval_shape(
                lambda: jax.value_and_grad(loss_fn, has_aux=True)(
                    state.params, state.frozen, *jax.tree.map(lambda x: x[0], pieces), hp, total)))
            ((loss, aux), grads), _ = jax.lax.scan(add_piece, zero, pieces)
        if cfg.loss != "ppo":
            updates, opt_state = tx.update(grads, state.opt_state, state.params)
            trainable = optax.apply_updates(state.params, updates)
            stats = {"loss": loss, "grad_norm": optax.global_norm(grads), **aux}
        stats = jax.tree.map(jnp.mean, stats)
        played = sum(t.active.sum() for t in all_turns).astype(jnp.int32)
        if cfg.kl_ref_rate > 0:  # the magnet follows the iterates
            state = state.replace(reference=optax.incremental_update(trainable, state.reference, cfg.kl_ref_rate))
        if cfg.kl_ref_snapshots:  # every kl_ref_every updates the oldest snapshot gives way to the weights
            done = state.update + 1
            slot, due = (done // cfg.kl_ref_every) % cfg.kl_ref_snapshots, done % cfg.kl_ref_every == 0
            state = state.replace(reference=jax.tree.map(lambda r, p: jnp.where(due, r.at[slot].set(p), r),
                                                         state.reference, trainable))
        state = state.replace(params=trainable, opt_state=opt_state, baseline=baseline, key=key,
                              update=state.update + 1, turns=state.turns + played)
        metrics = {"update": state.update.astype(jnp.float32), "env_steps": state.turns.astype(jnp.float32), **stats}
        for name, t in zip(names, all_turns):
            prefix = "selfplay/" if num_games == 1 else f"selfplay/{name}/"
            metrics.update({prefix + k: v for k, v in selfplay_stats(t).items()})
        metrics["episodes"] = sum(metrics[k] for k in metrics if k.endswith("games") and k.startswith("selfplay/"))
        due = (state.update % cfg.eval_every == 0) | (state.update == num_updates)
        k_eval = jax.random.fold_in(state.key, 7)
        evaluation = jax.lax.cond(due, lambda: evaluate(state, k_eval),
                                  lambda: jax.tree.map(lambda s: jnp.full(s.shape, jnp.nan, s.dtype), eval_shape))
        if callback is not None:
            jax.debug.callback(callback, state.update, metrics)
        return state, {**metrics, **evaluation}

    def evaluate(state: LanguageTrainState, key):
        params = policy.params(state.params, state.frozen)
        out = {}
        for k, (name, fn) in zip(jax.random.split(key, max(len(evaluations), 1)), evaluations.items()):
            out.update({f"eval/{name}/{m}": v for m, v in fn(params, k).items()})
        return out

    default_hparams = LanguageHParams.from_config(cfg)
    num_updates = cfg.num_updates
    eval_shape = jax.eval_shape(lambda k: evaluate(init(k), k), jax.random.key(0))
    # minus the exploitability where a trained game has one; else the mean of its evaluations' win rates
    trained = [k for k in eval_shape if not k.startswith("eval/heldout/")]
    exploit = sorted(k for k in trained if k.endswith("/exploitability"))
    wins = sorted(k for k in trained if k.endswith("/win"))
    fitness = (Fitness((exploit[0],), sign=-1.0) if exploit else Fitness(tuple(wins)) if wins
               else Fitness(("episodes",)))
    return Learner(init=init, update=update, evaluate=evaluate, default_hparams=default_hparams,
                   hparam_space=hparam_space(RANGES, cfg), fitness=fitness, config=cfg, env=env,
                   env_params=env_params[0], num_updates=num_updates, agents=policy)
