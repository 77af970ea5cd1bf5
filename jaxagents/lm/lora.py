"""Low-rank adapters (LoRA, Hu et al. 2021) on the decoder's stacked weights.

A model too large to train whole is trained through adapters: for each targeted matrix
``W [L, D_in, D_out]`` (every layer's, stacked like ``params["layers"]``), two factors
``a [L, D_in, r]`` (random) and ``b [L, r, D_out]`` (zero, so training starts at the
checkpoint), and the layer uses ``W + (alpha / r) a b``. The adapters are a pytree of
their own -- the only leaves the optimiser sees -- and ``merge`` folds them into a copy
of the frozen weights before each forward pass (``r (D_in + D_out)`` extra numbers per
matrix instead of ``D_in D_out``; the merge costs one small matrix product per matrix).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

TARGETS = ("q", "k", "v", "o", "gate", "up", "down")  # the layer matrices an adapter may target


def check_targets(targets) -> tuple[str, ...]:
    """``targets`` as a tuple of names from ``TARGETS`` (at least one, no repeats)."""
    targets = tuple(targets)
    bad = [t for t in targets if t not in TARGETS]
    if bad or not targets or len(set(targets)) != len(targets):
        raise ValueError(f"lora targets must be distinct names from {TARGETS}, got {list(targets)}")
    return targets


def init(params: dict, key: jax.Array, rank: int, targets=("q", "v"), scale: float = 0.02) -> dict:
    """Adapters for ``params``' layer matrices named in ``targets``:
    ``{name: {"a": [L, D_in, r], "b": [L, r, D_out]}}`` in the weights' dtype,
    ``a`` normal(0, ``scale``), ``b`` zero."""
    targets = check_targets(targets)
    if not isinstance(rank, int) or rank < 1:
        raise ValueError(f"lora rank must be a positive integer, got {rank!r}")
    missing = [t for t in targets if t not in params["layers"]]
    if missing:
        raise ValueError(f"lora targets {missing} are not matrices of this model (it has {sorted(params['layers'])})")
    out = {}
    for k, name in zip(jax.random.split(key, len(targets)), targets):
        w = params["layers"][name]["kernel"]
        n, din, dout = w.shape
        out[name] = {"a": (scale * jax.random.normal(k, (n, din, rank), jnp.float32)).astype(w.dtype),
                     "b": jnp.zeros((n, rank, dout), w.dtype)}
    return out


def merge(params: dict, adapters: dict, alpha: float) -> dict:
    """A copy of ``params`` with each adapted kernel replaced by ``W + (alpha / r) a b``
    (differentiable in ``adapters``; ``params`` is the frozen base)."""
    layers = dict(params["layers"])
    for name, ab in adapters.items():
        rank = ab["a"].shape[-1]
        delta = jnp.einsum("ldr,lro->ldo", ab["a"], ab["b"]) * (alpha / rank)
        layers[name] = {**layers[name], "kernel": layers[name]["kernel"] + delta.astype(layers[name]["kernel"].dtype)}
    return {**params, "layers": layers}
