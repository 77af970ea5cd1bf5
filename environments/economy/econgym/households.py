"""Households of EconGym's society as pure, vectorised functions (``env.py`` chains them).

Every ``[C]`` array is over household slots; slots that are not ``alive`` (free slots
of an overlapping-generations economy) are carried through unchanged and count in no
sum. Nothing loops over households.

Where these blocks differ from EconGym's code (commit d81cd5d), on purpose:

* the consumption tax is paid: a household spends ``(1 + tau_c)`` times the value of
  the goods it gets (EconGym collects the tax as revenue without taking it from anyone);
* a universal basic income is paid to every household type (EconGym adds it to the
  income of overlapping-generations households only, while the government pays it to
  all).

As EconGym, retirees' offered hours count in production and are not paid (``step.py``:
EconGym zeroes them after the firms have used them).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxagents.core.rng import uniforms

TINY = 1e-8  # EconGym's guard in CES sums and market shares


def masked_mean(x, mask, default=0.0):
    """Mean of ``x`` over ``mask`` (``default`` when the mask is empty)."""
    n = jnp.sum(mask)
    return jnp.where(n > 0, jnp.sum(jnp.where(mask, x, 0.0)) / jnp.maximum(n, 1), default)


def _pick_positive(u, values, positive):
    """Draws, uniformly with replacement, from ``values[positive]``, one per entry of
    the uniforms ``u`` ``f32[C]``."""
    count = jnp.cumsum(positive.astype(jnp.int32))
    rank = jnp.minimum((u * count[-1]).astype(jnp.int32), jnp.maximum(count[-1] - 1, 0))
    idx = jnp.searchsorted(count, rank + 1)  # first slot whose running count reaches rank + 1
    return values[jnp.clip(idx, 0, values.shape[0] - 1)]


def standard_normal(u):
    """``N(0, 1)`` draws from uniforms in ``[0, 1)`` (inverse CDF, nudged off 0)."""
    return jnp.sqrt(2.0) * jax.scipy.special.erfinv(2.0 * (u + 2.0**-25) - 1.0)


def productivity_step(key, e_normal, e_star, alive, rho, sigma, e_p, e_q, super_e, rng="hash"):
    """One year of EconGym's productivity process (``generate_e_ability``).

    A normal household becomes a superstar with probability ``e_p`` and then earns
    ``super_e`` times last year's mean positive normal productivity; the others follow
    ``log e' = rho log e + sigma eps`` (a non-positive ``e`` is first replaced by a draw
    of the positive ones). A superstar stays one with probability ``e_q`` (its value
    re-indexed to the same mean); one that leaves draws its normal productivity
    uniformly between the smallest and the largest normal component after this year's
    updates. Three uniforms per household from ``jaxagents.core.rng.uniforms`` (``rng``
    ``"hash"`` or ``"threefry"``): the one that decides a transition, rescaled past its
    threshold, is again uniform and serves the draw that follows it. Returns ``(e_normal, e_star)``, ``f32[C]`` each, one
    of them 0 per slot.
    """
    c = e_normal.shape[0]
    u = uniforms(key, (3, c), rng)
    positive = alive & (e_normal > 0)
    mean_pos = masked_mean(e_normal, positive, 1.0)
    star = e_star > 0
    to_star = (u[0] < e_p) & ~star
    stay_normal = ~star & ~to_star
    need = stay_normal & alive & (e_normal <= 0)
    past = jax.lax.cond(
        jnp.any(need),
        lambda: jnp.where(need, _pick_positive((u[0] - e_p) / (1.0 - e_p), e_normal, positive), e_normal),
        lambda: e_normal,
    )
    grown = jnp.exp(rho * jnp.log(jnp.maximum(past, 1e-8)) + sigma * standard_normal(u[1]))
    normal = jnp.where(to_star, 0.0, jnp.where(stay_normal, grown, e_normal))
    leave = (u[2] >= e_q) & star
    low = jnp.min(jnp.where(alive, normal, jnp.inf))
    high = jnp.max(jnp.where(alive, normal, -jnp.inf))
    redraw = jnp.clip((u[2] - e_q) / jnp.maximum(1.0 - e_q, 1e-12), 0.0, 1.0)
    normal = jnp.where(leave, low + (high - low) * redraw, jnp.where(star, 0.0, normal))
    stars = jnp.where(to_star | (star & ~leave), super_e * mean_pos, 0.0)
    return jnp.where(alive, normal, e_normal), jnp.where(alive, stars, e_star)


def hsv_tax(x, tau, xi):
    """EconGym's HSV tax ``T(x) = x - (1 - tau)/(1 - xi) x^(1 - xi)`` on ``max(x, 1e-8)``
    (``x - (1 - tau) log x`` at ``xi = 1``), in dollars: ``T < 0`` is a transfer."""
    x = jnp.maximum(x, 1e-8)
    at_one = jnp.abs(xi - 1.0) < 1e-6
    safe = jnp.where(at_one, 0.5, 1.0 - xi)
    kept = jnp.where(at_one, (1.0 - tau) * jnp.log(x), (1.0 - tau) / safe * x**safe)
    return x - kept


US_BRACKETS = (0.0, 10275.0, 41775.0, 89075.0, 170050.0, 215950.0, 539900.0)
US_RATES = (0.10, 0.12, 0.22, 0.24, 0.32, 0.35, 0.37)
US_ALLOWANCE, US_CREDIT = 12950.0, 559.98


def us_federal_tax(x):
    """2022 US federal income tax (EconGym's ``us_federal``): brackets on income above
    a 12,950 personal allowance, less a 559.98 credit, never negative."""
    taxable = jnp.maximum(x - US_ALLOWANCE, 0.0)
    lo = jnp.asarray(US_BRACKETS, jnp.float32)
    hi = jnp.asarray(US_BRACKETS[1:] + (jnp.inf,), jnp.float32)
    in_bracket = jnp.clip(taxable[..., None], lo, hi) - lo
    return jnp.maximum(in_bracket @ jnp.asarray(US_RATES, jnp.float32) - US_CREDIT, 0.0)


def interest(savings, deposit_rate, lending_rate):
    """Interest on last year's deposits (``savings >= 0``) or loans (``< 0``)."""
    return jnp.where(savings >= 0, deposit_rate, lending_rate) * savings


def pension_flows(income, old, alive, working_years, account, contribution_rate, retire_factor, pension_rate):
    """EconGym's pay-as-you-go pension with personal accounts (``calculate_pension``).

    Workers pay ``contribution_rate`` of their income (``pension < 0``) into their own
    account; a retiree receives a basic pension ``avg_wage x working_years x 1% x
    pension_rate``, with ``avg_wage`` the mean of retirees' and everyone's income, plus
    its account over the annuity factor of the retirement age (``retire_factor``). The
    account is not drawn down (EconGym's rule). Returns ``(pension, account)``.
    """
    young = alive & ~old
    retired = alive & old
    avg_wage = 0.5 * (masked_mean(income, retired) + masked_mean(income, alive))
    benefit = avg_wage * working_years * 0.01 * pension_rate + account / retire_factor
    pension = jnp.where(young, -income * contribution_rate, jnp.where(retired, benefit, 0.0))
    return pension, jnp.where(young, account - pension, account)


ANNUITY_AGES = tuple(range(40, 71))
ANNUITY_FACTORS = (233, 230, 226, 223, 220, 216, 212, 208, 204, 199, 195, 190, 185, 180, 175, 170, 164,
                   158, 152, 145, 139, 132, 125, 117, 109, 101, 93, 84, 75, 65, 56)


def annuity_factor(retire_age):
    """EconGym's annuity factor of a retirement age (40 .. 70; 56 outside)."""
    table = jnp.asarray(ANNUITY_FACTORS, jnp.float32)
    idx = jnp.round(retire_age).astype(jnp.int32) - ANNUITY_AGES[0]
    inside = (idx >= 0) & (idx < len(ANNUITY_FACTORS))
    return jnp.where(inside, table[jnp.clip(idx, 0, len(ANNUITY_FACTORS) - 1)], 56.0)


def buy_goods(budget, split, price, supply, alive):
    """Households buy goods: ``c_ij = budget_i split_ij / p_j``; a firm sells
    ``min(demand_j, supply_j)`` and every buyer gets the same share of its order.

    ``budget`` ``f32[C]`` (dollars), ``split`` ``f32[C, M]`` (rows sum to 1), ``price``
    and ``supply`` ``f32[M]``. Returns ``(goods f32[C, M], sold f32[M])``.
    """
    want = jnp.where(alive, budget, 0.0)[:, None] * split / price
    demand = jnp.sum(want, axis=0)
    sold = jnp.minimum(demand, supply)
    return want * (sold / (demand + TINY)), sold


def ces(goods, epsilon):
    """CES aggregate of ``goods`` ``f32[C, M]`` over firms (EconGym's, with its 1e-8):
    ``(sum_j (c_j + 1e-8)^rho)^(1/rho)``, ``rho = (epsilon - 1)/epsilon``; the geometric
    mean at ``epsilon = 1``. ``f32[C]``."""
    g = goods + TINY
    if goods.shape[-1] == 1:  # one good: the aggregate is the good (skips two powers)
        return g[..., 0]
    at_one = jnp.abs(epsilon - 1.0) < 1e-6
    rho = jnp.where(at_one, 1.0, (epsilon - 1.0) / epsilon)
    power = jnp.sum(g**rho, axis=-1) ** (1.0 / rho)
    return jnp.where(at_one, jnp.exp(jnp.mean(jnp.log(g), axis=-1)), power)


def trade_stock(invest, stock, stock_price, stock_alpha, alive):
    """Rebalance into the risky asset (EconGym's ``update_stock_market``).

    Each household moves its position to ``invest`` dollars at today's price; the price
    then moves by ``stock_alpha x net buying / value of all holdings`` (floored at 1e-6).
    Returns ``(stock, price, gain)`` with ``gain = stock x new price - invest``: the
    next year's risky income.
    """
    buy = jnp.where(alive, invest - stock * stock_price, 0.0)
    stock = stock + buy / stock_price
    imbalance = jnp.sum(buy)
    value = jnp.sum(jnp.where(alive, stock, 0.0)) * stock_price
    moves = (value > 0) & (jnp.abs(imbalance) > 1e-8)  # numpy's isclose(imbalance, 0)
    new_price = jnp.where(moves, jnp.maximum(stock_price * (1.0 + stock_alpha * imbalance / jnp.where(
        value > 0, value, 1.0)), 1e-6), stock_price)
    return stock, new_price, jnp.where(alive, stock * new_price - invest, 0.0)


def utility(consumption, hours, crra, ife, labour_weight, labour_scale):
    """EconGym's reward ``c^(1-crra)/(1-crra) - w (s h/2512)^(1+ife)/(1+ife)`` (``log(c +
    1e-8)`` at ``crra = 1``; the 2512 is EconGym's, whatever ``h_max``)."""
    at_one = jnp.abs(crra - 1.0) < 1e-6
    safe = jnp.where(at_one, 0.5, 1.0 - crra)
    u_c = jnp.where(at_one, jnp.log(consumption + TINY), jnp.maximum(consumption, 0.0) ** safe / safe)
    ratio = hours / 2512.0 * labour_scale
    return u_c - labour_weight * ratio ** (1.0 + ife) / (1.0 + ife)
