"""The decoder's cache and generation inside ``jit``, on tiny random models: the cached,
chunked and ragged forward passes equal the whole-sequence one; greedy decoding equals
repeated argmax; sampled tokens follow the filtered distribution and report its
log-probabilities; stop tokens, stop strings, constrained choices and the budget end
sequences where they should."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxagents.lm.generate import Choices, Sampling, TokenBytes, _stop_string_hit, generate, text_bytes
from jaxagents.lm.model import forward, init_cache, init_params, logits_of

from .conftest import tiny_config

FAMILIES = ("llama", "qwen2", "qwen3", "gpt2")


@functools.lru_cache(maxsize=None)
def model(family: str):
    cfg = tiny_config(family)
    return cfg, init_params(cfg, jax.random.PRNGKey(0), scale=0.3)


def prompts(batch=3, width=10, seed=1, vocab=300):
    return jax.random.randint(jax.random.PRNGKey(seed), (batch, width), 0, vocab)


@pytest.mark.slow  # (this module's compiles: the default suite keeps its 10 minutes)
@pytest.mark.parametrize("family", [pytest.param(f, marks=() if f == "qwen3" else pytest.mark.slow) for f in FAMILIES])
def test_cached_chunks_and_ragged_rows_equal_the_whole_sequence(family):
    cfg, params = model(family)
    toks = prompts()
    full = logits_of(params, cfg, toks)
    cache = init_cache(cfg, 3, 16)
    first, cache = forward(params, cfg, toks[:, :4], cache)
    rest, cache = forward(params, cfg, toks[:, 4:], cache)
    np.testing.assert_allclose(np.concatenate([first, rest], 1), full, atol=2e-5)
    # rows of different lengths in one chunk, padding after the valid tokens
    lens = jnp.array([3, 5, 7])
    padded = jnp.where(jnp.arange(10)[None] < lens[:, None], toks, 7)
    last, cache = forward(params, cfg, padded, init_cache(cfg, 3, 16), lens, last_only=True)
    np.testing.assert_allclose(last, full[jnp.arange(3), lens - 1], atol=2e-5)
    np.testing.assert_array_equal(cache.length, lens)
    # the next chunk continues each row where it ended; the padding slots are overwritten
    nxt, _ = forward(params, cfg, toks[:, 7:8], cache)
    for b, n in enumerate([3, 5, 7]):
        ref = logits_of(params, cfg, jnp.concatenate([toks[b:b + 1, :n], toks[b:b + 1, 7:8]], 1))[:, -1]
        np.testing.assert_allclose(nxt[b, 0], ref[0], atol=2e-5)


@pytest.mark.slow  # (this module's compiles: the default suite keeps its 10 minutes)
@pytest.mark.parametrize("family", ("llama", pytest.param("gpt2", marks=pytest.mark.slow)))
def test_greedy_generation_is_repeated_argmax(family):
    cfg, params = model(family)
    toks = prompts(width=5)
    out = jax.jit(generate, static_argnums=(1, 5))(params, cfg, toks, jnp.full(3, 5), jax.random.PRNGKey(0),
                                                  Sampling(max_new_tokens=8, temperature=0.0))
    # teacher forcing on the whole generated sequence: each token is the argmax after its prefix
    seq = jnp.concatenate([toks, out.tokens], 1)
    logits = logits_of(params, cfg, seq)
    np.testing.assert_array_equal(out.tokens, jnp.argmax(logits[:, 4:-1], -1))
    assert out.mask.all() and (out.length == 8).all() and (out.choice == -1).all()
    ref = jax.nn.log_softmax(logits[:, 4:-1], -1)
    np.testing.assert_allclose(out.logprobs, jnp.take_along_axis(ref, seq[:, 5:, None], -1)[..., 0], atol=1e-5)


def _first_token(sampling, batch=4000):
    cfg, params = model("llama")
    toks = jnp.broadcast_to(prompts(batch=1, width=4), (batch, 4))
    out = generate(params, cfg, toks, jnp.full(batch, 4), jax.random.PRNGKey(3), sampling)
    logits = logits_of(params, cfg, toks[:1])[0, -1]
    return out, logits


@pytest.mark.slow  # (this module's compiles: the default suite keeps its 10 minutes)
@pytest.mark.parametrize("sampling", [Sampling(1, temperature=0.7), Sampling(1, top_k=5), Sampling(1, top_p=0.5)],
                         ids=["temperature", "top_k", "top_p"])
def test_sampled_tokens_follow_the_filtered_distribution(sampling):
    out, logits = _first_token(sampling)
    z = logits / sampling.temperature
    if sampling.top_k:
        z = jnp.where(z < jnp.sort(z)[-sampling.top_k], -jnp.inf, z)
    if sampling.top_p < 1:
        order = jnp.argsort(-z)
        p = jax.nn.softmax(z[order])
        keep = (jnp.cumsum(p) - p) < sampling.top_p
        z = jnp.where(jnp.zeros_like(keep).at[order].set(keep), z, -jnp.inf)
    want = np.asarray(jax.nn.softmax(z))
    drawn = np.asarray(out.tokens[:, 0])
    assert want[drawn].min() > 0, "a filtered-out token was drawn"
    freq = np.bincount(drawn, minlength=want.size) / drawn.size
    # every token's frequency within 5 standard errors of its probability
    se = np.sqrt(want * (1 - want) / drawn.size) + 1e-9
    assert (np.abs(freq - want) <= 5 * se + 1e-3).all()
    np.testing.assert_allclose(out.logprobs[:, 0], np.log(want[drawn]), rtol=1e-4, atol=1e-5)


@pytest.mark.slow  # (this module's compiles: the default suite keeps its 10 minutes)
def test_stop_tokens_budget_and_masks():
    cfg, params = model("qwen2")
    toks = prompts(width=5)
    greedy = generate(params, cfg, toks, jnp.full(3, 5), jax.random.PRNGKey(0), Sampling(6, temperature=0.0))
    stop = int(greedy.tokens[0, 2])  # row 0 stops at its third token (or earlier if it repeats)
    out = generate(params, cfg, toks, jnp.full(3, 5), jax.random.PRNGKey(0),
                   Sampling(6, temperature=0.0, stop_token_ids=(stop,)))
    for b in range(3):
        row = list(np.asarray(greedy.tokens[b]))
        n = row.index(stop) + 1 if stop in row else 6
        assert int(out.length[b]) == n
        np.testing.assert_array_equal(out.tokens[b, :n], greedy.tokens[b, :n])
        assert out.mask[b, :n].all() and not out.mask[b, n:].any() and (out.tokens[b, n:] == 0).all()


@pytest.mark.slow  # (10-20 s: the default suite keeps its 10 minutes)
def test_stop_strings_end_on_the_token_that_completes_them(tokenizer):
    cfg, params = model("llama")
    tb = TokenBytes.of(tokenizer)
    toks = prompts(batch=2, width=5)
    greedy = generate(params, cfg, toks, jnp.full(2, 5), jax.random.PRNGKey(0), Sampling(10, temperature=0.0))
    text = tokenizer.decode(np.asarray(greedy.tokens[0]))
    raw, n = text_bytes(greedy.tokens, greedy.mask, tb)
    assert bytes(np.asarray(raw[0, : int(n[0])])).decode("utf-8", errors="replace") == text
    # a stop string in row 0's greedy text (a random model's bytes: the first printable slice)
    spelled = [bytes(np.asarray(tb.bytes[t, : int(tb.length[t])])) for t in np.asarray(greedy.tokens[0])]
    joined = b"".join(spelled)
    stop = next(joined[k:k + w] for w in (2, 1) for k in range(len(spelled[0]), len(joined) - w + 1)
                if _is_text(joined[k:k + w]))
    out = generate(params, cfg, toks, jnp.full(2, 5), jax.random.PRNGKey(0),
                   Sampling(10, temperature=0.0, stop_strings=(stop.decode("utf-8"),)), token_bytes=tb)
    end = joined.find(stop) + len(stop)
    want = next(i + 1 for i in range(10) if len(b"".join(spelled[: i + 1])) >= end)
    assert int(out.length[0]) == want
    np.testing.assert_array_equal(out.tokens[0, :want], greedy.tokens[0, :want])


def _is_text(raw: bytes) -> bool:
    try:
        return raw.decode("ascii").isprintable()
    except UnicodeDecodeError:
        return False


@pytest.mark.slow  # (this module's compiles: the default suite keeps its 10 minutes)
def test_stop_string_window_across_tokens():
    tail = jnp.zeros((1, 4), jnp.uint8)  # len("[bet]") - 1
    hits = []
    for chunk in (b"xx[b", b"et", b"]"):
        new = jnp.asarray(np.frombuffer(chunk.ljust(4, b"\0"), np.uint8))[None]
        hit, tail = _stop_string_hit(tail, new, jnp.array([len(chunk)]), [b"[bet]"])
        hits.append(bool(hit[0]))
    assert hits == [False, False, True]


@pytest.mark.slow  # (this module's compiles: the default suite keeps its 10 minutes)
def test_constrained_choices_are_exact_and_legal(tokenizer):
    cfg, params = model("qwen3")
    moves = ["[check]", "[bet]", "[call]", "[fold]"]
    choices = Choices.build(tokenizer, moves)
    batch = 256
    toks = jnp.broadcast_to(prompts(batch=1, width=6), (batch, 6))
    allowed = jnp.tile(jnp.array([[True, True, False, False], [False, False, True, True]]), (batch // 2, 1))
    out = generate(params, cfg, toks, jnp.full(batch, 6), jax.random.PRNGKey(1), Sampling(8), choices=choices,
                   allowed=allowed)
    choice = np.asarray(out.choice)
    assert (choice >= 0).all() and np.asarray(allowed)[np.arange(batch), choice].all()
    for b in (0, 1):
        n = int(choices.length[choice[b]])
        np.testing.assert_array_equal(out.tokens[b, :n], choices.ids[choice[b], :n])
        assert int(out.length[b]) == n
    # the reported log-probability of a choice is the constrained teacher-forced one: the
    # logits after every prefix of every choice, from one forward pass over prompt + choice
    width = int(choices.length.max())
    seqs = jnp.concatenate([jnp.broadcast_to(toks[0], (len(moves), 6)), choices.ids], 1)
    logits = np.asarray(logits_of(params, cfg, seqs)[:, 5:5 + width], np.float64)  # [M, C, V]

    def exact(legal):
        totals = {}
        for m in legal:
            lp, live = 0.0, set(legal)
            for j in range(int(choices.length[m])):
                t = int(choices.ids[m, j])
                ok = sorted({int(choices.ids[k, j]) for k in live if int(choices.length[k]) > j})
                z = logits[m, j, ok]
                lp += logits[m, j, t] - (z.max() + np.log(np.exp(z - z.max()).sum()))
                live = {k for k in live if int(choices.length[k]) > j and int(choices.ids[k, j]) == t}
            totals[m] = lp
        return totals
    want = exact([0, 1])
    got = float(out.logprobs[0].sum())
    np.testing.assert_allclose(got, want[int(choice[0])], atol=1e-4)
    np.testing.assert_allclose(sum(np.exp(v) for v in want.values()), 1.0, atol=1e-5)
    # frequencies follow the exact distribution (row parity 0: choices 0 and 1)
    freq0 = (choice[::2] == 0).mean()
    p0 = np.exp(want[0])
    assert abs(freq0 - p0) <= 5 * np.sqrt(p0 * (1 - p0) / (batch // 2)) + 1e-3


@pytest.mark.slow
def test_generation_vmaps_over_a_population_of_models():
    cfg = tiny_config("llama")
    pop = jax.vmap(lambda k: init_params(cfg, k, scale=0.3))(jax.random.split(jax.random.PRNGKey(0), 2))
    toks = prompts(width=5)
    run = jax.jit(jax.vmap(lambda p: generate(p, cfg, toks, jnp.full(3, 5), jax.random.PRNGKey(0),
                                              Sampling(4, temperature=0.0)).tokens))
    both = run(pop)
    single = jax.jit(lambda p: generate(p, cfg, toks, jnp.full(3, 5), jax.random.PRNGKey(0),
                                        Sampling(4, temperature=0.0)).tokens)
    for i in range(2):
        np.testing.assert_array_equal(both[i], single(jax.tree_util.tree_map(lambda x: x[i], pop)))


@pytest.mark.slow  # (this module's compiles: the default suite keeps its 10 minutes)
def test_bad_sampling_and_choices_are_one_line_errors(tokenizer):
    for kwargs, word in [(dict(max_new_tokens=0), "max_new_tokens"), (dict(temperature=-1.0), "temperature"),
                         (dict(top_k=-1), "top_k"), (dict(top_p=0.0), "top_p"), (dict(stop_strings=("",)), "stop_strings")]:
        with pytest.raises(ValueError, match=word):
            Sampling(**kwargs)
    with pytest.raises(ValueError, match="prefix-free"):
        Choices.build(tokenizer, ["[1]", "[1]0"])
    cfg, params = model("llama")
    with pytest.raises(ValueError, match="cache_size"):
        generate(params, cfg, prompts(width=5), jnp.full(3, 5), jax.random.PRNGKey(0), Sampling(4), cache_size=6)
    with pytest.raises(ValueError, match="token_bytes"):
        generate(params, cfg, prompts(width=5), jnp.full(3, 5), jax.random.PRNGKey(0), Sampling(4, stop_strings=("x",)))
