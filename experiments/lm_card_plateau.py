"""Why the tiny language model of text Kuhn poker stays card-blind: two noise-free probes.

Self-play of the from-scratch decoder (``baselines/configs/lm_selfplay_kuhn.yaml``)
reaches exploitability 1/3 -- the same move probabilities for the Jack, the Queen and the
King -- and stays there. Is that sampling noise, or can the model not find its card? Both
probes use the model, tokenizer and prompts of that baseline (Kuhn's 12 information
states rendered to the text the model reads, replies constrained to the legal moves) and
no sampling at all:

* ``supervised``: the constrained log-likelihood of a card-dependent strategy (bet or
  call with the King, check or fold otherwise), full batch. Says how many Adam steps
  the architecture needs to read its card when told exactly what to do.
* ``selfplay``: the exact self-play policy gradient. The strategy table is read from the
  model; each seat ascends its exact expected payoff against the other seat's stopped
  strategy (``jaxagents.evaluation.exploitability.policy_value``), plus an optional
  entropy bonus. This is the expected value of the learner's REINFORCE gradient with
  the noise of sampled games removed.

``--average K`` (``selfplay``) also keeps two averages of the iterates from step ``K``
on and reports their exploitability: the uniform average of the model's parameters (a
Polyak average, what a learner would deploy) and the average strategy (the mixture of
the iterates' strategies, ``mixture_policy``: what no-regret dynamics converge in).

``--magnet C`` (``selfplay``) subtracts ``C`` times the KL divergence of the model's
strategy from a *magnet* strategy at every information state, the regulariser of
magnetic mirror descent (Sokota et al., 2023), whose iterates converge in two-player
zero-sum games where plain gradient play cycles. With ``--magnet-rate r`` the magnet
follows the iterates, ``rho <- (1 - r) rho + r pi`` after every step (stopped gradient),
so its fixed point is the unregularised game's equilibrium rather than a quantal
response one; ``r = 0`` keeps it at the initial strategy. ``--magnet-space params``
averages the model's *parameters* instead and reads the magnet's strategy from the
averaged model -- what the learner's ``kl_ref_rate`` does, where the KL's reference is a
model, not a table.

``--games N`` (``selfplay``) replaces the exact gradient with the learner's estimate of it:
every step plays ``N`` games from the current strategy (the deal by chance, each move
drawn from the model's constrained move probabilities) and ascends the REINFORCE
surrogate ``sum over the moves played of A log pi(move | I) / N``, ``A`` the mover's
chips minus a baseline (``--baseline``: none, each seat's mean in the batch, or with
``--group G`` each seat's mean over the ``G`` games dealt the same cards: GRPO's groups). Its
expectation is the exact probe's gradient; it differs by the noise of ``N`` sampled games
only, so it separates the plateau of the exact dynamic from the one sampling adds, at
the cost of the 12 prompts whatever ``N`` is.

``--pretrain N`` first trains the model for ``N`` steps of next-token prediction on the
game's own transcripts: both players' last observations of every deal and every betting
sequence (60 texts), each ending with the showdown line that names both cards -- text in
which predicting a card means reading it (a from-scratch stand-in for a pretrained
model's reading).

Each prints the exact exploitability (``selfplay``) or the target strategy's smallest
probability (``supervised``) every ``--every`` steps and, with ``--json``, writes them.

    python experiments/lm_card_plateau.py selfplay --lr 1e-3 --ent 0.02 --steps 500
    python experiments/lm_card_plateau.py selfplay --lr 1e-3 --lr-end 1e-4 --ent 0.02 --steps 600
    python experiments/lm_card_plateau.py selfplay --lr 1e-3 --ent 0.02 --steps 600 --average 150
    python experiments/lm_card_plateau.py selfplay --lr 1e-3 --ent 0.02 --steps 600 --magnet 0.1 --magnet-rate 0.02
    python experiments/lm_card_plateau.py selfplay --lr 1e-3 --ent 0.02 --steps 600 --games 64
    python experiments/lm_card_plateau.py supervised --lr 1e-3 --steps 100
"""

from __future__ import annotations

import argparse
import json
import os
import time
import types

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxagents.core.registry import make
from jaxagents.evaluation.exploitability import exploitability, normalize_policy, own_reach, policy_value
from jaxagents.learners.language.config import ModelSpec
from jaxagents.learners.language.policy import LanguagePolicy, reply_logprobs
from jaxagents.lm.episode import Prompt, echo_slots, prompt_tokens, slot_width
from jaxagents.lm.evaluate import exact_prompts
from jaxagents.lm.model import init_params, logits_at
from jaxagents.outputs import check_outputs
from jaxagents.tracking import atomic_write

