"""Exact evaluation of a language policy in a small card game, as a function of its weights.

With its replies constrained to the legal moves' strings (``Choices``), a language model
is a behavioural strategy whose move probabilities can be read exactly: at an
information state, the probability of a move is the product of the probabilities of
its string's tokens, each renormalised over the tokens that continue a legal move's
string -- exactly how ``generate(..., choices=...)`` draws it, after the same
temperature and top-k/top-p filters (``Sampling``; temperature 0 is the greedy move).
If every information state of the game can be rendered to the prompt the policy sees,
the whole strategy table follows from one batched forward pass, and its exploitability
from ``jaxagents.evaluation.exploitability``.

A text game offers that as its ``exact_game()`` capability (``ExactGame``: the game
tree the evaluation scores, and for each information state a deal and the moves that
lead there). ``make_exact_evaluator`` renders every information state once, on the
host, into the prompt ``play`` would build (``prompt_tokens``, ``echo_slots``: the same
functions; earlier replies echo their canonical move strings as constrained replies
do), and returns ``fn(params) -> dict`` (jit-able, the learner can call it inside its
compiled loop). ``make_sampled_evaluator`` estimates the same for free-form replies by
sampling, with a bootstrap interval.

Shapes: ``S`` information states, ``A`` the tree's actions, ``M`` the game's moves
(``Choices`` strings), ``C`` tokens of the longest move string, ``L`` prompt tokens.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from jaxagents.evaluation.exploitability import best_response, exploitability, normalize_policy, policy_value
from jaxagents.evaluation.game_tree import GameTree
from jaxagents.lm.config import ModelConfig
from jaxagents.lm.episode import Prompt, TextTables, echo_slots, prompt_tokens, slot_width
from jaxagents.lm.generate import Choices, Sampling, _filter, generate, text_bytes
from jaxagents.lm.model import KVCache, forward, init_cache


@dataclasses.dataclass(frozen=True)
class ExactGame:
    """A text game's information states, for exact evaluation (a game's ``exact_game()``).

    Attributes:
        tree: the ``GameTree`` the evaluation scores (payoffs, chance, information states).
        deals: ``[S, ...]`` for each information state, the argument of
            ``env.reset_with_deals`` of a deal where it occurs.
        history: ``i32[S, H]`` the move codes played from that deal to the information
            state, -1 after the last.
        moves: ``i32[S, A]`` the game's move code of each tree action there (-1 where the
            action is not legal).
        names: each information state's name (for strategy tables).
        players: the text game's player (0 or 1) of each tree player.
    """

    tree: GameTree
    deals: np.ndarray
    history: np.ndarray
    moves: np.ndarray
    names: tuple
    players: tuple = (0, 1)


def exact_prompts(env, tables: TextTables, exact: ExactGame, *, prompt: Prompt = Prompt(), max_new_tokens: int,
                  prompt_len: int = 4096) -> tuple[np.ndarray, np.ndarray]:
    """Every information state's prompt, as ``play`` builds it (host; one compiled call).

    The game is replayed from each state's deal with its history, every reply echoing
    its move's canonical string (the tokens a constrained reply generates). Checks that
    the player to act owns the state and that its tree actions are legal moves there.

    Returns ``(ids i32[S, L], length i32[S])``, ``L`` the longest prompt.
    Raises ``ValueError`` if a prompt is longer than ``prompt_len`` tokens.
    """
    choices = tables.choices
    if choices is None:
        raise ValueError(f"{type(env).__name__} has no canonical move strings; exact evaluation needs them")
    n = int(max_new_tokens)
    width = slot_width(tables, n)
    num_slots, num_variants = env.num_slots, len(env.piece_table.slot_variants)
    said = jnp.pad(choices.ids, ((0, 0), (0, max(0, n - choices.ids.shape[1]))))[:, :n]

    def render(deal, history):
        state, _ = env.reset_with_deals(deal)
        utt = jnp.zeros((num_slots, num_variants, width), jnp.int32)
        utt_len = jnp.zeros((num_slots, num_variants), jnp.int32)

        def step(carry, move):
            state, utt, utt_len = carry
            go = move >= 0
            m = jnp.maximum(move, 0)
            slots, slot_len, _, _ = echo_slots(env, tables, said[m][None], (jnp.arange(n) < choices.length[m])[None], width)
            new, ts = env.step_move(jax.random.PRNGKey(0), state, m)
            u = jnp.clip(ts.info["utterance"], 0, num_slots - 1)
            write = go & (ts.info["utterance"] >= 0)
            utt = jnp.where(write, utt.at[u].set(slots[0]), utt)
            utt_len = jnp.where(write, utt_len.at[u].set(slot_len[0]), utt_len)
            state = jax.tree_util.tree_map(lambda a, b: jnp.where(go, a, b), new, state)
            return (state, utt, utt_len), None

        (state, utt, utt_len), _ = jax.lax.scan(step, (state, utt, utt_len), history)
        obs = env.observations(state)[state.player]
        ids, length, overflow = prompt_tokens(env, tables, prompt, obs, utt, utt_len, prompt_len)
        legal = env.legal_actions(state)
        return ids, length, overflow, state.player, legal[tables.canonical] & ~state.done

    ids, length, overflow, player, legal = jax.device_get(
        jax.jit(jax.vmap(render))(jnp.asarray(exact.deals), jnp.asarray(exact.history, jnp.int32)))
    owner = np.asarray(exact.players)[np.asarray(exact.tree.infostate_player)]
    if np.any(player != owner):
        raise ValueError(f"exact_game: information state {int(np.argmax(player != owner))} is not its owner's turn")
    need = np.asarray(exact.tree.legal) & (exact.moves < 0)
    used = np.where(exact.moves >= 0, exact.moves, 0)
    if np.any(need) or np.any((exact.moves >= 0) & ~np.take_along_axis(legal, used, 1)):
        raise ValueError("exact_game: a tree action is not a legal move of the text game")
    if np.any(overflow):
        raise ValueError(f"a prompt is longer than prompt_len={prompt_len} tokens; raise prompt_len")
    width = int(length.max())
    return ids[:, :width], length


def choice_logprobs(params: dict, cfg: ModelConfig, ids: jax.Array, length: jax.Array, choices: Choices,
                    allowed: jax.Array, sampling: Sampling) -> jax.Array:
    """``f32[B, M]``: the log-probability that constrained decoding (``generate`` with
    ``choices`` and ``allowed``, under ``sampling``) replies choice ``m`` to prompt
    ``ids[b]`` (``i32[B, L]``, ``length i32[B]``); -inf for choices not allowed or
    filtered out. Temperature 0 gives 0 for the greedy choice and -inf elsewhere.

    One forward pass reads the prompts; a second reads every choice's tokens after each
    prompt from the prompts' cache. At step ``j`` of choice ``m`` the candidates are the
    ``j``-th tokens of the allowed choices that share ``m``'s first ``j`` tokens (each
    token once); the filters apply to them as ``generate`` applies them to the masked
    vocabulary. (Greedy ties go to the lowest token id, as ``argmax`` does.)"""
    cache = init_cache(cfg, ids.shape[0], ids.shape[1] + choices.ids.shape[1], params["embed"].dtype)
    first, cache = forward(params, cfg, ids, cache, length, last_only=True)  # [B, V]
    return _choice_scores(params, cfg, first, cache, choices, allowed, sampling)


def _choice_scores(params, cfg, first, cache, choices, allowed, sampling):
    """``choice_logprobs`` from the logits at the prompts' last tokens ``f32[B, V]`` and
    the cache that holds the prompts (room for ``C`` more tokens)."""
    bsz = first.shape[0]
    m, c = choices.ids.shape
    rep = KVCache(jnp.repeat(cache.k, m, axis=1), jnp.repeat(cache.v, m, axis=1), jnp.repeat(cache.length, m))
    later, _ = forward(params, cfg, jnp.tile(choices.ids, (bsz, 1)), rep, jnp.tile(choices.length, bsz))
    later = later.reshape(bsz, m, c, -1)
    cand = choices.ids.T  # [C, M']: the candidate tokens at each step
    at_first = jnp.broadcast_to(first[:, None, None, :], (bsz, m, 1, first.shape[-1]))
    steps = jnp.concatenate([at_first, later[:, :, : c - 1]], axis=2)  # [B, M, C, V]: logits before token j
    logits = jnp.take_along_axis(steps, jnp.broadcast_to(cand[None, None], (bsz, m, c, m)), axis=3)  # [B, M, C, M']

    j = jnp.arange(c)
    pre = choices.ids[:, None, :] == choices.ids[None, :, :]  # [M, M', C]
    same_prefix = jnp.cumprod(jnp.concatenate([jnp.ones((m, m, 1), bool), pre[:, :, :-1]], 2), axis=2) > 0
    live = (allowed[:, None, None, :] & jnp.transpose(same_prefix, (0, 2, 1))[None]
            & (j[:, None] < choices.length[None, :])[None, None])
    # [B, M, C, M']; each token once: the first live candidate with it
    same_tok = (cand[:, :, None] == cand[:, None, :]) & (jnp.arange(m)[None, None, :] < jnp.arange(m)[None, :, None])
    shadowed = jnp.einsum("cpq,bmcq->bmcp", same_tok.astype(jnp.int32), live.astype(jnp.int32)) > 0
    first_of = live & ~shadowed
    masked = jnp.where(first_of, logits, -jnp.inf)
    flat = _filter(masked.reshape(-1, m), sampling).reshape(masked.shape)
    if sampling.temperature > 0:
        logp = jax.nn.log_softmax(flat, axis=-1)
    else:
        best = jnp.max(flat, axis=-1, keepdims=True)
        tok = jnp.where(flat == best, cand[None, None], jnp.iinfo(jnp.int32).max)
        logp = jnp.where(tok == jnp.min(tok, axis=-1, keepdims=True), 0.0, -jnp.inf)
    mine = first_of & (cand[None, None] == choices.ids[None, :, :, None])  # [B, M, C, M']: choice m's own token
    own = jnp.max(jnp.where(mine, logp, -jnp.inf), axis=-1)  # [B, M, C]
    total = jnp.sum(jnp.where(j[None, None, :] < choices.length[None, :, None], own, 0.0), axis=-1)
    return jnp.where(allowed, total, -jnp.inf)


def prefix_forest(ids: np.ndarray, length: np.ndarray) -> np.ndarray:
    """Host side: ``i32[S]`` the state whose prompt is the longest proper prefix of each
    prompt (-1: none). A player's prompt at a later information state extends its prompt
    at an earlier one (TextArena's observations only grow), so the prompts form a forest
    and each needs only its new tokens read after its parent's."""
    parent = np.full(len(length), -1, np.int64)
    for s, n in enumerate(length):
        match = np.cumprod(ids[:, :n] == ids[s, :n][None], axis=1).sum(1)
        candidate = (length < n) & (length > 0) & (match >= length)
        if candidate.any():
            parent[s] = int(np.argmax(np.where(candidate, length, -1)))
    return parent


def shared_prefill(params: dict, cfg: ModelConfig, ids: np.ndarray, length: np.ndarray, parent: np.ndarray,
                   extra: int) -> tuple[jax.Array, KVCache]:
    """Read every prompt ``ids`` (host ``i32[S, L]``, ``length``) into one cache of
    ``L + extra`` slots, each after its ``parent``'s (``prefix_forest``): one forward
    pass per depth of the forest, over the new tokens only. Returns ``(logits at each
    prompt's last token f32[S, V], cache)``, as a forward pass over the whole prompts."""
    s, width = ids.shape
    depth = np.zeros(s, np.int64)
    for i in np.argsort(length, kind="stable"):  # a parent is shorter: its depth is known
        depth[i] = 0 if parent[i] < 0 else depth[parent[i]] + 1
    cache = init_cache(cfg, s, width + extra, params["embed"].dtype)
    first = jnp.zeros((s, cfg.vocab_size), jnp.float32)
    for d in range(int(depth.max()) + 1):
        rows = np.nonzero(depth == d)[0]
        start = np.where(parent[rows] >= 0, length[np.maximum(parent[rows], 0)], 0)
        new = length[rows] - start
        toks = np.zeros((len(rows), int(new.max())), np.int32)
        for i, r in enumerate(rows):
            toks[i, : new[i]] = ids[r, start[i] : length[r]]
        if d == 0:
            sub = init_cache(cfg, len(rows), width + extra, params["embed"].dtype)
        else:
            sub = KVCache(cache.k[:, parent[rows]], cache.v[:, parent[rows]], jnp.asarray(start, jnp.int32))
        logits, sub = forward(params, cfg, jnp.asarray(toks), sub, jnp.asarray(new, jnp.int32), last_only=True)
        cache = KVCache(cache.k.at[:, rows].set(sub.k), cache.v.at[:, rows].set(sub.v), cache.length.at[rows].set(sub.length))
        first = first.at[rows].set(logits)
    return first, cache


def _chunked(fn, arrays, chunk: int):
    """``fn`` over the leading axis of ``arrays`` in chunks of ``chunk`` rows (``lax.map``)."""
    s = arrays[0].shape[0]
    k = -(-s // chunk)
    pad = lambda a: jnp.pad(a, ((0, k * chunk - s),) + ((0, 0),) * (a.ndim - 1)).reshape(k, chunk, *a.shape[1:])
    out = jax.lax.map(lambda xs: fn(*xs), tuple(pad(jnp.asarray(a)) for a in arrays))
    return jax.tree_util.tree_map(lambda o: o.reshape(k * chunk, *o.shape[2:])[:s], out)


def _legal_moves(exact: ExactGame, num_moves: int) -> np.ndarray:
    """``bool[S, M]``: the moves the tree's legal actions play at each state."""
    legal = np.zeros((len(exact.names), num_moves), bool)
    for a in range(exact.moves.shape[1]):
        ok = np.asarray(exact.tree.legal)[:, a] & (exact.moves[:, a] >= 0)
        legal[np.nonzero(ok)[0], exact.moves[ok, a]] = True
    return legal


def _strategy(exact: ExactGame, move_probs: jax.Array) -> jax.Array:
    """``f32[S, A]``: the tree's table from the move probabilities ``f32[S, M]``."""
    moves = jnp.asarray(exact.moves)
    return jnp.where(moves >= 0, jnp.take_along_axis(move_probs, jnp.maximum(moves, 0), axis=1), 0.0)


def _scores(tree: GameTree, table: jax.Array) -> dict:
    br, _ = best_response(tree, table)
    value = policy_value(tree, table)
    return {"exploitability": exploitability(tree, table), "nash_conv": jnp.sum(br - value), "value": value}


def _exact_of(env, exact):
    if exact is not None:
        return exact
    if not hasattr(env, "exact_game"):
        raise ValueError(f"env: {type(env).__name__} has no exact_game() capability (text Kuhn and Leduc have it); "
                         "pass exact= an ExactGame")
    return env.exact_game()


def make_exact_evaluator(cfg: ModelConfig, env, tables: TextTables, *, prompt: Prompt = Prompt(),
                         sampling: Sampling = Sampling(), exact: ExactGame | None = None, chunk: int = 128,
                         prompt_len: int = 4096, prompts: dict | None = None):
    """The exact evaluator of a language policy at ``env`` (a text game with the
    ``exact_game`` capability), replies constrained to the legal moves' strings.

    Args:
        cfg: the model's config.
        env: the text game (its ``exact_game()`` unless ``exact`` is given).
        tables: ``TextTables.build(env, tokenizer)``.
        prompt: the tokens around every observation, as in ``play``.
        sampling: as in ``play``: temperature, top-k and top-p shape the move
            distribution (temperature 0: the greedy move); ``max_new_tokens`` must hold
            every move string.
        exact: the game's ``ExactGame`` (default ``env.exact_game()``).
        chunk: information states per pass over the move strings (memory: ``chunk *
            M`` rows of ``C`` tokens against ``L`` cached ones). The prompts are read
            once into one cache of ``S`` rows, each after the prompt it extends
            (``shared_prefill``).
        prompt_len: the longest prompt allowed.
        prompts: ``fn.prompts`` of an evaluator of the same game, tables, prompt and
            ``max_new_tokens`` (e.g. the greedy one beside a sampled one): its host-built
            prompts, not rendered again (Leduc's take tens of seconds).

    Returns:
        ``fn(params) -> dict`` (jit-able): ``exploitability`` ``f32[]``, ``nash_conv``,
        ``value`` ``f32[2]`` (each tree player's expected payoff in self-play; tree
        player ``i`` is the text game's player ``exact.players[i]``),
        ``table`` ``f32[S, A]`` (the strategy over the tree's actions, rows ordered as
        ``exact.names``) and ``move_probs`` ``f32[S, M]`` (over the game's moves). The
        host-built prompts are attached as ``fn.prompts`` (``ids``, ``length``) and the
        game as ``fn.exact``.
    """
    if not isinstance(chunk, int) or chunk < 1:
        raise ValueError(f"chunk must be a positive integer, got {chunk!r}")
    exact = _exact_of(env, exact)
    if tables.choices is None:
        raise ValueError(f"{type(env).__name__}'s moves have no canonical strings: exact evaluation needs them")
    longest = int(np.max(np.asarray(tables.choices.length)))
    if longest > sampling.max_new_tokens:
        raise ValueError(f"sampling.max_new_tokens={sampling.max_new_tokens} cannot hold a move string of {longest} tokens")
    if prompts is None:
        ids, length = exact_prompts(env, tables, exact, prompt=prompt, max_new_tokens=sampling.max_new_tokens,
                                    prompt_len=prompt_len)
    else:
        ids, length = prompts["ids"], prompts["length"]
    legal_j = jnp.asarray(_legal_moves(exact, tables.choices.ids.shape[0]))
    chunk = max(1, min(int(chunk), len(length)))
    parent = prefix_forest(ids, length)
    extra = int(tables.choices.ids.shape[1])

    def evaluate(params: dict) -> dict:
        first, cache = shared_prefill(params, cfg, ids, length, parent, extra)
        batch_first = lambda x: jnp.moveaxis(x, 1, 0)  # the cache's rows on the leading axis, for chunks
        logp = _chunked(
            lambda f, k, v, n, a: _choice_scores(params, cfg, f, KVCache(jnp.moveaxis(k, 0, 1), jnp.moveaxis(v, 0, 1), n),
                                                 tables.choices, a, sampling),
            (first, batch_first(cache.k), batch_first(cache.v), cache.length, legal_j), chunk)
        probs = jnp.exp(logp)
        table = normalize_policy(exact.tree, _strategy(exact, probs))
        return {**_scores(exact.tree, table), "table": table, "move_probs": probs}

    evaluate.prompts = {"ids": ids, "length": length}
    evaluate.exact = exact
    return evaluate


def make_sampled_evaluator(cfg: ModelConfig, env, tables: TextTables, *, prompt: Prompt = Prompt(),
                           sampling: Sampling = Sampling(), samples: int = 32, bootstrap: int = 200,
                           level: float = 0.95, exact: ExactGame | None = None, chunk: int = 128,
                           prompt_len: int = 4096):
    """An estimate of the exploitability of free-form (unconstrained) replies, by sampling.

    Each information state's prompt (as ``make_exact_evaluator`` renders it) is answered
    ``samples`` times by ``generate`` under ``sampling``; the replies are parsed by the
    game's grammar. The strategy is the frequency of each legal move among the valid
    replies (a state with none: uniform); an invalid reply (TextArena's warning, then the
    loss) is counted apart, as ``invalid_rate``. The interval is a percentile bootstrap
    over the replies of every state (``bootstrap`` resamples, ``level`` coverage). The
    plug-in estimate is biased upwards with few samples (exploitability is convex in the
    strategy), which the interval shows.

    Returns ``fn(params, key) -> dict`` (jit-able): ``exploitability`` ``f32[]``,
    ``interval`` ``f32[2]``, ``invalid_rate`` ``f32[]`` (over states and samples),
    ``table`` ``f32[S, A]``, ``counts`` ``f32[S, M]`` (valid replies per move),
    ``invalid`` ``f32[S]`` (invalid replies per state), ``mean_tokens`` ``f32[]``.
    """
    for name, value in (("samples", samples), ("bootstrap", bootstrap), ("chunk", chunk)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    exact = _exact_of(env, exact)
    ids, length = exact_prompts(env, tables, exact, prompt=prompt, max_new_tokens=sampling.max_new_tokens,
                                prompt_len=prompt_len)
    s, k = len(length), int(samples)
    num_moves = env.num_moves
    legal = _legal_moves(exact, num_moves)
    rows_ids = jnp.asarray(np.repeat(ids, k, axis=0))
    rows_len = jnp.asarray(np.repeat(length, k))
    legal_j = jnp.asarray(legal)
    chunk = max(1, min(int(chunk), s * k))
    stop_ids = jnp.asarray(tables.stop_ids or (-1,), jnp.int32)

    def evaluate(params: dict, key: jax.Array) -> dict:
        keys = jax.random.split(key, s * k + 1)  # a key per reply row (a chunk uses its first)
        draw_key, boot_key = keys[-1], keys[:-1]

        def answer(i, n, kk):
            gen = generate(params, cfg, i, n, kk[0], sampling)
            reply = gen.mask & ~jnp.isin(gen.tokens, stop_ids)
            data, nbytes = text_bytes(gen.tokens, reply, tables.token_bytes)
            return jax.vmap(env.parse)(data, nbytes), gen.length

        move, ntok = _chunked(answer, (rows_ids, rows_len, boot_key[: rows_len.shape[0]]), chunk)
        move = move.reshape(s, k)
        valid = (move >= 0) & (move < num_moves) & jnp.take_along_axis(legal_j, jnp.clip(move, 0, num_moves - 1), 1)
        onehot = jax.nn.one_hot(jnp.where(valid, move, num_moves), num_moves + 1)[..., :num_moves]  # [S, K, M]

        def score(weights):  # weights f32[S, K]: each reply's multiplicity
            counts = jnp.einsum("sk,skm->sm", weights, onehot)
            table = normalize_policy(exact.tree, _strategy(exact, counts))
            return exploitability(exact.tree, table), counts, table

        value, counts, table = score(jnp.ones((s, k)))
        resample = jax.random.randint(draw_key, (bootstrap, s, k), 0, k)
        weights = jax.vmap(lambda r: jax.vmap(lambda row: jnp.zeros(k).at[row].add(1.0))(r))(resample)
        boot = jax.vmap(lambda w: score(w)[0])(weights)
        tail = (1 - level) / 2
        return {"exploitability": value, "interval": jnp.quantile(boot, jnp.asarray([tail, 1 - tail])),
                "invalid_rate": 1 - valid.mean(), "table": table, "counts": counts,
                "invalid": (~valid).sum(1).astype(jnp.float32), "mean_tokens": ntok.mean()}

    evaluate.prompts = {"ids": ids, "length": length}
    evaluate.exact = exact
    return evaluate
