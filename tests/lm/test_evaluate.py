"""Exact evaluation of a language policy (``jaxagents.lm.evaluate``) at text Kuhn and Leduc.

The move probabilities read from the model are those ``generate`` samples with (its
per-token log-probabilities, under temperature, top-k, top-p and greedy decoding); a
model whose strategy is known by construction (a bigram model: the next token depends
only on the last one) gives that strategy and its exploitability, computed apart on
Kuhn's tree; a zero model is Kuhn's uniform policy (0.458333). The slow checks: every
prompt ``play`` builds in a game's first round is the rendered prompt of its
information state, and Leduc's exact self-play value agrees with played games.
"""

from __future__ import annotations

import functools
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxagents
from jaxagents.evaluation.exploitability import exploitability
from jaxagents.lm.episode import Prompt, TextTables, play
from jaxagents.lm.evaluate import choice_logprobs, make_exact_evaluator, make_sampled_evaluator
from jaxagents.lm.generate import Sampling, generate
from jaxagents.lm.model import init_params
from jaxagents.lm.tokenizer import Tokenizer

from .conftest import tiny_config

TOKENIZER = os.path.join(os.path.dirname(__file__), "..", "data", "lm", "qwen2")
CFG = tiny_config("llama", vocab_size=512)
EV_SAMPLING = Sampling(6)
MOVE_LOGITS = {"check": 20.0, "bet": 21.098612, "call": 20.0, "fold": 20.405465}  # bet : check 3 : 1, fold : call 3 : 2


@functools.lru_cache(maxsize=None)
def kuhn():
    tok = Tokenizer.from_folder(TOKENIZER)
    env = jaxagents.make("text_kuhn_poker")
    tables = TextTables.build(env, tok)
    prompt = Prompt(prefix=tuple(tok.encode("Play well.\n")), suffix=tuple(tok.encode(" Answer:")))
    ev = make_exact_evaluator(CFG, env, tables, prompt=prompt, sampling=EV_SAMPLING)
    return tok, env, tables, prompt, ev


def bigram_params(tok, prompt: Prompt, logits: dict) -> dict:
    """A model whose next-token logits depend only on the last token: after the prompt's
    last token ``[``, after ``[`` each move's first token with ``logits[move]``, then the
    rest of the move's string, then EOS (every layer zero; the embedding picks a row of
    the head)."""
    params = jax.tree_util.tree_map(jnp.zeros_like, init_params(CFG, jax.random.PRNGKey(0)))
    params["final_norm"]["scale"] = jnp.ones_like(params["final_norm"]["scale"])
    nxt: dict[int, dict[int, float]] = {prompt.suffix[-1]: {tok.encode("[")[0]: 30.0}}
    for move, value in logits.items():
        ids = tok.encode(f"[{move}]")
        nxt.setdefault(ids[0], {})[ids[1]] = value
        for a, b in zip(ids[1:], ids[2:]):
            nxt.setdefault(a, {})[b] = 30.0
        nxt.setdefault(ids[-1], {})[tok.eos_token_id] = 30.0
    d = CFG.hidden_size
    embed, head = np.zeros((CFG.vocab_size, d), np.float32), np.zeros((d, CFG.vocab_size), np.float32)
    for k, (t, row) in enumerate(nxt.items()):
        embed[t, k] = 1.0  # RMSNorm turns the one-hot row into sqrt(d) times it
        for u, value in row.items():
            head[k, u] = value / np.sqrt(d)
    params["embed"], params["lm_head"] = jnp.asarray(embed), {"kernel": jnp.asarray(head)}
    return params


@pytest.mark.slow  # (10-20 s: the default suite keeps its 10 minutes)
def test_zero_model_is_the_uniform_policy():
    _, _, _, _, ev = kuhn()
    out = jax.jit(ev)(jax.tree_util.tree_map(jnp.zeros_like, init_params(CFG, jax.random.PRNGKey(0))))
    assert out["table"].shape == (12, 2)
    np.testing.assert_allclose(out["table"], 0.5, atol=1e-6)
    np.testing.assert_allclose(out["exploitability"], 11 / 24, atol=1e-6)  # Kuhn's uniform policy: 0.458333


@pytest.mark.slow  # (this module's compiles: the default suite keeps its 10 minutes)
def test_a_model_with_a_known_strategy_has_its_exploitability():
    tok, env, _, prompt, ev = kuhn()
    out = jax.jit(ev)(bigram_params(tok, prompt, MOVE_LOGITS))
    # Kuhn's actions are (pass, bet): check/bet with no bet on the table, fold/call facing one
    facing = np.array([name.endswith("b") for name in ev.exact.names])
    expected = np.where(facing[:, None], [0.6, 0.4], [0.25, 0.75])
    np.testing.assert_allclose(out["table"], expected, atol=1e-4)
    tree = env.exact_game().tree
    np.testing.assert_allclose(out["exploitability"], exploitability(tree, jnp.asarray(expected, jnp.float32)), atol=1e-4)
    assert out["exploitability"] > 0.05  # not the uniform policy's by accident
    assert abs(out["exploitability"] - 11 / 24) > 0.05


