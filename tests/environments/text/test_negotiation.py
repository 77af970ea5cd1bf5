"""``text_negotiation`` against TextArena 0.7.4's ``SimpleNegotiation-v0``: 1,000 recorded
random games replayed in one compiled program (observation strings, legal strings,
ends and rewards identical at every step); the reading of replies (accept, offer,
items in written order) against TextArena's own on the table and 3,000 random
offer-like replies, on the host and inside ``jit``; whole-string tokenization."""

from __future__ import annotations

import importlib.util
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxagents
from jaxagents.lm.grammar import NUMBER_CAP, encode_bytes
from jaxagents_environments.text.negotiation import BASE_VALUES, RESOURCES, value_range

_spec = importlib.util.spec_from_file_location("textarena_parity", os.path.join(os.path.dirname(__file__), "textarena_parity.py"))
parity = sys.modules.setdefault("textarena_parity", importlib.util.module_from_spec(_spec))
if not hasattr(parity, "load"):
    _spec.loader.exec_module(parity)

STEPS = 32


@pytest.fixture(scope="module")
def env():
    return jaxagents.make("text_negotiation")


@pytest.fixture(scope="module")
def data():
    return parity.load("simple_negotiation")


def _replayer(env):
    def one(resources, values, actions):
        state, ts = env.reset_with_start(resources, values)

        def body(carry, a):
            state, ts = carry
            p = ts.info["player"]
            obs = jnp.where(p == 1, ts.obs["player_1"][0], ts.obs["player_0"][0])
            mask = jnp.where(p == 1, ts.action_mask["player_1"][0], ts.action_mask["player_0"][0])
            count = state.log.count
            state, ts = env.step(jax.random.key(1), state, {"player_0": a[None], "player_1": a[None]})
            reward = jnp.stack([ts.reward["player_0"][0], ts.reward["player_1"][0]])
            return (state, ts), (obs.astype(jnp.int16), p, mask, ts.terminated, reward, count)

        return jax.lax.scan(body, (state, ts), actions)[1]

    return jax.jit(jax.vmap(one))


@pytest.fixture(scope="module")
def replayed(env, data):
    records = data["games"]
    actions = np.zeros((len(records), STEPS), np.int32)
    for i, rec in enumerate(records):
        assert len(rec["steps"]) <= STEPS
        actions[i, : len(rec["steps"])] = [s[3] for s in rec["steps"]]
    out = jax.device_get(_replayer(env)(np.array([r["resources"] for r in records]),
                                        np.array([r["values"] for r in records]), actions))
    return parity.Replay(*map(np.asarray, out), [parity.observation_texts(r) for r in records],
                         np.array([len(r["steps"]) for r in records]), records)


def test_recording_is_of_this_table_and_version(env, data):
    assert data["textarena_version"] == "0.7.4" and data["env_id"] == "SimpleNegotiation-v0"
    assert tuple(data["actions"]) == env.actions
    assert len(data["games"]) >= 1000


def test_replay_matches_textarena(env, replayed):
    n, diffs = parity.differences(env, replayed)
    assert n > 11000 and not diffs, f"{len(diffs)} differences in {n} steps:\n" + "\n".join(diffs)


def test_games_cover_the_rules(replayed):
    texts = [t for game in replayed.texts for t in game]
    for needle in ("rejected the trade offer", "accepted the trade offer from Player 0",
                   "Offered items: 5 Wheat -> Requested items: 1 Ore", "Requested items: 3 Sheep, 1 Wood",
                   "Requested items: 1000000 Ore", "made no new trade offer"):
        assert any(needle in t for t in texts), needle
    assert any("Player 1 accepted the trade offer from Player 1." in t or "Player 0 accepted the trade offer from Player 0." in t
               for t in texts)  # a proposer accepting its own pending offer
    assert {tuple(r["rewards"]) for r in replayed.records} == {(1, -1), (-1, 1), (0, 0)}


def test_capacity_is_never_reached(env, replayed):
    assert replayed.count.max() + 40 <= env.capacity


def _as_textarena(move):
    """Our ``Offer`` as the recorder writes TextArena's reading."""
    def items(qty, order):
        present = [(int(order[r]), RESOURCES[r], int(qty[r])) for r in range(5) if order[r] < 5]
        return [[name, q] for _, name, q in sorted(present)]
    return [bool(move.accept), int(move.status), items(move.give, move.give_order), items(move.take, move.take_order)]


@pytest.mark.slow  # (10-20 s: the default suite keeps its 10 minutes)
def test_replies_read_as_textarena_reads_them(env, data):
    """The host reading (Python's ``re``) is TextArena's on every recorded probe (the
    table and 3,000 random offer-like replies), and the jit reading over bytes is the
    host's."""
    probes = data["parses"]
    assert len(probes) > 3000 and {p[1][1] for p in probes} == {0, 1, 2}
    for reply, want in probes:
        got = _as_textarena(env.parse_text(reply))
        want = [want[0], want[1], [[n, q if q <= 999_999_999 else NUMBER_CAP] for n, q in want[2]],
                [[n, q if q <= 999_999_999 else NUMBER_CAP] for n, q in want[3]]]
        assert got == want, reply
    replies = [p[0] for p in probes]
    width = max(len(r.encode()) for r in replies)
    data_, lengths = encode_bytes(replies, width)
    parsed = jax.device_get(jax.jit(jax.vmap(env.parse))(data_, lengths))
    for i, reply in enumerate(replies):
        host = env.parse_text(reply)
        for field in ("accept", "status", "give", "take", "give_order", "take_order"):
            np.testing.assert_array_equal(getattr(parsed, field)[i], getattr(host, field), err_msg=f"{field} of {reply!r}")


def test_random_starts_are_textarenas_ranges(env):
    states, _ = jax.jit(jax.vmap(env.reset))(jax.random.split(jax.random.key(0), 2000))
    resources, values = np.asarray(states.extra.resources), np.asarray(states.extra.values)
    assert resources.min() == 5 and resources.max() == 25
    for r, base in enumerate(BASE_VALUES):
        lo, hi = value_range(base)
        assert set(np.unique(values[:, :, r])) == set(range(lo, hi + 1))


@pytest.fixture(scope="module")
def tokenizers(replayed):
    return parity.train_tokenizers([t for game in replayed.texts[:150] for t in game])


def _excused(env, kind):
    """GPT-2's exception: a quantity of 1,000 or more (its digits cut into groups)."""
    if kind != "gpt2":
        return lambda o: False
    groups = np.asarray(env._group)
    return lambda o: bool(np.isin(o[: env.capacity], groups).any())


# both tokenizer kinds under -m slow (the default suite checks Kuhn's, 10-25 s each)
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["gpt2", "qwen2"])
def test_piece_boundaries_are_pretoken_splits(env, replayed, tokenizers, kind):
    parity.check_pretokens(env, replayed, tokenizers[kind], kind, _excused(env, kind), every=5)


# under -m slow (the default suite checks Kuhn's, 10-20 s)
@pytest.mark.slow
@pytest.mark.parametrize("every", [pytest.param(1, marks=pytest.mark.heavy), 3])
@pytest.mark.parametrize("kind", ["gpt2", "qwen2"])
def test_tokenize_equals_whole_string_encoding(env, replayed, tokenizers, kind, every):
    """Every third recorded observation (``-m slow``), every one with ``-m heavy``."""
    exact = parity.check_tokenize(env, replayed, tokenizers[kind], _excused(env, kind), every=every)
    assert exact > 0.8 * sum(replayed.steps) / every
