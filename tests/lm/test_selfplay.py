"""The language self-play learner (``jaxagents.learners.language``).

Default suite (no game played, seconds): replies are scored exactly as ``generate`` drew
them (constrained and free); turns split into the vector learners' per-seat samples with
the right returns and RAE advantages; LoRA starts at the checkpoint and trains only the
adapters; the games' tokenizer is rebuilt identically; bad settings are one-line errors.
Slow suite: the Kuhn baseline end to end through the CLI with its exact exploitability
logged; a Hugging Face checkpoint folder trained through LoRA adapters, resumed
identically; the multi-game mix.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxagents.learners.language import policy as policy_lib
from jaxagents.learners.language import selfplay
from jaxagents.learners.language.config import LanguageSelfPlayConfig, ModelSpec
from jaxagents.learners.policy_gradient import estimators
from jaxagents.lm import lora
from jaxagents.lm.episode import Turns
from jaxagents.lm.generate import Choices, Sampling, generate
from jaxagents.lm.model import init_params
from jaxagents.lm.tokenizer import Tokenizer

from .conftest import tiny_config

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
CHECKPOINT = os.path.join(ROOT, "tests", "data", "lm", "qwen2")
MOVES = ["[check]", "[bet]", "[call]", "[fold]"]


def _turns(prompt, length, gen, allowed) -> Turns:
    """A one-turn ``Turns`` record ``[1, B]`` around a ``Generation``."""
    b = prompt.shape[0]
    z = jnp.zeros((1, b), jnp.int32)
    return Turns(active=jnp.ones((1, b), bool), player=z, prompt=prompt[None], prompt_length=length[None],
                 tokens=gen.tokens[None], logprobs=gen.logprobs[None], mask=gen.mask[None], move=z,
                 invalid=jnp.zeros((1, b), bool), reward=jnp.zeros((1, b, 2)), done=jnp.ones((1, b), bool),
                 overflow=jnp.zeros((1, b), bool), allowed=allowed[None])


@pytest.mark.slow  # (10-20 s: the default suite keeps its 10 minutes)
@pytest.mark.parametrize("constrained", [True, pytest.param(False, marks=pytest.mark.slow)])
def test_replies_are_scored_as_generation_drew_them(tokenizer, constrained):
    cfg = tiny_config("llama", vocab_size=tokenizer.vocab_size)
    params = init_params(cfg, jax.random.key(0), scale=0.3)
    b, t = 6, 10
    prompt = jax.random.randint(jax.random.key(1), (b, t), 1, 250)
    length = jnp.array([10, 7, 9, 4, 10, 6], jnp.int32)
    sampling = Sampling(max_new_tokens=6, temperature=0.7, stop_token_ids=(tokenizer.eos_token_id,))
    choices = Choices.build(tokenizer, MOVES) if constrained else None
    allowed = jnp.array([[1, 1, 0, 0], [0, 0, 1, 1], [1, 0, 1, 0], [0, 1, 0, 0], [1, 1, 1, 1], [0, 0, 0, 1]], bool)
    gen = jax.jit(lambda p, k: generate(p, cfg, prompt, length, k, sampling, choices=choices,
                                        allowed=allowed if constrained else None))(params, jax.random.key(2))
    turns = _turns(prompt, length, gen, allowed if constrained else jnp.zeros((b, 0), bool))
    lp, ent = jax.jit(lambda p: policy_lib.reply_logprobs(p, cfg, turns, 0.7, choices))(params)
    mask = np.asarray(gen.mask)
    assert mask.sum() > b  # every reply has tokens, some several
    np.testing.assert_allclose(np.asarray(lp)[mask], np.asarray(gen.logprobs)[mask], atol=2e-5)
    assert np.all(np.asarray(lp)[~mask] == 0) and np.all(np.asarray(ent) >= -1e-6)
    if constrained:  # a forced token (one string open) has probability 1 and no entropy
        forced = mask & (np.abs(np.asarray(gen.logprobs)) < 1e-7)
        assert forced.any() and np.allclose(np.asarray(ent)[forced], 0.0, atol=1e-6)
    # differentiable, and finite gradients (closed columns never put inf into the gradient)
    g = jax.grad(lambda p: jnp.sum(policy_lib.reply_logprobs(p, cfg, turns, 0.7, choices)[0]))(params)
    assert all(bool(jnp.all(jnp.isfinite(x))) for x in jax.tree.leaves(g))


def test_turns_become_per_seat_samples_with_their_returns():
    # two games of three turns: seats alternate 0, 1, 0; game 0 ends at turn 2 (+1 to
    # seat 0), game 1 at turn 1 (+1 to seat 1); padding after the end
    k, b = 3, 2
    active = jnp.array([[1, 1], [1, 1], [1, 0]], bool)
    player = jnp.array([[0, 0], [1, 1], [0, 0]], jnp.int32)
    reward = jnp.zeros((k, b, 2)).at[2, 0].set(jnp.array([1.0, -1.0])).at[1, 1].set(jnp.array([-1.0, 1.0]))
    done = jnp.array([[0, 0], [0, 1], [1, 1]], bool)
    z = jnp.zeros((k, b), jnp.int32)
    turns = Turns(active=active, player=player, prompt=jnp.zeros((k, b, 4), jnp.int32), prompt_length=z,
                  tokens=jnp.zeros((k, b, 2), jnp.int32), logprobs=jnp.zeros((k, b, 2)),
                  mask=jnp.zeros((k, b, 2), bool), move=z, invalid=jnp.zeros((k, b), bool), reward=reward, done=done,
                  overflow=jnp.zeros((k, b), bool), allowed=jnp.zeros((k, b, 0), bool))
    tr = selfplay.seat_samples(turns, 0, 1, anchors=False)
    np.testing.assert_array_equal(tr.active[..., 0], active & (player == 0))
    np.testing.assert_array_equal(tr.active[..., 1], active & (player == 1))
    np.testing.assert_array_equal(tr.episode_return[2, 0], [1.0, -1.0])
    np.testing.assert_array_equal(tr.episode_return[1, 1], [-1.0, 1.0])
    assert float(jnp.abs(tr.episode_return).sum()) == 4.0
    baseline = jnp.array([[0.5, -0.5]])
    out, new = estimators.compute("rae", {"s": tr}, {"s": jnp.zeros((b, 2))}, {"s": jnp.arange(2)}, baseline,
                                  gamma=1.0, gae_lambda=1.0, rae_alpha=0.9)
    adv, w = np.asarray(out["s"].advantage), np.asarray(out["s"].weight)
    # every turn of a seat gets that seat's return minus its baseline
    assert adv[0, 0, 0] == adv[2, 0, 0] == 0.5 and adv[1, 0, 1] == -0.5
    assert adv[0, 1, 0] == -1.5 and adv[1, 1, 1] == 1.5
    assert w[0, 0, 0] and w[1, 0, 1] and w[2, 0, 0] and not w[2, 1, 0]
    # the table moves once per cell towards the batch mean: seat 0's mean 0, seat 1's 0
    np.testing.assert_allclose(np.asarray(new), [[0.45, -0.45]], atol=1e-6)


@pytest.mark.slow  # (10-20 s: the default suite keeps its 10 minutes)
def test_lora_starts_at_the_checkpoint_and_trains_only_adapters():
    cfg = tiny_config("qwen2")
    base = init_params(cfg, jax.random.key(0))
    adapters = lora.init(base, jax.random.key(1), rank=2, targets=("q", "v", "down"))
    merged = lora.merge(base, adapters, alpha=4.0)
    for a, b in zip(jax.tree.leaves(merged), jax.tree.leaves(base)):
        np.testing.assert_array_equal(a, b)  # b starts at zero: the model is the checkpoint's
    tokens = jnp.arange(12)[None] % cfg.vocab_size

    def loss(ad):
        from jaxagents.lm.model import logits_at

        return jnp.sum(logits_at(lora.merge(base, ad, 4.0), cfg, tokens, jnp.array([[3, 11]])) ** 2)

    g = jax.grad(loss)(adapters)
    assert float(jnp.abs(g["q"]["b"]).sum()) > 0 and float(jnp.abs(g["down"]["b"]).sum()) > 0
    with pytest.raises(ValueError, match="lora targets"):
        lora.init(base, jax.random.key(1), rank=2, targets=("q", "qq"))


def test_the_games_tokenizer_is_rebuilt_identically():
    import jaxagents

    envs = [jaxagents.make("text_kuhn_poker"), jaxagents.make("text_tic_tac_toe")]
    a = Tokenizer.train(policy_lib.corpus(envs), 400)
    b = Tokenizer.train(policy_lib.corpus(envs), 400)
    text = "[GAME] You are Player 0 in a 3 round game of Kuhn Poker. [bet] [4]"
    assert a.encode(text) == b.encode(text) and a.vocab_size == 400
    assert a.decode(a.encode(text)) == text
    assert len(a.encode(text)) < 0.7 * len(text)  # the games' words are merged, not spelled out
    with pytest.raises(ValueError, match="vocab_size"):
        Tokenizer.train(["x"], 100)


@pytest.mark.parametrize("kwargs,match", [
    ({"advantage": "gae"}, "advantage"),
    ({"advantage": "grpo"}, "group_size >= 2"),
    ({"group_size": 4}, "only applies"),
    ({"temperature": 0.0}, "temperature"),
    ({"loss": "reinforce", "update_epochs": 2}, "one step per update"),
    ({"model": {"lora_rank": -1}}, "model.lora_rank"),
    ({"model": {"lora_targets": ["q", "x"]}}, "lora targets"),
    ({"model": {"num_heads": 3}}, "num_kv_heads"),
    ({"games": [3]}, r"games\[0\]"),
    ({"advantage": "grpo", "group_size": 3}, "multiple of group_size"),
    ({"grad_chunks": 0}, "grad_chunks"),
    ({"loss": "ppo", "grad_chunks": 2}, "grad_chunks applies to loss='reinforce'"),
    ({"num_envs": 4, "num_steps": 3, "grad_chunks": 5}, "grad_chunks=5 must divide"),
    ({"kl_ref_rate": 0.1}, "set kl_coef > 0"),
    ({"kl_coef": 0.1, "kl_ref_rate": 1.5}, "kl_ref_rate"),
    ({"kl_ref_snapshots": 3}, "set kl_coef > 0"),
    ({"kl_coef": 0.1, "kl_ref_rate": 0.1, "kl_ref_snapshots": 3}, "leave kl_ref_rate at 0"),
    ({"kl_coef": 0.1, "kl_ref_snapshots": -1}, "kl_ref_snapshots"),
    ({"kl_ref_every": 0}, "kl_ref_every"),
])
def test_bad_settings_are_one_line_errors(kwargs, match):
    with pytest.raises(ValueError, match=match) as e:
        LanguageSelfPlayConfig(**kwargs)
    assert "\n" not in str(e.value)


def test_a_game_that_is_not_text_is_refused_by_name():
    import jaxagents

    with pytest.raises(ValueError, match="not a text game"):
        selfplay.text_games(LanguageSelfPlayConfig(), jaxagents.make("kuhn_poker"), None)
    assert ModelSpec().path is None


@pytest.mark.slow  # ~40-80 s: Leduc's information states rendered on the host
def test_held_out_games_are_evaluated_and_never_trained_on():
    """Kuhn trained, Leduc held out: Leduc's exact evaluation is reported under
    eval/heldout/, its text is in the tokenizer, and the batch, the RAE table and the
    fitness are Kuhn's alone."""
    import jaxagents

    cfg = LanguageSelfPlayConfig(num_envs=4, num_steps=3, total_timesteps=24, prompt_len=384, max_new_tokens=4,
                                 held_out=[{"id": "text_leduc_poker", "kwargs": {"max_rounds": 1}}],
                                 eval_prompt_len=512, model={"vocab_size": 400})
    learner = selfplay.make_train(cfg, jaxagents.make("text_kuhn_poker", max_rounds=1))
    state = jax.eval_shape(learner.init, jax.random.key(0))
    assert state.baseline.shape == (1, 2)  # one game trained: two (game, seat) cells
    _, metrics = jax.eval_shape(learner.update, state)
    assert "eval/heldout/TextLeducPoker/exploitability" in metrics and "eval/TextKuhnPoker/exploitability" in metrics
    assert not any("Leduc" in k for k in metrics if not k.startswith("eval/heldout/"))
    assert learner.fitness.names == ("eval/TextKuhnPoker/exploitability",)
    leduc = learner.agents.tables[1]
    assert len(learner.agents.tables) == 2 and leduc.choices is not None
    with pytest.raises(ValueError, match=r"held_out\[0\] must be a text game id"):
        LanguageSelfPlayConfig(held_out=[3])
    with pytest.raises(ValueError, match="not a text game"):
        selfplay.make_train(LanguageSelfPlayConfig(held_out=["kuhn_poker"]), jaxagents.make("text_kuhn_poker"))


