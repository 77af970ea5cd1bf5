"""Regenerates ``data/selfplay_pool_reference.npz``: two updates of a self-play run with
an opponent pool (``POOL``), every metric and every leaf of the final train state, from
the pool implementation before the league (``COMMIT``, 1ec1535).

``test_league.py::test_ring_buffer_run_matches_the_pre_league_pool`` runs the
same capture with today's code (its ring-buffer league) and compares bit for bit. The
script refuses to record from any code but that commit's (``tests/reference_data.py``
says how to run it there): recorded from today's code the test would compare the code
with itself. Recorded on CPU with JAX 0.10.2 under the suite's XLA flags (set below);
another XLA build rounds differently, which is the reason to regenerate.

    python tests/learners/selfplay_pool_reference.py     # with 1ec1535's package installed
"""

from __future__ import annotations

import os

PATH = os.path.join(os.path.dirname(__file__), "data", "selfplay_pool_reference.npz")
COMMIT = "1ec153581e5a44f87232c29943c936ecd161e85b"
# XLA's CPU code rounds differently on another processor (an Intel Xeon differs by up to
# 3.6e-7 absolute, 5e-4 relative, in 34 of 123 leaves; another "AMD EPYC" by 8.7e-6
# relative), so the test is bit for bit only where asked (JAXAGENTS_POOL_REFERENCE_EXACT=1).

# One minibatch: the reference must not depend on the minibatch shuffle, which changed
# after 1ec1535 (jaxagents.core.rng.permutation) independently of the pool and league.
POOL = dict(ppo=dict(num_envs=16, num_steps=8, total_timesteps=16 * 8 * 4, update_epochs=2, num_minibatches=1),
            eval_every=1, eval_envs=8, eval_steps=4, pool_size=3, pool_every=1, pool_prob=0.5, average_decay=0.9)


def capture(cfg, updates: int = 2) -> dict:
    """``{"m<u>/<metric>": f32[], "s/<state leaf path>": array}`` of ``updates`` updates
    of self-play on Kuhn poker from key 0 (typed keys as their key data)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    import jaxagents
    from jaxagents.learners.policy_gradient.selfplay import make_train

    train = make_train(cfg, jaxagents.make("kuhn_poker"))
    state = jax.jit(train.init)(jax.random.key(0))
    update = jax.jit(train.update)
    out = {}
    for u in range(updates):
        state, m = update(state)
        out.update({f"m{u}/{k}": np.asarray(v) for k, v in m.items()})
    for p, v in jax.tree_util.tree_leaves_with_path(state):
        v = jax.random.key_data(v) if jnp.issubdtype(v.dtype, jax.dtypes.prng_key) else v
        out["s/" + jax.tree_util.keystr(p)] = np.asarray(v)
    return out


def _reference_data():
    import importlib.util

    spec = importlib.util.spec_from_file_location("reference_data", os.path.join(os.path.dirname(__file__), "..",
                                                                                 "reference_data.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def record(path: str = PATH) -> None:
    ref = _reference_data()
    root = ref.require_checkout(COMMIT)  # before anything is computed
    from jaxagents.learners.policy_gradient.selfplay import SelfPlayConfig

    data = capture(SelfPlayConfig(**POOL))
    ref.require_modules_from(root)
    ref.save(path, data, COMMIT, compressed=False)


if __name__ == "__main__":
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_backend_optimization_level=0").strip()
    record()
    print(f"wrote {PATH}")
