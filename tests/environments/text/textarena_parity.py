"""Shared by the text games' tests: the recorded TextArena games
(``tests/data/textarena``, written by ``experiments/textarena_reference/record.py``),
their replay through a text environment in one compiled program, the comparison, and
the two small byte-level BPE tokenizers of the tokenization checks.

Loaded by path from the test modules (the tests folder is no package).
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import pathlib

import jax
import jax.numpy as jnp
import numpy as np

DATA = pathlib.Path(__file__).resolve().parents[2] / "data" / "textarena"

# Qwen2's pre-tokenizer regex (its tokenizer.json), and GPT-2's is tokenizers' ByteLevel
QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
                 r"\s*[\r\n]+|\s+(?!\S)|\s+")


def load(game: str) -> dict:
    """The recorded games of ``game`` (``kuhn_poker``, ``tic_tac_toe``, ...)."""
    with gzip.open(DATA / f"{game}.json.gz", "rt", encoding="utf-8") as f:
        return json.load(f)


@dataclasses.dataclass
class Replay:
    """The recorded games replayed: per game ``g`` and step ``t`` (padded to ``S``).

    ``obs``: ``i32[G, S, P + U]`` the acting player's observation before step ``t``;
    ``player``, ``mask`` (``bool[G, S, A]``), ``done`` (after the step), ``reward``
    (``f32[G, S, 2]`` after the step), ``count`` (pieces used, both players, before the
    step); ``texts``: the recorded observation strings; ``steps``: ``i32[G]``."""

    obs: np.ndarray
    player: np.ndarray
    mask: np.ndarray
    done: np.ndarray
    reward: np.ndarray
    count: np.ndarray
    texts: list
    steps: np.ndarray
    records: list


def observation_texts(game: dict) -> list[str]:
    """The full observation string of every step of a recorded game."""
    seen = {0: "", 1: ""}
    out = []
    for pid, delta, *_ in game["steps"]:
        seen[pid] += delta
        out.append(seen[pid])
    return out


def make_replayer(env, num_steps: int, with_deals: bool):
    """A compiled ``fn(deals i32[G, R, 2], actions i32[G, S]) -> arrays`` that plays
    every game from its deal with the recorded actions (after the end a game stays as
    it is)."""

    def one(deals, actions):
        if with_deals:
            state, ts = env.reset_with_deals(deals)
        else:
            state, ts = env.reset(jax.random.key(0))

        def body(carry, a):
            state, ts = carry
            p = ts.info["player"]
            obs = jnp.where(p == 1, ts.obs["player_1"][0], ts.obs["player_0"][0])
            mask = jnp.where(p == 1, ts.action_mask["player_1"][0], ts.action_mask["player_0"][0])
            count = state.log.count
            acts = {"player_0": a[None], "player_1": a[None]}
            state, ts = env.step(jax.random.key(1), state, acts)
            reward = jnp.stack([ts.reward["player_0"][0], ts.reward["player_1"][0]])
            return (state, ts), (obs.astype(jnp.int16), p, mask, ts.terminated, reward, count)

        return jax.lax.scan(body, (state, ts), actions)[1]

    return jax.jit(jax.vmap(one))


def replay(env, data: dict, replayer, num_steps: int, games: int | None = None) -> Replay:
    """Replay the first ``games`` recorded games (all when None) with ``replayer``."""
    records = data["games"][:games]
    g = len(records)
    actions = np.zeros((g, num_steps), np.int32)
    for i, rec in enumerate(records):
        a = [s[3] for s in rec["steps"]]
        assert len(a) <= num_steps, f"a recorded game has {len(a)} steps, more than {num_steps}"
        actions[i, : len(a)] = a
    deals = np.array([rec.get("deals", [[0, 1]]) for rec in records], np.int32)
    obs, player, mask, done, reward, count = jax.device_get(replayer(deals, actions))
    return Replay(np.asarray(obs), np.asarray(player), np.asarray(mask), np.asarray(done), np.asarray(reward),
                  np.asarray(count), [observation_texts(r) for r in records],
                  np.array([len(r["steps"]) for r in records]), records)


def differences(env, rep: Replay, limit: int = 5) -> tuple[int, list[str]]:
    """Compare every recorded step with the replay: ``(steps compared, differences)``
    (at most ``limit`` described, the rest counted)."""
    out, n = [], 0

    def note(msg):
        if len(out) < limit:
            out.append(msg)
        else:
            out.append(None)

    for i, rec in enumerate(rep.records):
        for t, (pid, _, legal, action, done) in enumerate(rec["steps"]):
            n += 1
            where = f"game {rec['seed']} step {t}"
            if rep.player[i, t] != pid:
                note(f"{where}: player {rep.player[i, t]}, TextArena {pid}")
                continue
            text = env.render_observation(rep.obs[i, t])
            if text != rep.texts[i][t]:
                want = rep.texts[i][t]
                k = next((j for j in range(min(len(text), len(want))) if text[j] != want[j]), min(len(text), len(want)))
                note(f"{where}: observation differs at {k}: {want[k - 60:k + 60]!r} vs {text[k - 60:k + 60]!r}")
            mask = "".join("1" if x else "0" for x in rep.mask[i, t])
            if mask != legal:
                note(f"{where}: legal strings {mask}, TextArena {legal}")
            if bool(rep.done[i, t]) != done:
                note(f"{where}: done {bool(rep.done[i, t])}, TextArena {done}")
            if done and list(rep.reward[i, t]) != rec["rewards"]:
                note(f"{where}: rewards {list(rep.reward[i, t])}, TextArena {rec['rewards']}")
    missing = sum(m is None for m in out)
    out = [m for m in out if m is not None] + ([f"... and {missing} more"] if missing else [])
    return n, out


# ----------------------------------------------------------------------------- tokenizers
def train_tokenizers(texts: list[str], vocab_size: int = 800) -> dict:
    """Two byte-level BPE tokenizers trained on ``texts``: ``gpt2`` (GPT-2's ByteLevel
    pre-tokenizer) and ``qwen2`` (a Split on Qwen2's regex, then ByteLevel without its
    own regex, as Qwen2's tokenizer.json)."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

    out = {}
    for name in ("gpt2", "qwen2"):
        tok = Tokenizer(models.BPE())
        if name == "gpt2":
            tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
        else:
            tok.pre_tokenizer = pre_tokenizers.Sequence([
                pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated", invert=False),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            ])
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                      show_progress=False)
        tok.train_from_iterator(texts, trainer)
        out[name] = tok
    return out


def make_tokenizer_fn(env, table, slot_tokens, slot_lengths):
    """A compiled ``fn(obs i32[N, P + U]) -> (ids, lengths)``: each observation's
    tokens, utterance slots from the per-action slot tokens ``[A, V, Lu]``."""
    from jaxagents.lm.text import tokenize

    st, sl = jnp.asarray(slot_tokens), jnp.asarray(slot_lengths)

    def one(obs):
        pieces, acts = obs[: env.capacity], obs[env.capacity:]
        a = jnp.clip(acts, 0, st.shape[0] - 1)
        return tokenize(pieces, st[a], jnp.where((acts >= 0)[:, None], sl[a], 0), table)

    return jax.jit(jax.vmap(one))


def pretokens(tok, text: str) -> list[str]:
    """The pre-tokens of ``text`` under ``tok``'s pre-tokenizer."""
    return [p for p, _ in tok.pre_tokenizer.pre_tokenize_str(text)]


def splits_at_pieces(tok, pieces: list[str]) -> bool:
    """Whether the pieces' pre-tokens, each piece alone, are the whole string's: then
    every BPE vocabulary over this pre-tokenizer tokenizes piece by piece exactly."""
    return [p for s in pieces for p in pretokens(tok, s)] == pretokens(tok, "".join(pieces))


def observations(replayed: Replay) -> list:
    """``[(obs i32[P + U], text)]`` of every recorded step."""
    return [(replayed.obs[i, t], text) for i, game in enumerate(replayed.texts) for t, text in enumerate(game)]


def excused_gpt2(env) -> set[int]:
    """The action indices whose echo ends in whitespace: a GPT-2 pre-token boundary no
    piece cut can fix (``jaxagents_environments.text.base``)."""
    return {a for a, e in enumerate(env.echoes) if e[-1].isspace()}


def check_pretokens(env, replayed: Replay, tok, kind: str, excused=lambda o: False, every: int = 3) -> None:
    """Every piece boundary of the recorded observations (every ``every``-th) is a split
    point of ``tok``'s pre-tokenizer, each piece pre-tokenizing alone as inside the
    whole text, except where ``excused(obs)``; there (GPT-2) the boundary is shown to be
    no split point."""
    n_excused = violations = 0
    for o, text in observations(replayed)[::every]:
        o = o.astype(np.int32)
        strings = env.piece_table.strings(o[: env.capacity], [env.echoes[a] if a >= 0 else None for a in o[env.capacity:]])
        assert "".join(strings) == text
        if excused(o):
            n_excused += 1
            violations += not splits_at_pieces(tok, strings)
            continue
        assert splits_at_pieces(tok, strings), f"{kind}: a piece boundary is no split point in\n{text[-300:]!r}"
    assert violations == n_excused, "an excused observation tokenizes exactly after all: the exception is stale"


def check_tokenize(env, replayed: Replay, tok, excused=lambda o: False, max_len: int = 2048, chunk: int = 2048,
                   every: int = 1) -> int:
    """``tokenize(pieces) == encode(render(pieces))`` on every recorded observation (every
    ``every``-th), inside ``jit`` (in chunks of ``chunk`` observations, one compiled program), with the
    environment's utterances encoded whole per slot; where ``excused(obs)`` the tokens
    still decode to the text. Returns the exact count."""
    from jaxagents.lm.text import TokenTable

    table = TokenTable.build(env.piece_table, tok, max_len=max_len)
    slots, slot_len = TokenTable.encode_slots(env.piece_table, tok, list(env.echoes), num_slots=len(env.actions))
    fn = make_tokenizer_fn(env, table, slots, slot_len)
    pairs = observations(replayed)[::every]
    obs = np.stack([o for o, _ in pairs]).astype(np.int32)
    padded = np.concatenate([obs, np.full((-len(obs) % chunk, obs.shape[1]), -1, np.int32)])
    ids, lengths = [], []
    for i in range(0, len(padded), chunk):
        a, b = jax.device_get(fn(padded[i : i + chunk]))
        ids.append(a)
        lengths.append(b)
    ids, lengths = np.concatenate(ids), np.concatenate(lengths)
    encoded = tok.encode_batch([text for _, text in pairs])
    exact = 0
    for (o, text), row, n, enc in zip(pairs, ids, lengths, encoded):
        assert n < max_len, "an observation fills max_len: raise it"
        got = row[:n].tolist()
        if got == enc.ids:
            exact += 1
            continue
        assert excused(o), f"tokens differ from the whole string's for\n{text[-300:]!r}"
        assert tok.decode(got) == text
    return exact


def uses(env, actions: set[int]):
    """``excused`` predicate: the observation shows one of ``actions``' utterances."""
    def check(o):
        tail = o[env.capacity:]
        return bool(set(tail[tail >= 0].tolist()) & actions)
    return check


def game_fixtures(env_id: str, recording: str, steps: int, with_deals: bool, tokenizer_games: int):
    """The module-scoped fixtures every text-game test module starts from, as
    ``(env, data, replayed, tokenizers)``: the registered environment, its recording, the
    recording replayed through it (``steps`` steps per game; ``with_deals``: the poker
    deals recorded from Python's ``random``), and tokenizers trained on the texts of the
    first ``tokenizer_games`` games. Bind them to those names in the test module."""
    import pytest

    import jaxagents

    @pytest.fixture(scope="module")
    def env():
        return jaxagents.make(env_id)

    @pytest.fixture(scope="module")
    def data():
        return load(recording)

    @pytest.fixture(scope="module")
    def replayed(env, data):
        return replay(env, data, make_replayer(env, steps, with_deals=with_deals), steps)

    @pytest.fixture(scope="module")
    def tokenizers(replayed):
        return train_tokenizers([t for game in replayed.texts[:tokenizer_games] for t in game])

    return env, data, replayed, tokenizers