# --------------------------------------------------------------------------- slow: end to end


def _train(tmp_path, config: str, *overrides: str) -> dict:
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "jaxagents.cli", "train", os.path.join(ROOT, "baselines", "configs", config),
           "--run-dir", str(out), "--quiet", *overrides]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(out / "results.json") as f:
        results = json.load(f)
    with open(out / "metrics.jsonl") as f:
        results["rows"] = [json.loads(line) for line in f]
    return results


SMALL = ["train.num_envs=8", "train.total_timesteps=48", "train.eval_every=1", "checkpoint_every=1"]


@pytest.mark.slow
def test_kuhn_baseline_trains_and_logs_its_exact_exploitability(tmp_path):
    r = _train(tmp_path, "lm_selfplay_kuhn.yaml", *SMALL)
    assert r["updates"] == 2
    start = r["start"]["eval/TextKuhnPoker/exploitability"]
    assert 0.3 < start < 0.6  # an untrained model plays close to uniformly (uniform: 0.458)
    rows = r["rows"]
    assert [row["update"] for row in rows] == [0, 1, 2]
    assert rows[-1]["selfplay/invalid_rate"] == 0.0 and rows[-1]["selfplay/reply_tokens"] == 3.0
    assert np.isfinite(rows[-1]["loss"]) and rows[-1]["grad_norm"] > 0