@pytest.mark.parametrize("sampling", [
    Sampling(6),
    pytest.param(Sampling(6, temperature=0.7, top_p=0.8), marks=pytest.mark.slow),
    pytest.param(Sampling(6, temperature=1.3, top_k=2), marks=pytest.mark.slow),
])
@pytest.mark.slow  # (this module's compiles: the default suite keeps its 10 minutes)
def test_move_probabilities_are_those_generate_samples_with(sampling):
    tok, env, tables, _, ev = kuhn()
    params = init_params(CFG, jax.random.PRNGKey(3), scale=0.3)
    states = np.array([0, 1, 6, 7])  # two states of each player: check/bet and fold/call
    ids, length = jnp.asarray(ev.prompts["ids"][states]), jnp.asarray(ev.prompts["length"][states])
    allowed = jnp.zeros((4, 4), bool).at[jnp.arange(4)[:, None], jnp.asarray(ev.exact.moves[states])].set(True)
    logp = jax.jit(lambda p: choice_logprobs(p, CFG, ids, length, tables.choices, allowed, sampling))(params)
    np.testing.assert_allclose(jnp.exp(logp).sum(1), 1.0, atol=1e-5)
    reps = 8
    gen = jax.jit(lambda p, k: generate(p, CFG, jnp.repeat(ids, reps, 0), jnp.repeat(length, reps), k, sampling,
                                        choices=tables.choices, allowed=jnp.repeat(allowed, reps, 0)))(
        params, jax.random.PRNGKey(1))
    # each sampled reply's log-probability (the sum of its tokens') is the exact one
    got = np.asarray(gen.logprobs.sum(1))
    want = np.asarray(logp)[np.repeat(np.arange(4), reps), np.asarray(gen.choice)]
    np.testing.assert_allclose(got, want, atol=1e-4)
    assert np.all(np.isfinite(want))
    if sampling == EV_SAMPLING:  # the evaluator reads each prompt after the prompt it extends: the same numbers
        out = jax.jit(ev)(params)
        np.testing.assert_allclose(out["move_probs"][states], jnp.exp(logp), atol=1e-5)
        assert float(jnp.abs(out["table"] - 0.5).max()) > 0.01  # not the uniform policy


@pytest.mark.slow
def test_greedy_evaluation_plays_generates_greedy_move():
    tok, env, tables, _, ev = kuhn()
    params = init_params(CFG, jax.random.PRNGKey(3), scale=0.3)
    ids, length = jnp.asarray(ev.prompts["ids"]), jnp.asarray(ev.prompts["length"])
    allowed = jnp.zeros((12, 4), bool).at[jnp.arange(12)[:, None], jnp.asarray(ev.exact.moves)].set(True)
    greedy = Sampling(6, temperature=0.0)
    logp = choice_logprobs(params, CFG, ids, length, tables.choices, allowed, greedy)
    gen = generate(params, CFG, ids, length, jax.random.PRNGKey(0), greedy, choices=tables.choices, allowed=allowed)
    np.testing.assert_array_equal(np.argmax(np.asarray(logp), 1), np.asarray(gen.choice))
    np.testing.assert_array_equal(np.sort(np.exp(np.asarray(logp)), 1)[:, -2:], [[0.0, 1.0]] * 12)


@pytest.mark.slow  # (this module's compiles: the default suite keeps its 10 minutes)
def test_bad_sampling_budget_is_refused():
    tok, env, tables, prompt, _ = kuhn()
    with pytest.raises(ValueError, match="max_new_tokens"):
        make_exact_evaluator(CFG, env, tables, prompt=prompt, sampling=Sampling(2))
    with pytest.raises(ValueError, match="exact_game"):
        make_exact_evaluator(CFG, jaxagents.make("text_tic_tac_toe"), tables)
    with pytest.raises(ValueError, match="samples"):
        make_sampled_evaluator(CFG, env, tables, samples=0)