KING = 2


def kuhn():
    """The baseline's game: one hand of text Kuhn poker paid in chips."""
    return make("text_kuhn_poker", max_rounds=1, payoff="chips")


def transcripts(env, policy, exact, max_new_tokens: int = 4, max_len: int = 400) -> tuple[np.ndarray, np.ndarray]:
    """``(ids i32[T, L], length i32[T])``: both players' observations at the end of
    every deal and every betting sequence of a hand (``T = 2 * 6 * 5``), replies echoed as
    constrained replies are."""
    tables = policy.tables[0]
    choices, n = tables.choices, max_new_tokens
    width = slot_width(tables, n)
    said = jnp.pad(choices.ids, ((0, 0), (0, max(0, n - choices.ids.shape[1]))))[:, :n]
    shape = (env.num_slots, len(env.piece_table.slot_variants))

    def render(deal, history):
        state, _ = env.reset_with_deals(deal)

        def step(carry, move):
            state, utt, utt_len = carry
            go, m = (move >= 0) & ~state.done, jnp.maximum(move, 0)
            slots, slot_len, _, _ = echo_slots(env, tables, said[m][None], (jnp.arange(n) < choices.length[m])[None],
                                               width)
            new, ts = env.step_move(jax.random.PRNGKey(0), state, m)
            u, write = jnp.clip(ts.info["utterance"], 0, shape[0] - 1), go & (ts.info["utterance"] >= 0)
            utt = jnp.where(write, utt.at[u].set(slots[0]), utt)
            utt_len = jnp.where(write, utt_len.at[u].set(slot_len[0]), utt_len)
            return (jax.tree_util.tree_map(lambda a, b: jnp.where(go, a, b), new, state), utt, utt_len), None

        init = (state, jnp.zeros(shape + (width,), jnp.int32), jnp.zeros(shape, jnp.int32))
        (state, utt, utt_len), _ = jax.lax.scan(step, init, history)
        obs = env.observations(state)
        both = [prompt_tokens(env, tables, Prompt(), obs[p], utt, utt_len, max_len) for p in range(2)]
        return jnp.stack([b[0] for b in both]), jnp.stack([b[1] for b in both]), state.done

    # every deal of one hand: the two seats' cards, distinct (0 = J, 1 = Q, 2 = K)
    deals = np.array([[[a, b]] for a in range(3) for b in range(3) if a != b], np.int32)
    # check-check, check-bet-fold, check-bet-call, bet-fold, bet-call (move codes: check, bet, call, fold)
    bets = np.array([[0, 0, -1], [0, 1, 3], [0, 1, 2], [1, 3, -1], [1, 2, -1]], np.int32)
    ids, length, done = jax.device_get(jax.jit(jax.vmap(render))(
        jnp.asarray(np.repeat(deals, len(bets), 0)), jnp.asarray(np.tile(bets, (len(deals), 1)))))
    if not done.all():
        raise RuntimeError("a betting sequence did not end the hand")
    ids, length = ids.reshape(-1, ids.shape[-1]), length.reshape(-1)
    return ids[:, : int(length.max())], length


def kuhn_rows(max_new_tokens: int = 4, prompt_len: int = 320):
    """The baseline's policy and one scoring row per (information state, legal move):
    ``(policy, exact, turns, rows_s, rows_a)``, ``turns`` shaped as
    ``reply_logprobs`` reads them (``K = 1``, ``B`` = rows)."""
    env = kuhn()
    policy = LanguagePolicy.build(ModelSpec(), [env])
    exact, tables = env.exact_game(), policy.tables[0]
    ids, length = exact_prompts(env, tables, exact, max_new_tokens=max_new_tokens, prompt_len=prompt_len)
    num_states, num_moves = len(exact.names), tables.choices.ids.shape[0]
    allowed = np.zeros((num_states, num_moves), bool)
    for s in range(num_states):
        allowed[s, exact.moves[s][exact.moves[s] >= 0]] = True
    rows_s, rows_a = np.nonzero(exact.moves >= 0)
    move = exact.moves[rows_s, rows_a]
    reply = np.asarray(tables.choices.ids)[move]
    width = reply.shape[1]
    turns = types.SimpleNamespace(
        prompt=jnp.asarray(ids[rows_s])[None], prompt_length=jnp.asarray(length[rows_s])[None],
        tokens=jnp.asarray(reply)[None],
        mask=jnp.asarray(np.arange(width)[None] < np.asarray(tables.choices.length)[move][:, None])[None],
        allowed=jnp.asarray(allowed[rows_s])[None])
    return policy, exact, turns, rows_s, rows_a