@pytest.mark.heavy
def test_a_checkpoint_folder_trains_lora_adapters_and_resumes_identically(tmp_path):
    """A Hugging Face folder (a tiny random Qwen2) with LoRA and PPO's epochs, the KL and the
    entropy: only the adapters move, and an update after a checkpoint round trip equals
    the uninterrupted one."""
    import jaxagents
    from jaxagents.checkpoint import Checkpointer
    from jaxagents.lm.load import load_params

    env = jaxagents.make("text_kuhn_poker", max_rounds=1)
    cfg = LanguageSelfPlayConfig(num_envs=4, num_steps=3, total_timesteps=24, prompt_len=384, max_new_tokens=4,
                                 loss="ppo", update_epochs=2, num_minibatches=2, kl_coef=0.1, ent_coef=0.01,
                                 model=ModelSpec(path=CHECKPOINT, lora_rank=2, lora_targets=("q", "v", "up")))
    learner = selfplay.make_train(cfg, env, evaluations={})
    update = jax.jit(learner.update)
    s0 = learner.init(jax.random.key(0))
    s1, m1 = update(s0)
    s2, m2 = update(s1)
    _, weights = load_params(CHECKPOINT, dtype="float32")
    for a, b in zip(jax.tree.leaves(s2.frozen), jax.tree.leaves(weights)):
        np.testing.assert_array_equal(a, b)  # the checkpoint's weights stay frozen
    assert float(jnp.abs(s2.params["up"]["b"]).sum()) > 0  # the adapters moved
    assert np.isfinite(float(m2["loss"])) and float(m2["kl"]) >= 0 and float(m1["selfplay/invalid_rate"]) == 0
    ckpt = Checkpointer(str(tmp_path / "ckpt"))
    ckpt.save(1, s1, {}, {})
    ckpt.close()
    ckpt = Checkpointer(str(tmp_path / "ckpt"))
    restored, _, _ = ckpt.restore_newest(learner.init(jax.random.key(5)))
    ckpt.close()
    r2, n2 = update(restored)
    data = lambda x: np.asarray(jax.random.key_data(x) if jnp.issubdtype(x.dtype, jax.dtypes.prng_key) else x)  # noqa: E731
    for a, b in zip(jax.tree.leaves(s2), jax.tree.leaves(r2)):
        np.testing.assert_array_equal(data(a), data(b))
    assert float(n2["loss"]) == float(m2["loss"])


