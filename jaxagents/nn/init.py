"""Weight initialisers that are safe under ``vmap`` and fast on small CPUs.

``orthogonal`` is PPO's usual initialiser: the ``Q`` factor of the QR factorisation
of a Gaussian matrix, with the signs fixed so that ``R``'s diagonal is positive
(which makes ``Q`` unique, hence the same whatever algorithm computes it).

JAX's own version calls LAPACK's QR, and on CPU that has two problems:

* under ``vmap`` (training many seeds in one program) it becomes a *batched* LAPACK
  QR, which jaxlib's CPU kernel splits over its thread pool -- and on a small CPU it
  can deadlock inside a compiled training program (observed with jax 0.10 on 2
  cores: every thread waiting in ``ParallelBatchMap``);
* LAPACK runs in OpenBLAS, whose threads spin-wait: with XLA's own threads on the
  same cores, one QR of a ``[520, 64]`` kernel (Overcooked's first layer) took 1.5 s
  on a 2-core machine (2 ms with ``OPENBLAS_NUM_THREADS=1``); matrices with fewer
  than ~256 rows stay on one thread and are fast.

So ``Q`` is computed in XLA itself, by classical Gram-Schmidt with one
re-orthogonalisation pass (CGS2, orthogonal to working precision), when the
smaller side is at most ``_GS_MAX`` (every usual RL layer: its cost is ``4 m k^2``
flops); larger matrices use LAPACK, with a batching rule that runs a batch
sequentially with ``lax.map`` (initialisation runs once per training).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

_GS_MAX = 256  # largest min(rows, cols) orthogonalised by Gram-Schmidt


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


def _gram_schmidt(a: jax.Array) -> jax.Array:
    """``Q`` of ``a[m, k]`` (``m >= k``, full column rank) with ``R``'s diagonal
    positive, column by column: remove the components along the previous columns
    twice (CGS2), then normalise."""
    k = a.shape[1]
    idx = jnp.arange(k)

    def column(j, q):
        v = jax.lax.dynamic_index_in_dim(q, j, axis=1, keepdims=False)
        before = (idx < j).astype(q.dtype)  # columns < j are already orthonormal
        for _ in range(2):
            v = v - q @ ((q.T @ v) * before)
        return jax.lax.dynamic_update_index_in_dim(q, v / jnp.linalg.norm(v), j, axis=1)

    return jax.lax.fori_loop(0, k, column, a)


def orthogonal(scale: float = 1.0):
    """An orthogonal initialiser (rows or columns orthonormal, times ``scale``)."""

    def init(key, shape, dtype=jnp.float32):
        rows, cols = math.prod(shape[:-1]), shape[-1]
        tall = (max(rows, cols), min(rows, cols))
        a = jax.random.normal(key, tall, jnp.float32)
        if tall[1] <= _GS_MAX:
            q = _gram_schmidt(a)
        else:
            q, r = _qr(a)
            q = q * jnp.sign(jnp.diag(r))[None, :]
        if rows < cols:
            q = q.T
        return (scale * q).reshape(shape).astype(dtype)

    return init
