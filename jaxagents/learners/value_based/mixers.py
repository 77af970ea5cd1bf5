"""Value-decomposition mixers: from each agent's Q of its chosen action to the
team's ``Q_tot``.

Both mixers read the agents' values as one vector over *all* agent slots of all
roles, concatenated in ``env.roles`` order (``N = sum of num_agents``):

* ``VDN``: ``Q_tot = sum_i Q_i`` (Sunehag et al. 2018). No parameters; the team
  greedy action is every agent's own greedy action.
* ``QMix``: ``Q_tot = w2 . elu(W1^T q + b1) + b2`` (Rashid et al. 2018), where
  ``W1 [N, E]``, ``b1 [E]``, ``w2 [E]`` and ``b2 []`` are produced from the global
  state ``s`` by hypernetworks. ``W1`` and ``w2`` pass through ``abs``, so every
  path from ``q_i`` to ``Q_tot`` has non-negative weights and ``elu`` is increasing:
  ``dQ_tot / dq_i >= 0`` for every state, which is what keeps the per-agent argmax
  consistent with the argmax of ``Q_tot`` (decentralised greedy execution). The
  biases are free (the state-dependent part of ``Q_tot`` that no agent controls).

Inactive agents (dead units, turn-based games) are the learner's business: it
passes 0 for their Q, so they add nothing to ``VDN`` and a state-dependent
constant to ``QMix``.

Both are ``flax.linen`` modules with the same call, so the learner treats them
alike: ``mixer.init(key, q, s)``, ``mixer.apply(params, q, s)`` with
``q f32[..., N]`` and ``s [..., *global_obs_shape]`` (any leading batch axes) ->
``f32[...]``. ``VDN`` ignores ``s`` and has an empty parameter tree.
"""

from __future__ import annotations

import math

import flax.linen as nn
import jax
import jax.numpy as jnp

MIXERS = ("none", "vdn", "qmix")


class VDN(nn.Module):
    """``Q_tot = sum_i q_i``: ``q f32[..., N]`` -> ``f32[...]`` (``state`` unused)."""

    @nn.compact
    def __call__(self, q: jax.Array, state: jax.Array | None = None) -> jax.Array:
        return jnp.sum(q, axis=-1)


class _Hyper(nn.Module):
    """A hypernetwork: ``s f32[B, S]`` -> ``f32[B, out]`` through one hidden layer
    (``hidden = 0``: a single linear layer); the output layer's initial weights are
    LeCun-normal times ``scale``."""

    out: int
    hidden: int
    scale: float = 1.0

    @nn.compact
    def __call__(self, s):
        if self.hidden:
            s = nn.relu(nn.Dense(self.hidden)(s))
        init = nn.initializers.variance_scaling(self.scale**2, "fan_in", "truncated_normal")
        return nn.Dense(self.out, kernel_init=init)(s)


class QMix(nn.Module):
    """QMIX's monotonic mixing network.

    Attributes:
        embed: width ``E`` of the mixing layer (JaxMARL's SMAX setting: 64).
        hyper_hidden: hidden width of the hypernetworks that produce ``W1`` and
            ``w2`` (JaxMARL: 256); the bias ``b2`` always has a hidden layer of
            width ``embed`` (it is the state's value, not a weight).
        init_scale: the hypernetworks' output layers start with weights this much
            smaller than usual, so that ``Q_tot`` starts near 0 whatever the scale
            of the global observation. With the usual scale, unnormalised states
            (MPE's positions and distances) give initial mixing weights of order 1
            to 10 and a positive ``Q_tot`` of order 100 that the TD targets then
            chase upwards (seen on simple_spread: ``Q_tot`` grew to +360 while every
            reward is negative, at lr 5e-4 and at 5e-5).

    Call: ``q f32[..., N]`` (each agent's Q of its action), ``state [..., *G]`` (the
    global observation, any trailing shape, flattened here) -> ``Q_tot f32[...]``.
    """

    embed: int = 32
    hyper_hidden: int = 64
    init_scale: float = 0.01

    @nn.compact
    def __call__(self, q: jax.Array, state: jax.Array) -> jax.Array:
        q = jnp.asarray(q, jnp.float32)
        batch, n = q.shape[:-1], q.shape[-1]
        # the global observation's own axes are whatever it trails the batch with
        s = jnp.asarray(state, jnp.float32).reshape(math.prod(batch), -1)
        qb = q.reshape(-1, n)
        w1 = jnp.abs(_Hyper(n * self.embed, self.hyper_hidden, self.init_scale, name="hyper_w1")(s)).reshape(-1, n, self.embed)
        b1 = _Hyper(self.embed, 0, self.init_scale, name="hyper_b1")(s)
        hidden = nn.elu(jnp.einsum("bn,bne->be", qb, w1) + b1)  # [B, E]
        w2 = jnp.abs(_Hyper(self.embed, self.hyper_hidden, self.init_scale, name="hyper_w2")(s))  # [B, E]
        b2 = _Hyper(1, self.embed, self.init_scale, name="hyper_b2")(s)[:, 0]  # [B]
        return (jnp.sum(hidden * w2, axis=-1) + b2).reshape(batch)


def make_mixer(kind: str, embed: int = 32, hyper_hidden: int = 64) -> nn.Module | None:
    """``"none"`` (independent learners: no mixer) -> None, ``"vdn"`` -> ``VDN()``,
    ``"qmix"`` -> ``QMix(embed, hyper_hidden)``."""
    if kind not in MIXERS:
        raise ValueError(f"mixer must be one of {list(MIXERS)}, got {kind!r}")
    return {"none": None, "vdn": VDN(), "qmix": QMix(embed, hyper_hidden)}[kind]
