"""Observation and action spaces.

A space describes *one agent's* observation or action. A role with ``n`` agents
therefore produces arrays of shape ``(n, *space.shape)``; the helpers
``sample(key, batch_shape)`` and ``contains`` accept such leading axes.

``contains`` checks shape and dtype statically (a mismatch is a Python
``False``, decided at trace time, never a traced value) and the value range
dynamically (a traced boolean).
"""

from __future__ import annotations

from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxagents.core.validate import check_positive_int


def _canonical_dtype(dtype) -> np.dtype:
    """The dtype JAX will actually use (int64 -> int32 unless x64 is enabled)."""
    return jnp.dtype(jax.dtypes.canonicalize_dtype(dtype))


class Space:
    """Base class. Subclasses set ``shape`` and ``dtype``."""

    shape: tuple[int, ...]
    dtype: np.dtype

    def sample(self, key: jax.Array, batch_shape: Sequence[int] = ()) -> jax.Array:
        """Uniformly random values of this space, ``[*batch_shape, *shape]`` in its dtype
        (one per agent when ``batch_shape`` is ``(n,)``); ignores action masks
        (``random_actions`` respects them)."""
        raise NotImplementedError

    def _in_range(self, x: jax.Array) -> jax.Array:
        raise NotImplementedError

    def check(self, x, batch_shape: Sequence[int] = ()) -> str | None:
        """Why ``x`` does not fit this space structurally (shape, dtype), or None."""
        want = tuple(batch_shape) + tuple(self.shape)
        shape = tuple(np.shape(x))
        if shape != want:
            return f"expected shape {want}, got {shape}"
        dtype = _canonical_dtype(getattr(x, "dtype", np.asarray(x).dtype))
        if dtype != self.dtype:
            return f"expected dtype {self.dtype.name}, got {dtype.name}"
        return None

    def contains(self, x, batch_shape: Sequence[int] = ()) -> jax.Array | bool:
        """True when ``x`` has this space's shape (after ``batch_shape``), dtype and range."""
        if self.check(x, batch_shape) is not None:
            return False
        return jnp.all(self._in_range(jnp.asarray(x)))


class Discrete(Space):
    """Integers ``0 .. n-1``; shape ``()``."""

    def __init__(self, n: int, dtype=jnp.int32):
        self.n = check_positive_int("Discrete: n", n)
        self.shape = ()
        self.dtype = _canonical_dtype(dtype)

    def sample(self, key, batch_shape=()):
        """Uniform integers in ``0 .. n-1``, ``[*batch_shape]``."""
        return jax.random.randint(key, tuple(batch_shape), 0, self.n, dtype=self.dtype)

    def _in_range(self, x):
        return (x >= 0) & (x < self.n)

    def __repr__(self):
        return f"Discrete({self.n})"

    def __eq__(self, other):
        return isinstance(other, Discrete) and (self.n, self.dtype) == (other.n, other.dtype)

    def __hash__(self):
        return hash(("Discrete", self.n, str(self.dtype)))


class MultiDiscrete(Space):
    """A vector of integers, entry ``i`` in ``0 .. nvec[i]-1``; shape ``(len(nvec),)``."""

    def __init__(self, nvec: Sequence[int], dtype=jnp.int32):
        nvec = np.asarray(nvec, dtype=np.int64)
        if nvec.ndim != 1 or nvec.size == 0 or np.any(nvec < 1):
            raise ValueError(
                f"MultiDiscrete: nvec must be a non-empty 1-D sequence of positive integers, got {nvec.tolist()}"
            )
        self.nvec = tuple(int(v) for v in nvec)
        self.shape = (len(self.nvec),)
        self.dtype = _canonical_dtype(dtype)

    def sample(self, key, batch_shape=()):
        """Entry ``i`` uniform in ``0 .. nvec[i]-1``, ``[*batch_shape, len(nvec)]``."""
        hi = jnp.asarray(self.nvec, dtype=self.dtype)
        return jax.random.randint(key, tuple(batch_shape) + self.shape, 0, hi, dtype=self.dtype)

    def _in_range(self, x):
        return (x >= 0) & (x < jnp.asarray(self.nvec, dtype=x.dtype))

    def __repr__(self):
        return f"MultiDiscrete({list(self.nvec)})"

    def __eq__(self, other):
        return isinstance(other, MultiDiscrete) and (self.nvec, self.dtype) == (other.nvec, other.dtype)

    def __hash__(self):
        return hash(("MultiDiscrete", self.nvec, str(self.dtype)))


class Box(Space):
    """A real (or integer) array in ``[low, high]`` elementwise.

    ``low``/``high`` are scalars or arrays broadcastable to ``shape``; infinite
    bounds are allowed (sampling then uses a standard normal on those entries).
    """

    def __init__(self, low, high, shape: Sequence[int], dtype=jnp.float32):
        self.shape = tuple(int(s) for s in shape)
        self.dtype = _canonical_dtype(dtype)
        try:
            self.low = np.broadcast_to(np.asarray(low, dtype=np.float64), self.shape)
            self.high = np.broadcast_to(np.asarray(high, dtype=np.float64), self.shape)
        except ValueError as e:
            raise ValueError(f"Box: low/high must broadcast to shape {self.shape}: {e}") from None
        if np.any(self.low > self.high):
            raise ValueError("Box: every entry of low must be <= high")

    def sample(self, key, batch_shape=()):
        """``[*batch_shape, *shape]``: uniform in ``[low, high)`` where both bounds are finite,
        elsewhere a standard normal clipped to the bounds; floored for integer dtypes."""
        shape = tuple(batch_shape) + self.shape
        finite = np.isfinite(self.low) & np.isfinite(self.high)
        k1, k2 = jax.random.split(key)
        lo = jnp.where(finite, self.low, 0.0).astype(jnp.float32)
        hi = jnp.where(finite, self.high, 1.0).astype(jnp.float32)
        u = jax.random.uniform(k1, shape, minval=lo, maxval=hi)
        if not finite.all():
            n = jax.random.normal(k2, shape)
            n = jnp.clip(n, jnp.asarray(self.low, jnp.float32), jnp.asarray(self.high, jnp.float32))
            u = jnp.where(finite, u, n)
        if jnp.issubdtype(self.dtype, jnp.integer):
            u = jnp.floor(u)
        return u.astype(self.dtype)

    def _in_range(self, x):
        return (x >= jnp.asarray(self.low, jnp.float32)) & (x <= jnp.asarray(self.high, jnp.float32))

    def __repr__(self):
        lo, hi = np.unique(self.low), np.unique(self.high)
        lo = lo[0] if lo.size == 1 else "array"
        hi = hi[0] if hi.size == 1 else "array"
        return f"Box({lo}, {hi}, {self.shape}, {self.dtype.name})"

    def __eq__(self, other):
        return (
            isinstance(other, Box)
            and self.shape == other.shape
            and self.dtype == other.dtype
            and np.array_equal(self.low, other.low)
            and np.array_equal(self.high, other.high)
        )

    def __hash__(self):
        return hash(("Box", self.shape, str(self.dtype)))


def num_actions(space: Space) -> int:
    """Number of discrete actions of a ``Discrete`` space (for masks and policy heads)."""
    if not isinstance(space, Discrete):
        raise TypeError(f"expected a Discrete action space, got {space!r}")
    return space.n
