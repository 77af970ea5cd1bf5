"""``[N, D]`` per-agent rows (observations) without ``jnp.concatenate``.

With 10^6 agents and a small D, building ``[N, D]`` by a ``concatenate`` of pieces
(one-hot codes, per-agent values, broadcast population summaries) is among the most
expensive ops of a step on XLA:CPU: the fused loop picks an operand per element and
does not vectorise; so does a shared row assembled with ``.at[].set`` (XLA fuses its
dynamic-update-slices into the same loop). ``agent_rows`` writes the same values as one
arithmetic expression over ``[N, D]``: every piece is multiplied by a constant 0/1
pattern over the columns and added (or selected), which XLA vectorises. At 10^6 agents
that made the mean-field and taxation observations about 2x cheaper to build.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import jax
import jax.numpy as jnp
import numpy as np


def agent_rows(num_columns: int, shared: Mapping[int, jax.Array] | None = None,
               onehots: Sequence[tuple[int, jax.Array, int]] = (),
               columns: Sequence[tuple[int, jax.Array]] = ()) -> jax.Array:
    """``f32[N, num_columns]`` observation rows, zero where nothing is written.

    ``shared``: ``{j: value}``, the same for every agent: a scalar in column ``j``, or a
    ``[k]`` vector in columns ``j .. j+k-1``. ``onehots``: ``(j, index i32[N], K)``:
    columns ``j .. j+K-1`` hold the one-hot code of ``index`` (all zeros outside
    ``[0, K)``). ``columns``: ``(j, values f32[N])``: column ``j`` holds ``values``.
    Entries must not overlap; N comes from the per-agent entries (at least one).
    Shared values must be finite (they are placed by multiplying with 0/1 patterns).
    """
    d = int(num_columns)
    taken = np.zeros(d, bool)

    def claim(j, k, what):
        if not (0 <= j and j + k <= d) or taken[j:j + k].any():
            raise ValueError(f"agent_rows: {what} columns {j}..{j + k - 1} outside 0..{d - 1} or overlapping")
        taken[j:j + k] = True

    eye = np.eye(d, dtype=np.float32)
    row = jnp.zeros((d,), jnp.float32)
    for j, v in (shared or {}).items():
        v = jnp.asarray(v, jnp.float32).reshape(-1)
        claim(j, v.shape[0], "shared")
        for i in range(v.shape[0]):  # scalar times a constant unit row: vectorises when fused
            row = row + v[i] * jnp.asarray(eye[j + i])
    n = None
    out = row[None, :]
    for j, idx, k in onehots:
        claim(j, k, "one-hot")
        code = np.zeros(d, np.int32)
        code[j:j + k] = np.arange(k)
        inside = np.zeros(d, bool)
        inside[j:j + k] = True
        hit = (jnp.asarray(idx, jnp.int32)[:, None] == jnp.asarray(code)) & jnp.asarray(inside)
        out = out + hit.astype(jnp.float32)
        n = jnp.shape(idx)[0]
    for j, v in columns:
        claim(j, 1, "per-agent")
        out = jnp.where(jnp.asarray(np.arange(d) == j), jnp.asarray(v, jnp.float32)[:, None], out)
        n = jnp.shape(v)[0]
    if n is None:
        raise ValueError("agent_rows needs at least one per-agent entry (onehots or columns)")
    return out