def strategy(params, policy, exact, turns, rows_s, rows_a):
    """``(table f32[S, A], entropy f32[])``: the constrained move probabilities at every
    information state (differentiable) and the mean per-token entropy of the rows."""
    logp, entropy = reply_logprobs(params, policy.cfg, turns, 1.0, policy.tables[0].choices)
    table = jnp.zeros(exact.moves.shape).at[rows_s, rows_a].set(jnp.exp(logp.sum(1)))
    return table, entropy.sum(1).mean()


def card_target(exact, rows_s, rows_a) -> np.ndarray:
    """``bool[rows]``: the rows of a card-dependent strategy -- the aggressive move (bet,
    call: the tree's second action) with the King, the passive one otherwise."""
    card = np.array([int(name[0]) for name in exact.names])
    return (card[rows_s] == KING) == (rows_a == 1)


@jax.jit
def accumulate(tree, avg, params, table, n):
    """Adds the ``n``-th iterate (its parameters and strategy table ``f32[S, A]``) to
    ``avg = (parameter mean, num f32[S, A], den f32[S])``: the running mean of the
    parameters, and the sums ``sum_t x_t(I) pi_t(a|I)`` and ``sum_t x_t(I)`` (``x`` the
    owner's own reach) whose ratio is the average strategy."""
    mean, num, den = avg
    sigma = normalize_policy(tree, table)
    x = own_reach(tree, sigma)
    mean = jax.tree_util.tree_map(lambda m, p: m + (p - m) / n, mean, params)
    return mean, num + x[:, None] * sigma, den + x


def magnet_kl(tree, table, magnet):
    """``f32[]``: ``sum_I KL(pi(.|I) || rho(.|I))`` over the information states, ``pi``
    the strategy ``table`` (``f32[S, A]``, differentiable) and ``rho`` the magnet (same
    shape, normalised, held fixed); illegal moves contribute nothing."""
    pi = normalize_policy(tree, table)
    rho = jax.lax.stop_gradient(magnet)
    log_ratio = jnp.log(jnp.maximum(pi, 1e-30)) - jnp.log(jnp.maximum(rho, 1e-30))
    return jnp.where(tree.legal & (pi > 0), pi * log_ratio, 0.0).sum()