@pytest.mark.heavy
def test_multigame_mixes_games_with_a_baseline_per_game_and_role():
    """Kuhn (constrained), Tic-Tac-Toe (constrained) and the negotiation (free replies) in
    one update: statistics per game, one RAE cell per (game, seat)."""
    import jaxagents

    cfg = LanguageSelfPlayConfig(num_envs=4, num_steps=6, total_timesteps=24, prompt_len=768, max_new_tokens=12,
                                 games=("text_tic_tac_toe", "text_negotiation"))
    learner = selfplay.make_train(cfg, jaxagents.make("text_kuhn_poker", max_rounds=1), evaluations={})
    state, m = jax.jit(learner.update)(learner.init(jax.random.key(0)))
    for game in ("TextKuhnPoker", "TextTicTacToe1", "TextSimpleNegotiation2"):
        assert f"selfplay/{game}/reply_tokens" in m
    assert float(m["selfplay/TextKuhnPoker/invalid_rate"]) == 0 and float(m["selfplay/TextTicTacToe1/invalid_rate"]) == 0
    assert state.baseline.shape == (1, 6)
    # Kuhn's games all end within 6 turns: its cells moved; a cell moves only with finished games
    assert np.all(np.asarray(state.baseline[0, :2]) != 0) or float(m["selfplay/TextKuhnPoker/return_seat0"]) == 0
    assert np.isfinite(float(m["loss"]))


