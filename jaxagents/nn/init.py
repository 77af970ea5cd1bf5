"""Weight initialisers that are safe under ``vmap``.

``orthogonal`` is PPO's usual initialiser. JAX's own version calls a QR
factorisation; under ``vmap`` (training many seeds in one program) that becomes a
*batched* LAPACK QR, which jaxlib's CPU kernel splits over its thread pool --
and on a small CPU it can deadlock inside a compiled training program (observed
with jax 0.10 on 2 cores: every thread waiting in ``ParallelBatchMap``). Here the
QR has a batching rule that runs the batch sequentially with ``lax.map`` instead;
initialisation runs once per training, so nothing is lost.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp


@jax.custom_batching.custom_vmap
def _qr(a):
    q, r = jnp.linalg.qr(a)
    return q, r


@_qr.def_vmap
def _qr_vmap(axis_size, in_batched, a):
    (batched,) = in_batched
    if not batched:
        return _qr(a), (False, False)
    return jax.lax.map(_qr, a), (True, True)


def orthogonal(scale: float = 1.0):
    """An orthogonal initialiser (rows or columns orthonormal, times ``scale``)."""

    def init(key, shape, dtype=jnp.float32):
        rows, cols = math.prod(shape[:-1]), shape[-1]
        tall = (max(rows, cols), min(rows, cols))
        a = jax.random.normal(key, tall, jnp.float32)
        q, r = _qr(a)
        q = q * jnp.sign(jnp.diag(r))[None, :]
        if rows < cols:
            q = q.T
        return (scale * q).reshape(shape).astype(dtype)

    return init
