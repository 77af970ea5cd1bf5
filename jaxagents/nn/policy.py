"""Actor-critic networks and action distributions for every action space.

``ActorCritic`` has separate actor and critic streams (PPO's usual choice: the
value loss does not disturb the policy features), each a torso from
``jaxagents.nn.torsos``, optionally followed by a GRU. The critic reads its own
input so the same module is IPPO's decentralised critic (critic input = the
agent's observation) and MAPPO's centralised one (critic input = the global state
plus the agent's one-hot id).

Illegal actions are masked in the logits (``MASKED_LOGIT``, finite so that a fully
masked row -- an inactive agent in a finished game -- still gives finite
log-probabilities and entropy; those samples are excluded from the losses).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import distrax
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from jaxagents.core.spaces import Box, Discrete, MultiDiscrete, Space
from jaxagents.nn.init import orthogonal
from jaxagents.nn.torsos import CNN, GRU, MLP, flatten

MASKED_LOGIT = -1e9


def action_dim(space: Space) -> int:
    """Width of the actor's output layer for ``space``."""
    if isinstance(space, Discrete):
        return int(space.n)
    if isinstance(space, MultiDiscrete):
        return int(len(space.nvec) * max(space.nvec))
    if isinstance(space, Box):
        return int(np.prod(space.shape))
    raise TypeError(f"no policy head for action space {space!r}")


def distribution(space: Space, out: jax.Array, log_std: jax.Array | None = None, mask: jax.Array | None = None):
    """A distrax distribution over one agent's actions from the actor output.

    Discrete: categorical with illegal logits set to ``MASKED_LOGIT``.
    MultiDiscrete: independent categoricals, one per component, padded to the
    largest component (padding masked). Box: diagonal Gaussian with a learned,
    state-independent ``log_std``; samples are *not* squashed -- environments clip
    continuous actions to their space and document it.
    """
    if isinstance(space, Discrete):
        if mask is not None:
            out = jnp.where(mask, out, MASKED_LOGIT)
        return distrax.Categorical(logits=out)
    if isinstance(space, MultiDiscrete):
        nvec = np.asarray(space.nvec)
        width = int(nvec.max())
        logits = out.reshape(*out.shape[:-1], len(nvec), width)
        valid = np.arange(width)[None, :] < nvec[:, None]
        logits = jnp.where(valid, logits, MASKED_LOGIT)
        return distrax.Independent(distrax.Categorical(logits=logits), 1)
    if isinstance(space, Box):
        mean = out.reshape(*out.shape[:-1], *space.shape)
        std = jnp.broadcast_to(jnp.exp(log_std).reshape(space.shape), mean.shape)
        return distrax.Independent(distrax.Normal(mean, std), len(space.shape))
    raise TypeError(f"no distribution for action space {space!r}")


@dataclasses.dataclass(frozen=True)
class NetworkConfig:
    """Architecture of one actor-critic.

    Attributes:
        torso: ``"mlp"`` or ``"cnn"`` (grids ``[H, W, C]``).
        hidden: dense widths (the MLP, or the dense layers after the CNN).
        activation: ``tanh`` | ``relu`` | ``gelu`` | ``silu``.
        recurrent: add a GRU after each stream's torso.
        gru_size: GRU width.
        post_hidden: dense widths after the GRU (recurrent only), with the same
            activation: e.g. ``(128,)`` for JaxMARL's MAPPO/IPPO RNN networks (Dense,
            GRU, Dense, head). Empty by default.
    """

    torso: str = "mlp"
    hidden: Sequence[int] = (64, 64)
    activation: str = "tanh"
    recurrent: bool = False
    gru_size: int = 128
    cnn_channels: Sequence[int] = (32, 32, 32)
    post_hidden: Sequence[int] = ()

    def __post_init__(self):
        if self.torso not in ("mlp", "cnn"):
            raise ValueError(f"network.torso must be 'mlp' or 'cnn', got {self.torso!r}")
        if not self.hidden or any(int(h) < 1 for h in self.hidden):
            raise ValueError(f"network.hidden must be positive widths, got {self.hidden!r}")
        if int(self.gru_size) < 1:
            raise ValueError(f"network.gru_size must be >= 1, got {self.gru_size}")
        object.__setattr__(self, "hidden", tuple(int(h) for h in self.hidden))
        object.__setattr__(self, "cnn_channels", tuple(int(h) for h in self.cnn_channels))
        object.__setattr__(self, "post_hidden", tuple(int(h) for h in self.post_hidden))
        if any(h < 1 for h in self.post_hidden):
            raise ValueError(f"network.post_hidden must be positive widths, got {self.post_hidden!r}")
        if self.post_hidden and not self.recurrent:
            raise ValueError("network.post_hidden applies after the GRU (recurrent: true); "
                             "without one, add the widths to network.hidden")


def _dense_2d(layer, x):
    """``layer`` over the last axis of ``x`` as one 2-D product (see ``torsos.MLP``)."""
    return layer(x.reshape(-1, x.shape[-1])).reshape(*x.shape[:-1], -1)


