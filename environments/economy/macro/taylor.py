"""The Taylor-rule central bank: a scripted baseline for the ``central_bank`` role.

Taylor (1993): ``i = r* + pi + a_pi (pi - pi*) + a_y (output gap)``, with
``r* = 2%``, ``pi* = 2%``, ``a_pi = a_y = 0.5``. The macro economy has no measure of
potential output, so the output gap is the gap of real GDP growth to its target. The
rate moves ``1 + a_pi`` for one of inflation (the Taylor principle: more than
one-for-one, so the real rate rises with inflation), and is clipped to the env's
``[policy_rate_min, policy_rate_max]``. The reserve ratio is held fixed.

``taylor_action(obs, params)`` reads inflation and growth from the observation (the
public features lead every role's observation) and returns the central bank's action
in ``[-1, 1]`` under the env's linear mapping; it is pure and jit/vmap-able.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from jaxagents_environments.economy.macro.obs import GLOBAL_INDEX


@struct.dataclass
class TaylorRule:
    """Coefficients (floats or ``f32[]``; a pytree, so populations of rules vmap)."""

    neutral_rate: float = 0.02
    inflation_target: float = 0.02
    inflation_coef: float = 0.5
    growth_target: float = 0.0
    growth_coef: float = 0.5
    reserve_ratio: float = 0.08


def taylor_rate(inflation, growth, rule: TaylorRule = TaylorRule()) -> jax.Array:
    """The unclipped Taylor rate ``r* + pi + a_pi (pi - pi*) + a_y (g - g*)``."""
    return (
        rule.neutral_rate + inflation + rule.inflation_coef * (inflation - rule.inflation_target)
        + rule.growth_coef * (growth - rule.growth_target)
    )


def taylor_action(obs: jax.Array, params, rule: TaylorRule = TaylorRule()) -> jax.Array:
    """The central bank's action ``f32[..., 2]`` for observations ``f32[..., d]``.

    ``params`` are the env's ``MacroParams`` (for the action mapping): the rate is
    clipped to ``[policy_rate_min, policy_rate_max]`` and mapped to
    ``2 (i - min) / (max - min) - 1``; the reserve ratio to ``2 rr / rr_max - 1``.
    """
    inflation = obs[..., GLOBAL_INDEX["inflation"]]
    growth = obs[..., GLOBAL_INDEX["growth"]]
    lo, hi = params.policy_rate_min, params.policy_rate_max
    rate = jnp.clip(taylor_rate(inflation, growth, rule), lo, hi)
    width = hi - lo
    a_rate = jnp.where(width > 0, 2.0 * (rate - lo) / jnp.where(width > 0, width, 1.0) - 1.0, 0.0)
    rr_max = params.reserve_ratio_max
    rr = jnp.clip(rule.reserve_ratio, 0.0, rr_max)
    a_rr = jnp.where(rr_max > 0, 2.0 * rr / jnp.where(rr_max > 0, rr_max, 1.0) - 1.0, 0.0)
    return jnp.stack([a_rate, jnp.broadcast_to(a_rr, a_rate.shape)], axis=-1).astype(jnp.float32)