@pytest.mark.heavy
def test_free_form_estimate_covers_the_exact_value_and_counts_invalid_replies():
    tok, env, tables, prompt, ev = kuhn()
    params = bigram_params(tok, prompt, MOVE_LOGITS)
    sampled = make_sampled_evaluator(CFG, env, tables, prompt=prompt, sampling=Sampling(6, stop_token_ids=(tok.eos_token_id,)),
                                     samples=48, bootstrap=200)
    out = jax.jit(sampled)(params, jax.random.PRNGKey(0))
    exact = jax.jit(ev)(params)["exploitability"]
    lo, hi = np.asarray(out["interval"])
    assert lo <= exact <= hi, (lo, float(exact), hi)
    # free-form replies pick any of the four moves: the two not legal now are invalid
    p = np.exp(np.array([MOVE_LOGITS[m] for m in ("check", "bet", "call", "fold")]))
    p /= p.sum()
    facing = np.array([name.endswith("b") for name in ev.exact.names])
    invalid = np.where(facing, p[0] + p[1], p[2] + p[3]).mean()
    se = np.sqrt(invalid * (1 - invalid) / (12 * 48))
    assert abs(float(out["invalid_rate"]) - invalid) < 4 * se
    np.testing.assert_allclose(out["mean_tokens"], 4.0, atol=0.01)  # "[", move, "]", EOS


# ---------------------------------------------------------------------------- slow: parity with play
def _first_round_prompts_equal_play(env_id, ev, tables, prompt, name_of, num_games, max_turns):
    """Every prompt ``play`` builds before the first hand ends is its information
    state's rendered prompt (the state named by ``name_of(deal, player, moves)``)."""
    env = jaxagents.make(env_id) if isinstance(env_id, str) else env_id
    params = init_params(CFG, jax.random.PRNGKey(5), scale=0.3)
    run = jax.jit(lambda p, k: play(p, CFG, env, tables, k, num_games, sampling=Sampling(6), max_turns=max_turns,
                                    prompt_len=1024, prompt=prompt, constrained=True))
    turns, state = jax.tree_util.tree_map(np.asarray, run(params, jax.random.PRNGKey(2)))
    index = {n: i for i, n in enumerate(ev.exact.names)}
    seen = set()
    for b in range(num_games):
        moves = []
        for t in range(max_turns):
            if not turns.active[t, b]:
                break
            name = name_of(state.extra.deals[b][0], int(turns.player[t, b]), tuple(moves))
            if name is None:
                break  # the first hand is over
            i = index[name]
            n = int(turns.prompt_length[t, b])
            assert n == ev.prompts["length"][i], name
            np.testing.assert_array_equal(turns.prompt[t, b, :n], ev.prompts["ids"][i, :n], err_msg=name)
            seen.add(i)
            moves.append(int(turns.move[t, b]))
    return seen


@pytest.mark.slow
def test_kuhn_prompts_are_those_play_builds():
    from jaxagents_environments.text.kuhn import BET, CALL

    tok, env, tables, prompt, ev = kuhn()

    def name_of(deal, player, moves):
        hist = "".join("b" if m in (BET, CALL) else "p" for m in moves)
        return f"{deal[player]}{hist}" if hist in ("", "p", "b", "pb") else None

    seen = _first_round_prompts_equal_play(env, ev, tables, prompt, name_of, num_games=32, max_turns=3)
    assert len(seen) == 12  # every information state was played


@functools.lru_cache(maxsize=None)
def leduc():
    tok = Tokenizer.from_folder(TOKENIZER)
    env = jaxagents.make("text_leduc_poker", max_rounds=1)
    tables = TextTables.build(env, tok)
    ev = make_exact_evaluator(CFG, env, tables, sampling=Sampling(6))
    return tok, env, tables, ev


@pytest.mark.heavy
def test_leduc_prompts_are_those_play_builds_and_its_value_is_the_played_one():
    from jaxagents_environments.text.leduc import MOVES, RANKS

    tok, env, tables, ev = leduc()
    assert ev.exact.tree.num_infostates == len(ev.exact.names) == len(set(ev.exact.names))
    by_name = {n: i for i, n in enumerate(ev.exact.names)}

    def name_of(deal, player, moves):  # deal: ranks * 2 (cards); the name as leduc_exact_game's
        ranks = np.asarray(deal) // 2
        for board in ("-", RANKS[ranks[2]]):
            name = f"P{player} {RANKS[ranks[player]]} board {board}: {' '.join(MOVES[m] for m in moves) or '-'}"
            if name in by_name:
                return name
        raise AssertionError(f"no information state for {player}, {moves}")

    seen = _first_round_prompts_equal_play(env, ev, tables, Prompt(), name_of, num_games=24, max_turns=8)
    assert len(seen) > 40
    # the exact self-play value (chips won by player 0) is what played games win
    params = init_params(CFG, jax.random.PRNGKey(5), scale=0.3)
    value = float(jax.jit(ev)(params)["value"][0])
    games = 512
    run = jax.jit(lambda p, k: play(p, CFG, env, tables, k, games, sampling=Sampling(6), max_turns=10,
                                    prompt_len=1024, constrained=True)[1])
    state = run(params, jax.random.PRNGKey(11))
    assert bool(np.all(state.done))
    won = np.asarray(state.extra.banks[:, 0] - env.starting_bank, np.float64)
    assert abs(won.mean() - value) < 4 * won.std() / np.sqrt(games), (won.mean(), value)