class _Stream(nn.Module):
    cfg: NetworkConfig
    obs_ndim: int

    @property
    def is_mlp(self) -> bool:
        return not (self.cfg.torso == "cnn" and self.obs_ndim == 3)

    @nn.compact
    def __call__(self, h, x, reset, first=None):
        """``x[T, B..., *obs]`` -> ``(h', features[T, B..., F])``; ``first``: see
        ``MLP`` (the MLP torso's first layer computed by the caller)."""
        if not self.is_mlp:
            y = CNN(self.cfg.cnn_channels, hidden=self.cfg.hidden, act=self.cfg.activation)(x)
        else:
            y = MLP(self.cfg.hidden, self.cfg.activation, obs_ndim=self.obs_ndim)(x, first)
        if self.cfg.recurrent:
            batch = y.shape[1:-1]
            flat = y.reshape(y.shape[0], -1, y.shape[-1])
            h, flat = GRU(self.cfg.gru_size)(h.reshape(-1, h.shape[-1]), flat, reset.reshape(reset.shape[0], -1))
            y = flat.reshape(y.shape[0], *batch, -1)
            h = h.reshape(*batch, -1)
            if self.cfg.post_hidden:
                y = MLP(self.cfg.post_hidden, self.cfg.activation, obs_ndim=1)(y)
        return h, y

    def first_layer(self):
        """The MLP torso's first ``(kernel[F, hidden[0]], bias[hidden[0]])`` (applied
        modules only: the parameters must exist)."""
        p = self.variables["params"]["MLP_0"]["Dense_0"]  # the torso is the stream's first MLP
        return p["kernel"], p["bias"]


class ActorCritic(nn.Module):
    """Actor and critic streams over a time axis.

    ``__call__(hidden, actor_in[T, B..., *obs], critic_in[T, B..., *cobs],
    reset[T, B...]) -> (hidden', actor_out[T, B..., action_dim], value[T, B...])``;
    ``critic_in=None`` means the critic reads ``actor_in``.
    ``hidden`` is ``(h_actor, h_critic)`` (``[B..., gru_size]`` each) for recurrent
    networks and ignored otherwise; ``reset[t]`` clears it before step ``t``. A
    feed-forward update passes a flat sample batch as ``T = 1``.
    """

    cfg: NetworkConfig
    action_space: Any
    obs_ndim: int = 1
    critic_obs_ndim: int = 1

    def setup(self):
        self.actor = _Stream(self.cfg, self.obs_ndim)
        self.critic = _Stream(self.cfg, self.critic_obs_ndim)
        self.pi = nn.Dense(action_dim(self.action_space), kernel_init=orthogonal(0.01), bias_init=nn.initializers.zeros)
        self.v = nn.Dense(1, kernel_init=orthogonal(1.0), bias_init=nn.initializers.zeros)
        if isinstance(self.action_space, Box):
            self.log_std = self.param("log_std", nn.initializers.zeros, (action_dim(self.action_space),))
        else:
            self.log_std = None

    def __call__(self, hidden, actor_in, critic_in, reset):
        ha, hc = hidden
        if critic_in is None and self.actor.is_mlp and self.obs_ndim == self.critic_obs_ndim \
                and not self.is_initializing():
            # The critic reads the actor's input (IPPO): both streams' first layers as
            # one product x [Wa | Wc]. The first layer is most of an MLP's arithmetic
            # (an observation is hundreds of features, a hidden layer 64), and one
            # product twice as wide, read from one copy of x, is ~8% cheaper per
            # gradient step on CPU than two. Same function; float rounding may differ
            # from the two separate products in the last bits.
            (ka, ba), (kc, bc) = self.actor.first_layer(), self.critic.first_layer()
            y = flatten(actor_in, self.obs_ndim) @ jnp.concatenate([ka, kc], 1) + jnp.concatenate([ba, bc])
            ya, yc = y[:, : ka.shape[1]], y[:, ka.shape[1]:]
            ha, a = self.actor(ha, actor_in, reset, first=ya)
            hc, c = self.critic(hc, actor_in, reset, first=yc)
        else:
            if critic_in is None:  # the critic reads the actor's input (IPPO)
                critic_in = actor_in
            ha, a = self.actor(ha, actor_in, reset)
            hc, c = self.critic(hc, critic_in, reset)
        return (ha, hc), _dense_2d(self.pi, a), _dense_2d(self.v, c)[..., 0]

    def actor_only(self, hidden, actor_in, reset):
        """The actor stream alone: ``(hidden, actor_in[T, B..., *obs], reset[T, B...]) ->
        (h_actor', actor_out[T, B..., action_dim])``; ``hidden`` is the pair of
        ``__call__``, of which only the actor's memory is read and returned. For
        ``apply(..., method=...)`` where values are not needed."""
        ha, a = self.actor(hidden[0], actor_in, reset)
        return ha, _dense_2d(self.pi, a)

    def initial_state(self, batch_shape):
        """Zero memory ``(h_actor, h_critic)``, ``f32[*batch_shape, gru_size]`` each (width 1,
        unused, for feed-forward networks)."""
        h = GRU.initial_state(batch_shape, self.cfg.gru_size if self.cfg.recurrent else 1)
        return (h, h)
