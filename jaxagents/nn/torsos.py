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
    def __call__(self, x):
        batch = x.shape[: x.ndim - self.obs_ndim]
        # Dense layers on a 2-D [samples, features] array: the leading unit axes of
        # the learners' [T, B, n, ...] batches otherwise lead XLA's CPU backend to
        # transpose the backward pass's operands before the weight-gradient dots.
        x = jnp.asarray(x, jnp.float32).reshape(math.prod(batch), -1)
        for h in self.hidden:
            x = activation(self.act)(nn.Dense(h, kernel_init=_ortho(), bias_init=nn.initializers.zeros)(x))
        return x.reshape(*batch, x.shape[-1])


class CNN(nn.Module):
    """Convolutions over ``[..., H, W, C]`` grids (Overcooked's lossless encoding),
    then dense layers. 'SAME' padding keeps small grids from vanishing."""

    channels: Sequence[int] = (32, 32, 32)
    kernels: Sequence[int] = (3, 3, 3)
    hidden: Sequence[int] = (64,)
    act: str = "relu"

    @nn.compact
    def __call__(self, x):
        x = jnp.asarray(x, jnp.float32)
        batch = x.shape[:-3]
        x = x.reshape(-1, *x.shape[-3:])
        for c, k in zip(self.channels, self.kernels):
            x = activation(self.act)(nn.Conv(c, (k, k), padding="SAME", kernel_init=_ortho())(x))
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
        return jnp.zeros((*batch_shape, size), jnp.float32)