@pytest.mark.slow
def test_grad_chunks_take_the_same_step():
    """``grad_chunks``: the loss and gradient summed over pieces of the turns make the
    same update as the whole batch at once (float rounding aside), metrics included."""
    import jaxagents

    env = jaxagents.make("text_kuhn_poker", max_rounds=1, payoff="chips")
    out = {}
    for chunks in (1, 3):
        cfg = LanguageSelfPlayConfig(num_envs=4, num_steps=3, total_timesteps=24, prompt_len=320, max_new_tokens=4,
                                     ent_coef=0.05, grad_chunks=chunks, eval_every=100)
        learner = selfplay.make_train(cfg, env, evaluations={})
        out[chunks] = jax.jit(learner.update)(learner.init(jax.random.key(0)))
    (one, m1), (three, m3) = out[1], out[3]
    assert float(m1["grad_norm"]) > 0
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6), one.params, three.params)
    for k in ("loss", "pg_loss", "entropy", "grad_norm"):
        np.testing.assert_allclose(float(m3[k]), float(m1[k]), rtol=1e-4, err_msg=k)


@pytest.mark.slow
def test_a_moving_kl_reference_follows_the_weights():
    """``kl_ref_rate``: the reference is the initial model at first (KL 0 at the first
    update) and then the trained weights' exponential average, ``(1 - r) ref + r params``
    after every update; with ``kl_ref_rate: 0`` it stays the initial model."""
    import jaxagents

    env = jaxagents.make("text_kuhn_poker", max_rounds=1, payoff="chips")
    runs = {}
    for rate in (0.0, 0.25):
        cfg = LanguageSelfPlayConfig(num_envs=4, num_steps=3, total_timesteps=36, prompt_len=320, max_new_tokens=4,
                                     lr=0.01, kl_coef=0.5, kl_ref_rate=rate, eval_every=100)
        learner = selfplay.make_train(cfg, env, evaluations={})
        update = jax.jit(learner.update)
        s0 = learner.init(jax.random.key(0))
        s1, m1 = update(s0)
        s2, m2 = update(s1)
        runs[rate] = (s0, s1, s2, m1, m2)
        assert abs(float(m1["kl"])) < 1e-6 and float(m2["kl"]) > 0  # the first update scores against itself
    s0, s1, s2, _, _ = runs[0.0]
    jax.tree.map(np.testing.assert_array_equal, s2.reference, s0.params)  # frozen
    s0, s1, s2, _, _ = runs[0.25]
    expected = jax.tree.map(lambda r, p: 0.75 * r + 0.25 * p, s1.reference, s2.params)
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7), s2.reference, expected)
    moved = sum(float(jnp.abs(a - b).sum()) for a, b in zip(jax.tree.leaves(s2.reference), jax.tree.leaves(s0.params)))
    assert moved > 0


