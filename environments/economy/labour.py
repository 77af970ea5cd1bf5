"""Workers' utilities in the taxation game (shared by the environment and the baselines).

Money is measured in units of ``params.income_unit``; ``params.utility`` picks

* ``"quasi_linear"``: ``u = zt/unit - (c/unit) l^delta`` (``c = labour_cost``,
  ``delta = labour_exponent``): the spec's ``zt - c l^delta`` in income units, with a
  constant labour elasticity ``1/(delta - 1)``;
* ``"isoelastic"``: ``u = ((zt/unit)^(1-eta) - 1)/(1-eta) - kappa l`` (``log`` at
  ``eta = 1``; ``zt/unit`` floored at ``1e-6`` so that ``eta >= 1`` stays finite).

``params`` is any struct with the fields ``utility``, ``income_unit``, ``labour_cost``,
``labour_exponent``, ``eta``, ``kappa`` (``TaxationParams``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

UTILITIES = ("quasi_linear", "isoelastic")


def isoelastic(x, eta):
    """``(x^(1-eta) - 1)/(1-eta)``, ``log x`` at ``eta = 1``; ``x`` floored at 1e-6."""
    logx = jnp.log(jnp.maximum(x, 1e-6))
    one_minus = 1.0 - eta
    near_log = jnp.abs(one_minus) < 1e-6
    return jnp.where(near_log, logx, jnp.expm1(one_minus * logx) / jnp.where(near_log, 1.0, one_minus))


def worker_utility(post_tax, hours, params, labour_power=None):
    """Utility in income units of post-tax incomes ``post_tax`` ($) and ``hours``.

    ``labour_power`` (optional): a function returning ``hours ** labour_exponent`` when
    the caller can compute it cheaper (a table lookup for an hours grid); called inside
    the quasi-linear branch only. A real branch on ``params.utility`` unless params are
    batched.
    """
    unit = params.income_unit

    def quasi_linear(_):
        hp = hours ** params.labour_exponent if labour_power is None else labour_power()
        return post_tax / unit - (params.labour_cost / unit) * hp

    def iso(_):
        return isoelastic(post_tax / unit, params.eta) - params.kappa * hours

    return jax.lax.switch(params.utility, [quasi_linear, iso], None)
