"""Feature extractors (flax.linen): MLP for vectors, CNN for grids, GRU for memory.

Every torso maps ``[..., *obs_shape] -> [..., features]``; batch axes are free, so
the same module serves one agent, ``[envs, agents]`` during a rollout and
``[time, batch]`` during an update.
"""

from __future__ import annotations

import math
from typing import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from jaxagents.nn.init import orthogonal

ACTIVATIONS = {"tanh": nn.tanh, "relu": nn.relu, "gelu": nn.gelu, "silu": nn.silu}


def activation(name: str):
    """The activation function called ``name`` (a key of ``ACTIVATIONS``); ``ValueError`` otherwise."""
    if name not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}, got {name!r}")
    return ACTIVATIONS[name]


def _ortho(scale: float = np.sqrt(2)):
    return orthogonal(scale)


class MLP(nn.Module):
    """Dense layers with orthogonal init (the PPO convention); ``obs_ndim`` trailing
    axes of the input are flattened first."""

    hidden: Sequence[int] = (64, 64)
    act: str = "tanh"
    obs_ndim: int = 1

    @nn.compact
    def __call__(self, x, first: jax.Array | None = None):
        """``x[B..., *obs] -> [B..., hidden[-1]]``. ``first[prod(B), hidden[0]]``, when
        given, is the first layer's output before its activation, computed by the
        caller from this module's ``Dense_0`` parameters (``ActorCritic`` fuses the
        first layers of two streams that read the same input); ``x`` then only gives
        the batch shape."""
        batch = x.shape[: x.ndim - self.obs_ndim]
        if first is None:
            # Dense layers on a 2-D [samples, features] array: the leading unit axes of
            # the learners' [T, B, n, ...] batches otherwise lead XLA's CPU backend to
            # transpose the backward pass's operands before the weight-gradient dots.
            x = flatten(x, self.obs_ndim)
        for i, h in enumerate(self.hidden):
            if i == 0 and first is not None:
                x = first
            else:
                # explicit names: the same as flax's automatic ones, whichever layer runs
                x = nn.Dense(h, kernel_init=_ortho(), bias_init=nn.initializers.zeros, name=f"Dense_{i}")(x)
            x = activation(self.act)(x)
        return x.reshape(*batch, x.shape[-1])


def flatten(x: jax.Array, obs_ndim: int) -> jax.Array:
    """``x[B..., *obs] -> float32[prod(B), prod(obs)]``: what ``MLP``'s first layer reads."""
    batch = x.shape[: x.ndim - obs_ndim]
    return jnp.asarray(x, jnp.float32).reshape(math.prod(batch), -1)


class ConvSame(nn.Module):
    """A ``k x k`` 'SAME' convolution (``k`` odd), stride 1, ``[N, H, W, C] -> [N, H,
    W, features]``: the layer of ``flax.linen.Conv(features, (k, k), padding="SAME")``
    (kernel ``[k, k, C, features]``, orthogonal init), computed as one matmul over the
    ``k * k`` shifted slices of the zero-padded input (im2col).

    Why not ``nn.Conv``: XLA's CPU backend runs a convolution's *gradient* inside a
    loop -- and a training program is loops (minibatches, epochs, updates) -- about
    20x slower than outside one (a 3-layer CNN on Overcooked's ``[4, 5, 26]`` grid,
    128 samples: 2.2 s per 16 Adam steps in nested scans, 0.13 s as slices + matmul;
    docs/results_qlearning.md). Slices, pads and dots have no such cliff. The
    parameters have ``nn.Conv``'s names and shapes, so a module named ``Conv_i`` is
    initialised with the very values ``nn.Conv`` would draw."""

    features: int
    kernel: int = 3

    @nn.compact
    def __call__(self, x):
        n, h, w, c = x.shape
        k, r = self.kernel, self.kernel // 2
        if k % 2 != 1:
            raise ValueError(f"kernel must be odd for a 'SAME' convolution, got {k}")
        kernel = self.param("kernel", _ortho(), (k, k, c, self.features))
        bias = self.param("bias", nn.initializers.zeros, (self.features,))
        xp = jnp.pad(x, ((0, 0), (r, r), (r, r), (0, 0)))
        # patches[..., (i, j, c)] = x[y + i - r, x + j - r, c]: the kernel's own (row-major) order
        patches = jnp.concatenate([xp[:, i:i + h, j:j + w, :] for i in range(k) for j in range(k)], axis=-1)
        y = patches.reshape(-1, k * k * c) @ kernel.reshape(k * k * c, self.features) + bias
        return y.reshape(n, h, w, self.features)


class CNN(nn.Module):
    """Convolutions over ``[..., H, W, C]`` grids (Overcooked's lossless encoding),
    then dense layers. 'SAME' padding keeps small grids from vanishing; the layers are
    ``ConvSame`` (named ``Conv_i`` as ``nn.Conv`` layers were, so checkpoints and
    initial values are unchanged; outputs equal ``nn.Conv``'s to float rounding)."""

    channels: Sequence[int] = (32, 32, 32)
    kernels: Sequence[int] = (3, 3, 3)
    hidden: Sequence[int] = (64,)
    act: str = "relu"

    @nn.compact
    def __call__(self, x):
        x = jnp.asarray(x, jnp.float32)
        batch = x.shape[:-3]
        x = x.reshape(-1, *x.shape[-3:])
        for i, (c, k) in enumerate(zip(self.channels, self.kernels)):
            x = activation(self.act)(ConvSame(c, k, name=f"Conv_{i}")(x))
        x = x.reshape(*batch, -1)
        return MLP(self.hidden, self.act)(x)


class GRU(nn.Module):
    """A GRU over a time axis with resets: ``(h[B, H], x[T, B, F], reset[T, B]) ->
    (h', y[T, B, H])``. ``reset[t]`` zeroes the memory *before* step ``t`` (the
    observation at ``t`` starts a new episode)."""

    size: int = 128

    @nn.compact
    def __call__(self, h, x, reset):
        cell = nn.GRUCell(self.size, recurrent_kernel_init=orthogonal(1.0), parent=None)
        params = self.param("cell", lambda k: cell.init(k, h, x[0])["params"])

        def step(carry, inp):
            xt, rt = inp
            carry = jnp.where(rt[..., None], jnp.zeros_like(carry), carry)
            carry, y = cell.apply({"params": params}, carry, xt)
            return carry, y

        return jax.lax.scan(step, h, (x, reset))

    @staticmethod
    def initial_state(batch_shape, size: int) -> jax.Array:
        """Zero memory ``f32[*batch_shape, size]``."""
        return jnp.zeros((*batch_shape, size), jnp.float32)