def test_a_mixture_scores_each_reply_as_the_mean_of_its_probabilities():
    rng = np.random.default_rng(0)
    length = np.array([3, 1, 0, 2])
    real = np.arange(3)[None] < length[:, None]  # [S, N]
    lp = np.where(real[None], np.log(rng.uniform(0.05, 1.0, (4,) + real.shape)), 0.0)  # [K, S, N]
    mixed = np.asarray(policy_lib.mixture_logprobs(jnp.asarray(lp, jnp.float32)))
    # the reply's log-probability is the log of the models' mean probability of it
    np.testing.assert_allclose(mixed.sum(1), np.log(np.exp(lp.sum(2)).mean(0)), rtol=1e-5, atol=1e-6)
    # every token's conditional is a probability, nothing past a reply's end
    assert np.all(mixed <= 1e-6) and np.all(mixed[~real] == 0)
    # each prefix's conditionals sum to the mixture's probability of that prefix
    np.testing.assert_allclose(np.cumsum(mixed, 1)[:, 0], np.log(np.exp(lp[:, :, 0]).mean(0)), rtol=1e-5, atol=1e-6)
    # one model is its own mixture
    np.testing.assert_allclose(np.asarray(policy_lib.mixture_logprobs(jnp.asarray(lp[:1]))), lp[0], atol=1e-6)


@pytest.mark.slow
def test_a_mixture_of_snapshots_is_the_kl_reference():
    """``kl_ref_snapshots: K``: a ring of K snapshots of the weights, all the initial
    model at first (KL 0 at the first update), slot ``(u // every) % K`` taking the
    weights after update ``u`` whenever ``every`` divides it."""
    import jaxagents

    env = jaxagents.make("text_kuhn_poker", max_rounds=1, payoff="chips")
    cfg = LanguageSelfPlayConfig(num_envs=4, num_steps=3, total_timesteps=48, prompt_len=320, max_new_tokens=4,
                                 lr=0.01, kl_coef=0.5, kl_ref_snapshots=2, kl_ref_every=2, eval_every=100)
    learner = selfplay.make_train(cfg, env, evaluations={})
    update = jax.jit(learner.update)
    states, kls = [learner.init(jax.random.key(0))], []
    for _ in range(4):
        s, m = update(states[-1])
        states.append(s)
        kls.append(float(m["kl"]))
    ring = lambda s, k: jax.tree.map(lambda r: r[k], s.reference)  # noqa: E731
    same = lambda a, b: jax.tree.map(np.testing.assert_array_equal, a, b)  # noqa: E731
    same(ring(states[1], 0), states[0].params)
    same(ring(states[1], 1), states[0].params)  # update 1: no snapshot yet
    same(ring(states[2], 1), states[2].params)  # update 2: slot 1
    same(ring(states[2], 0), states[0].params)
    same(ring(states[3], 1), states[2].params)  # update 3: none
    same(ring(states[4], 0), states[4].params)  # update 4: slot 0
    same(ring(states[4], 1), states[2].params)
    assert abs(kls[0]) < 1e-6 and kls[1] > 0 and kls[3] > 0


@pytest.mark.slow
def test_tic_tac_toe_logs_the_greedy_policy_against_minimax():
    """The game's scripted opponents become evaluations: Tic-Tac-Toe's minimax, half the
    games in each seat, the model greedy and constrained (never an invalid move)."""
    import jaxagents

    cfg = LanguageSelfPlayConfig(num_envs=2, num_steps=9, total_timesteps=18, prompt_len=640, max_new_tokens=4,
                                 eval_games=4)
    learner = selfplay.make_train(cfg, jaxagents.make("text_tic_tac_toe"))
    m = jax.jit(learner.evaluate)(learner.init(jax.random.key(0)), jax.random.key(1))
    prefix = "eval/TextTicTacToe/minimax/"
    assert float(m[prefix + "invalid_rate"]) == 0 and float(m[prefix + "win"]) == 0  # minimax is never beaten
    assert abs(float(m[prefix + "win"] + m[prefix + "draw"] + m[prefix + "loss"] + m[prefix + "unfinished"]) - 1) < 1e-6
    assert float(m[prefix + "response_tokens"]) == 3.0
    assert learner.fitness.names == (prefix + "win",)
