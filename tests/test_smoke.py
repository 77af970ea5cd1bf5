"""The smoke set: the least that must work for a declared dependency version to count
as supported. CI runs this file with the default conformance suite (every registered id
but the aliases and scenarios that share another id's code),

    pytest -m "smoke or not (slow or heavy)" tests/test_smoke.py tests/test_conformance.py

in an environment pinned to the lowest versions ``pyproject.toml`` declares
(``.ci/lowest.txt``) and in one on Python 3.12 with the newest versions. In the main
environment these checks run with the slow suite: the default suite covers each of them
in more depth already.

- one update of every learner, built from a run config as ``jaxagents train`` builds it;
- a train state through an orbax checkpoint and back, bit for bit;
- one population update sharded over two (fake) devices.
"""

import os
import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest

from jaxagents import runner
from jaxagents.checkpoint import Checkpointer

pytestmark = [pytest.mark.smoke, pytest.mark.slow]

PPO = ["train.num_envs=4", "train.num_steps=4", "train.total_timesteps=32", "train.update_epochs=1",
       "train.num_minibatches=1"]
SELFPLAY = [o.replace("train.", "train.ppo.") for o in PPO]
Q = ["train.num_envs=2", "train.num_steps=4", "train.total_timesteps=16", "train.buffer_size=64",
     "train.batch_size=2", "train.sample_length=4", "train.learning_starts=0", "train.network.gru_size=8",
     "train.network.hidden=[8]"]

# learner -> (environment, overrides): small enough to compile in seconds
LEARNERS = {
    "ippo": ("stag_hunt", PPO),
    "mappo": ("robots_navigation", PPO),
    "selfplay": ("kuhn_poker", SELFPLAY),
    "fcp": ("coordination", SELFPLAY + ["population.size=2", "train.holdout=0"]),
    "pqn": ("stag_hunt", PPO),
    "iql": ("stag_hunt", Q),
    "vdn": ("stag_hunt", Q),
    "qmix": ("robots_navigation", Q),
}


def _config(learner: str) -> dict:
    env_id, overrides = LEARNERS[learner]
    return runner.load_config(None, [f"learner={learner}", f"env.id={env_id}", *overrides])


def _finite(tree) -> bool:
    """Every floating leaf of ``tree`` is finite (keys and integers are left out)."""
    floats = [np.asarray(x) for x in jax.tree.leaves(tree) if jax.numpy.issubdtype(x.dtype, jax.numpy.floating)]
    return bool(floats) and all(np.isfinite(x).all() for x in floats)


def _one_update(trainer, key):
    """``init`` then one ``update``, compiled, at the config's hyper-parameters (a
    population -- FCP's partners -- gives them to every member)."""
    hparams = getattr(trainer, "default_hparams", None)
    state = jax.jit(trainer.init)(key, hparams)
    return jax.jit(trainer.update)(state, hparams)


@pytest.mark.parametrize("learner", sorted(LEARNERS))
def test_one_update_of_every_learner(learner):
    state, _ = _one_update(runner.build(_config(learner)), jax.random.key(0))
    assert _finite(getattr(state, "members", state).params)  # a population's fitness is NaN until evaluated


def test_checkpoint_round_trip(tmp_path):
    trainer = runner.build(_config("selfplay"))
    state, _ = _one_update(trainer, jax.random.key(0))
    ckpt = Checkpointer(tmp_path / "checkpoints")
    ckpt.save(1, state, config={"learner": "selfplay"})
    ckpt.close()
    like = jax.jit(trainer.init)(jax.random.key(1), trainer.default_hparams)
    restored, _, _ = Checkpointer(tmp_path / "checkpoints", create=False).restore(like)
    a, b = jax.tree.leaves(state), jax.tree.leaves(restored)
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(_bits(x), _bits(y))


def _bits(x) -> np.ndarray:
    """``x`` as a numpy array; a random key as its key data."""
    return np.asarray(jax.random.key_data(x) if jax.numpy.issubdtype(x.dtype, jax.dtypes.prng_key) else x)


def test_population_update_on_two_fake_devices():
    script = textwrap.dedent("""
        import jax, numpy as np
        from jaxagents import runner
        assert jax.device_count() == 2, jax.devices()
        cfg = runner.load_config(None, {overrides!r} + ["env.id=stag_hunt", "population.size=4"])
        pop = runner.build(cfg)
        state = pop.init(jax.random.key(0))
        state, metrics = jax.jit(pop.update)(state)
        print(sorted({{d.id for x in jax.tree.leaves(state) for d in x.devices()}}))
        floats = [np.asarray(x) for x in jax.tree.leaves(state.members.params)]
        assert floats and all(np.isfinite(x).all() for x in floats)
    """).format(overrides=["learner=ippo", *PPO])
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2", "JAX_PLATFORMS": "cpu"}
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.splitlines()[-1] == "[0, 1]", r.stdout  # the members span both devices


def test_language_model_checkpoint_loads_and_generates():
    """A Hugging Face folder (tests/data/lm: safetensors, tokenizer.json, chat template)
    loads, reproduces the reference logits and greedy tokens, and samples under jit."""
    import jax.numpy as jnp

    from jaxagents.lm.generate import Sampling, generate
    from jaxagents.lm.load import load_params
    from jaxagents.lm.model import logits_of
    from jaxagents.lm.tokenizer import Tokenizer

    folder = os.path.join(os.path.dirname(__file__), "data", "lm", "qwen2_sharded_bf16")
    cfg, params = load_params(folder, dtype="float32")
    ref = np.load(os.path.join(folder, "reference.npz"))
    ids = jnp.asarray(ref["input_ids"])
    np.testing.assert_allclose(np.asarray(logits_of(params, cfg, ids)), ref["logits"], atol=1e-4)
    out = generate(params, cfg, ids, jnp.full(ids.shape[0], ids.shape[1]), jax.random.PRNGKey(0),
                   Sampling(32, temperature=0.0))
    np.testing.assert_array_equal(np.asarray(out.tokens), ref["greedy_ids"])
    tok = Tokenizer.from_folder(folder)
    assert tok.apply_chat_template([{"role": "user", "content": "hi"}]).endswith("assistant\n")