def sample_visits(tree, sigma, key, num_games: int, group: int = 1) -> tuple[jax.Array, jax.Array]:
    """Plays ``num_games`` games of ``tree`` with the behavioural strategy ``sigma``
    (``f32[S, A]``, normalised): ``(visits f32[G, S, A], payoff f32[G, 2])``, how often each
    game took move ``A`` at information state ``S`` and what each player won. Each run of
    ``group`` consecutive games shares one deal (GRPO's groups)."""
    roots = jnp.asarray(np.nonzero(np.asarray(tree.parent) < 0)[0])
    log_chance = jnp.log(tree.chance[roots])
    sigma = jnp.asarray(sigma)
    num_s, num_a = sigma.shape

    def one(k, node):
        k, pick = jax.random.split(k)
        node = roots[jax.random.categorical(pick, log_chance)] if node is None else node

        def move(_, carry):
            node, visits, k = carry
            k, pick = jax.random.split(k)
            s = tree.infostate[node]
            acting = s >= 0
            logits = jnp.where(tree.legal[jnp.maximum(s, 0)], jnp.log(jnp.maximum(sigma[jnp.maximum(s, 0)], 1e-30)),
                               -jnp.inf)
            a = jax.random.categorical(pick, logits)
            visits = visits.at[jnp.maximum(s, 0), a].add(acting.astype(jnp.float32))
            return jnp.where(acting, tree.children[node, a], node), visits, k

        node, visits, _ = jax.lax.fori_loop(0, len(tree.levels), move, (node, jnp.zeros((num_s, num_a)), k))
        return visits, tree.payoff[node]

    if group == 1:  # each game dealt on its own
        return jax.vmap(lambda k: one(k, None))(jax.random.split(key, num_games))
    k_deal, key = jax.random.split(key)
    deals = jnp.repeat(roots[jax.random.categorical(k_deal, log_chance, shape=(num_games // group,))], group)
    return jax.vmap(one)(jax.random.split(key, num_games), deals)


def sampled_weights(tree, visits, payoff, baseline: str, group: int = 1) -> jax.Array:
    """``f32[S, A]``: the REINFORCE surrogate's weight of ``log pi(a|I)``: the mean over
    games of each visit times the mover's advantage: its chips, less its seat's batch mean
    (``baseline="mean"``) or its seat's mean over the ``group`` games of its deal
    (``"group"``: GRPO without the division by the standard deviation)."""
    if baseline == "group":
        by_deal = payoff.reshape(-1, group, 2)
        adv = (by_deal - by_deal.mean(1, keepdims=True)).reshape(payoff.shape)
    else:
        adv = payoff - payoff.mean(0, keepdims=True) if baseline == "mean" else payoff  # [G, 2]
    mover_adv = adv[:, jnp.asarray(np.asarray(tree.infostate_player))]  # [G, S]
    return (visits * mover_adv[:, :, None]).mean(0)


def average_strategy(tree, avg):
    """``f32[S, A]``: the behavioural strategy of the uniform mixture of the iterates
    ``accumulate`` added (``mixture_policy``'s, computed from running sums)."""
    _, num, den = avg
    return normalize_policy(tree, num / jnp.maximum(den, 1e-30)[:, None])


def pretrain(params, policy, texts, steps: int, lr: float):
    """``steps`` full-batch Adam steps of next-token prediction on ``texts`` (``(ids, length)``)."""
    ids, length = jnp.asarray(texts[0]), jnp.asarray(texts[1])
    t = ids.shape[1]
    at = jnp.broadcast_to(jnp.arange(t - 1)[None], (ids.shape[0], t - 1))
    real = jnp.arange(1, t)[None] < length[:, None]

    def loss(p):
        logp = jax.nn.log_softmax(logits_at(p, policy.cfg, ids, at), -1)
        nll = -jnp.take_along_axis(logp, ids[:, 1:, None], -1)[..., 0]
        return jnp.sum(nll * real) / jnp.sum(real)

    opt = optax.adam(lr)

    @jax.jit
    def step(p, s):
        value, grad = jax.value_and_grad(loss)(p)
        updates, s = opt.update(grad, s, p)
        return optax.apply_updates(p, updates), s, value

    opt_state = opt.init(params)
    for i in range(steps):
        params, opt_state, value = step(params, opt_state)
        if i % 50 == 0 or i == steps - 1:
            print(f"pretrain {i:4d}  next-token loss {float(value):.3f}", flush=True)
    return params


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("probe", choices=("supervised", "selfplay"))
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--lr-end", type=float, default=None, help="anneal the step linearly to this (default: constant)")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--ent", type=float, default=0.0, help="entropy bonus (selfplay)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--pretrain", type=int, default=0, help="next-token steps on the game's transcripts first")
    ap.add_argument("--average", type=int, default=None, metavar="K",
                    help="selfplay: also report the parameter average and the average strategy of steps K on")
    ap.add_argument("--magnet", type=float, default=0.0, help="selfplay: KL weight to the magnet strategy")
    ap.add_argument("--magnet-rate", type=float, default=0.0,
                    help="selfplay: the magnet moves this fraction of the way to the iterate every step")
    ap.add_argument("--magnet-space", choices=("strategy", "params"), default="strategy",
                    help="selfplay: average strategies or the model's parameters into the magnet")
    ap.add_argument("--games", type=int, default=0,
                    help="selfplay: estimate the gradient from this many sampled games a step (default: exact)")
    ap.add_argument("--baseline", choices=("none", "mean", "group"), default="none",
                    help="selfplay with --games: the advantage's baseline "
                         "(group: the mean of the deal's --group games)")
    ap.add_argument("--group", type=int, default=1, help="selfplay with --games: games dealt alike")
    ap.add_argument("--every", type=int, default=10)
    ap.add_argument("--json", help="write the curve here (a new file)")
    args = check_outputs(ap.parse_args())
    if args.average is not None and (args.probe != "selfplay" or not 0 <= args.average < args.steps):
        raise SystemExit(f"--average must be a step in [0, --steps) of the selfplay probe, got {args.average}")
    if args.magnet < 0 or not 0 <= args.magnet_rate <= 1 or (args.magnet and args.probe != "selfplay"):
        raise SystemExit(f"--magnet must be >= 0 (selfplay only) and --magnet-rate in [0, 1], got "
                         f"{args.magnet}, {args.magnet_rate}")
    if args.games < 0 or (args.games and args.probe != "selfplay"):
        raise SystemExit(f"--games must be >= 0 (selfplay only), got {args.games}")
    if args.group < 1 or (args.games % args.group) or ((args.baseline == "group") != (args.group > 1)):
        raise SystemExit(f"--group must divide --games and go with --baseline group, got {args.group} "
                         f"({args.games} games, baseline {args.baseline})")
    if args.json and os.path.exists(args.json):
        raise SystemExit(f"--json {args.json!r} exists; name a new file")

    policy, exact, turns, rows_s, rows_a = kuhn_rows()
    tree = exact.tree
    owner = jnp.asarray(np.asarray(tree.infostate_player))
    target = jnp.asarray(card_target(exact, rows_s, rows_a))

    def objective(params, magnet, key):
        table, entropy = strategy(params, policy, exact, turns, rows_s, rows_a)
        if args.probe == "supervised":
            picked = jnp.where(target, jnp.log(table[rows_s, rows_a] + 1e-30), 0.0)
            return picked.sum() / target.sum(), table
        if args.games:
            sigma = normalize_policy(tree, table)
            visits, payoff = sample_visits(tree, jax.lax.stop_gradient(sigma), key, args.games, args.group)
            weight = sampled_weights(tree, visits, payoff, args.baseline, args.group)
            value = jnp.sum(jnp.where(weight != 0, weight * jnp.log(jnp.maximum(sigma, 1e-30)), 0.0))
        else:
            value = sum(policy_value(tree, jnp.where((owner == i)[:, None], table, jax.lax.stop_gradient(table)))[i]
                        for i in range(2))
        return value + args.ent * entropy - args.magnet * magnet_kl(tree, table, magnet), table

    lr = args.lr if args.lr_end is None else optax.linear_schedule(args.lr, args.lr_end, args.steps)
    opt = optax.adam(lr)

    @jax.jit
    def step(params, opt_state, magnet, key):
        # magnet: a strategy table f32[S, A], or (--magnet-space params) a parameter tree
        rho = magnet if args.magnet_space == "strategy" else normalize_policy(tree, table_of(magnet))
        (_, table), grad = jax.value_and_grad(objective, has_aux=True)(params, rho, key)
        updates, opt_state = opt.update(jax.tree_util.tree_map(jnp.negative, grad), opt_state, params)
        params = optax.apply_updates(params, updates)
        if args.magnet_space == "strategy":
            magnet = (1.0 - args.magnet_rate) * magnet + args.magnet_rate * normalize_policy(tree, table)
        else:
            magnet = optax.incremental_update(params, magnet, args.magnet_rate)
        return params, opt_state, magnet

    table_of = jax.jit(lambda p: strategy(p, policy, exact, turns, rows_s, rows_a)[0])
    measure = jax.jit(lambda t: exploitability(tree, t) if args.probe == "selfplay"
                      else jnp.min(jnp.where(target, t[rows_s, rows_a], 1.0)))
    params = init_params(policy.cfg, jax.random.PRNGKey(args.seed))
    games_key = jax.random.PRNGKey(args.seed + 1)
    start = time.time()
    if args.pretrain:
        params = pretrain(params, policy, transcripts(kuhn(), policy, exact), args.pretrain, args.lr)
    opt_state = opt.init(params)
    magnet = normalize_policy(tree, table_of(params)) if args.magnet_space == "strategy" else params

    avg, n_avg = None, 0
    curve, averaged = [], []
    for i in range(args.steps + 1):
        if args.average is not None and i >= args.average:
            if avg is None:
                avg = (params, jnp.zeros(exact.moves.shape), jnp.zeros(exact.moves.shape[0]))
            n_avg += 1
            avg = accumulate(tree, avg, params, table_of(params), n_avg)
        if i % args.every == 0 or i == args.steps:
            table = table_of(params)
            curve.append((i, float(measure(table))))
            line = (f"step {i:4d}  {'exploitability' if args.probe == 'selfplay' else 'min target prob'} "
                    f"{curve[-1][1]:.4f}")
            if avg is not None:
                averaged.append((i, float(measure(table_of(avg[0]))), float(measure(average_strategy(tree, avg)))))
                line += f"  parameter average {averaged[-1][1]:.4f}  average strategy {averaged[-1][2]:.4f}"
            print(f"{line}  {time.time() - start:.0f}s", flush=True)
        if i < args.steps:
            params, opt_state, magnet = step(params, opt_state, magnet, jax.random.fold_in(games_key, i))
    np.set_printoptions(precision=2, suppress=True)
    print("final strategy (rows:", ", ".join(exact.names), ")\n", np.asarray(table))
    if args.json:
        atomic_write(args.json, json.dumps({"probe": args.probe, "pretrain": args.pretrain, "lr": args.lr,
                                            "lr_end": args.lr_end, "ent": args.ent, "seed": args.seed,
                                            "magnet": args.magnet, "magnet_rate": args.magnet_rate,
                                            "magnet_space": args.magnet_space,
                                            "games": args.games, "baseline": args.baseline, "group": args.group,
                                            "curve": curve, "average_from": args.average,
                                            "averaged": averaged}))


if __name__ == "__main__":
    main()
