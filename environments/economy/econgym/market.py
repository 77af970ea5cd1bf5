"""Firms and the bank of EconGym's society, as pure functions over ``[M]`` firms.

Firms produce ``Y = Z K^alpha L^(1-alpha)``; the marginal products at price ``p`` are
the market-clearing wage and rental rate. Under perfect competition the wage is the
marginal product (always here; EconGym sets it only when the bank is non-profit and
otherwise keeps the wage of the reset forever); a monopoly, an oligopoly or
monopolistic competitors set price and wage themselves. Investment is what is left of
output after households and government: ``I_j = p_j (Y_j - C_j - G_j)``, and the bank
lends it, within its deposits net of reserves.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

TINY = 1e-8


def tfp_step(key, tfp, sigma_z):
    """``log Z' = log Z + sigma_z U[0, 1)`` (EconGym's: a uniform shock, so TFP only
    drifts upward, by ``sigma_z / 2`` a year on average)."""
    return tfp * jnp.exp(sigma_z * jax.random.uniform(key, tfp.shape))


def production(tfp, capital, labour, price, alpha):
    """Output and marginal products (EconGym's, with its ``1e-8`` on labour).

    Returns ``(Y, wage, rental)``, ``f32[M]`` each: ``Y = Z K^alpha L^(1-alpha)``,
    ``wage = p Z (1-alpha) (K/(L + 1e-8))^alpha``, ``rental = p Z alpha (K/(L +
    1e-8))^(alpha-1)``.
    """
    k, l = jnp.maximum(capital, 0.0), jnp.maximum(labour, 0.0)
    y = tfp * k**alpha * l ** (1.0 - alpha)
    ratio = capital / (labour + TINY)
    wage = price * tfp * (1.0 - alpha) * ratio**alpha
    rental = price * tfp * alpha * ratio ** (alpha - 1.0)
    return y, wage, rental


def price_index(price, wage, epsilon):
    """EconGym's CES price level over goods prices and wages:
    ``(sum p^(1-eps) + sum W^(1-eps))^(1/(1-eps))`` (``eps != 1``)."""
    s = 1.0 - epsilon
    return (jnp.sum(price**s) + jnp.sum(wage**s)) ** (1.0 / s)


def scaled_reward(x):
    """EconGym's squashing of a profit into ``(0, 1)``:
    ``sigmoid(0.15 sign(x) log(1 + |x| + 1e-8))``."""
    return jax.nn.sigmoid(0.15 * jnp.sign(x) * jnp.log1p(jnp.abs(x) + TINY))


def firm_profit(price, sold, wage, labour, lending_rate, capital):
    """``p min(Y, C + G) - W L - r_l K`` per firm (EconGym's ``Market.get_reward``)."""
    return price * sold - wage * labour - lending_rate * capital


def bank_step(first, account, deposits_before, deposits_after, capital, capital_next_wanted,
              debt, debt_next, rates, reserve_ratio, depreciation):
    """One year of the bank (EconGym's ``Bank.step``).

    The bank settles last year's book (pays ``1 + r_d`` on the deposits it owed, is
    repaid ``1 + r_l - delta`` per unit of capital and ``1 + r_l`` on government
    debt), takes this year's deposits and lends the new capital and debt; when the
    wanted loans exceed its deposits net of reserves, ``(1 - reserve_ratio)`` of them,
    capital is scaled down to fit. In the first year its account starts from the
    households' deposits less the loans already made (``first``).

    Returns ``(capital_next f32[M], account, profit)``.
    """
    r_l, r_d = rates[0], rates[1]
    account = jnp.where(first, account - debt - jnp.sum(capital), account)
    settlement = (-(1.0 + r_d) * deposits_before + jnp.sum((r_l + 1.0 - depreciation) * capital)
                  + (1.0 + r_l) * debt)
    total = account + settlement + deposits_after
    ceiling = total * (1.0 - reserve_ratio)
    wanted = jnp.sum(capital_next_wanted)
    scaled = (ceiling - debt_next) * capital_next_wanted / (wanted + TINY)
    capital_next = jnp.where(wanted + debt_next > ceiling, scaled, capital_next_wanted)
    loans = jnp.sum(capital_next) + debt_next
    profit = r_l * jnp.sum(capital_next) + r_l * debt_next - r_d * deposits_after
    return capital_next, account + settlement + deposits_after - loans, profit
