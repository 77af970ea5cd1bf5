"""The equations of the macro economy as pure, vectorised functions.

Each function is one block of the model (see ``env.py`` for how a step chains them),
written so that the tests can check it against its closed form. Nothing here loops
over agents: households are the last axis of every ``[N]`` array and firms of every
``[M]`` array.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

TINY = 1e-12  # guards divisions by aggregates that can be exactly zero
RATION_TOL = 1e-6  # a firm with less than this share of its supply left is sold out


def unit_interval(u: jax.Array) -> jax.Array:
    """Map an action in ``[-1, 1]`` to ``[0, 1]`` (inputs are clipped first)."""
    return (jnp.clip(u, -1.0, 1.0) + 1.0) * 0.5


def scale_action(u: jax.Array, low, high) -> jax.Array:
    """Map an action in ``[-1, 1]`` linearly onto ``[low, high]`` (clipped first)."""
    return low + unit_interval(u) * (high - low)


def clean_actions(u: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Clip actions to ``[-1, 1]``; non-finite entries become 0 (the midpoint).

    Returns ``(clean, any_out_of_range)``; the flag is a ``bool[]``.
    """
    finite = jnp.isfinite(u)
    clean = jnp.where(finite, jnp.clip(u, -1.0, 1.0), 0.0)
    bad = jnp.any(~finite | (u < -1.0) | (u > 1.0))
    return clean, bad


# --------------------------------------------------------------------------- productivity
def productivity_step(key, latent, star, rho, sigma, p_star, q_star):
    """One step of the household productivity process.

    ``latent``: ``f32[N]`` log productivity of the normal state,
    ``log e' = rho * log e + sigma * eps`` with ``eps ~ N(0, 1)``; it keeps evolving
    while a household is a superstar, and the household returns to it when it leaves.
    ``star``: ``bool[N]``; a normal household becomes a superstar with probability
    ``p_star``, a superstar stays one with probability ``q_star``.
    """
    k_eps, k_star = jax.random.split(key)
    latent = rho * latent + sigma * jax.random.normal(k_eps, latent.shape, latent.dtype)
    u = jax.random.uniform(k_star, star.shape)
    star = jnp.where(star, u < q_star, u < p_star)
    return latent, star


def stationary_productivity(key, n, rho, sigma, p_star, q_star):
    """Draws from the stationary distribution of ``productivity_step``:
    ``latent ~ N(0, sigma^2 / (1 - rho^2))``, superstar with probability
    ``p_star / (p_star + 1 - q_star)``."""
    k_lat, k_star = jax.random.split(key)
    latent = jax.random.normal(k_lat, (n,)) * sigma / jnp.sqrt(1.0 - rho**2)
    p_stationary = p_star / jnp.maximum(p_star + 1.0 - q_star, TINY)
    star = jax.random.uniform(k_star, (n,)) < p_stationary
    return latent, star


def effective_productivity(latent, star, star_multiple):
    """``e_i``: ``exp(latent_i)`` for normal households; a superstar earns
    ``star_multiple`` times the mean ``e`` of the normal households (EconGym's rule;
    the mean of everyone's ``exp(latent)`` when all are superstars). ``f32[N]``."""
    base = jnp.exp(latent)
    n_normal = jnp.sum(~star)
    mean_normal = jnp.where(
        n_normal > 0, jnp.sum(jnp.where(star, 0.0, base)) / jnp.maximum(n_normal, 1), jnp.mean(base)
    )
    return jnp.where(star, star_multiple * mean_normal, base)


# --------------------------------------------------------------------------- production
def production(tfp, capital, labour, price, alpha):
    """Cobb-Douglas output and marginal-product factor prices of each firm.

    ``Y = Z K^alpha L^(1-alpha)``; nominal wage per effective hour
    ``W = p Z (1-alpha) (K/L)^alpha = (1-alpha) p Y / L`` and nominal rental rate of
    capital ``r_K = p Z alpha (K/L)^(alpha-1) = alpha p Y / K``. A firm with no labour
    produces nothing and pays a wage of 0 (the marginal product is unbounded there,
    but its wage bill ``W L`` is 0 either way). All ``f32[M]``.
    """
    has_l = labour > 0
    safe_l = jnp.where(has_l, labour, 1.0)
    y = jnp.where(has_l, tfp * capital**alpha * safe_l ** (1.0 - alpha), 0.0)
    wage = jnp.where(has_l, (1.0 - alpha) * price * y / safe_l, 0.0)
    rental = alpha * price * y / jnp.maximum(capital, TINY)
    return y, wage, rental


# --------------------------------------------------------------------------- taxes
def hsv_tax(x, tau, xi, scale):
    """The HSV tax ``T(x) = x - (1 - tau) / (1 - xi) * s * (x / s)^(1 - xi)`` on
    ``x+ = max(x, 0)`` (nothing is taxed or paid on a non-positive base).

    ``s`` is the unit ``x`` is measured in (the env passes the mean positive base, so
    the schedule follows the price level): ``xi = 0`` is a flat tax at ``tau``;
    ``xi > 0`` makes it progressive, with transfers (``T < 0``) below a threshold.
    The post-tax amount ``x - T(x)`` is never negative. Requires ``xi < 1``.
    """
    xp = jnp.maximum(x, 0.0)
    s = jnp.maximum(scale, TINY)
    kept = (1.0 - tau) / (1.0 - xi) * s * (xp / s) ** (1.0 - xi)
    return xp - kept


# --------------------------------------------------------------------------- goods market
def ration(budget_total, price, supply, elasticity, rounds: int):
    """Clear the goods market by rationing, in ``rounds`` rounds (``M`` is exact).

    Every buyer sends the same share of its unspent budget to each firm that still has
    goods, with weights ``p_j^-elasticity`` renormalised over those firms (for a total
    unspent budget ``X`` firm ``j`` is asked ``D_j = w_j X / p_j`` goods). A firm sells
    ``min(D_j, S_j)`` of its remaining supply, so every buyer of firm ``j`` gets the same
    fraction ``f_j = min(1, S_j / D_j)`` of its order. Because all buyers use the same
    weights, a buyer with budget ``x`` ends up with ``q x`` goods and pays ``phi x``:
    every buyer is served the same fraction ``phi`` of its budget, and the unspent
    ``(1 - phi) x`` stays with it. A rationed firm sells exactly what it has left, and a
    firm with less than ``RATION_TOL`` of its supply left counts as sold out, so each
    round either serves all demand or sells out at least one firm: ``rounds = M``
    clears the market (``phi < 1`` only when every firm has sold out).

    Returns ``(fill f32[M] = sold / asked, sold f32[M], left f32[M], phi f32[], q f32[])``;
    ``left = supply - sold >= 0`` is the unsold stock.
    """
    logits = -elasticity * jnp.log(price)
    floor = RATION_TOL * supply

    def one_round(_, carry):
        left, unspent, asked, sold, q = carry
        open_ = left > floor
        w = jax.nn.softmax(jnp.where(open_, logits, -jnp.inf))
        w = jnp.where(jnp.any(open_), w, 0.0)
        demand = w * unspent * budget_total / price
        rationed = demand >= left
        f = jnp.where(rationed, left / jnp.maximum(demand, TINY), 1.0)
        bought = jnp.where(rationed, left, demand)  # exact: a rationed firm is emptied
        return (
            jnp.where(rationed, 0.0, left - bought),
            unspent * (1.0 - jnp.sum(w * f)),
            asked + demand,
            sold + bought,
            q + unspent * jnp.sum(w * f / price),
        )

    zeros = jnp.zeros_like(price)
    one = jnp.ones((), price.dtype)
    left, unspent, asked, sold, q = jax.lax.fori_loop(
        0, rounds, one_round, (supply, one, zeros, zeros, 0.0 * one)
    )
    fill = jnp.where(asked > 0, sold / jnp.where(asked > 0, asked, 1.0), 1.0)
    return fill, sold, left, 1.0 - unspent, q


# --------------------------------------------------------------------------- preferences
def crra_utility(c, hours_share, sigma, phi, alpha, beta, c_floor):
    """``u = c^(1-sigma)/(1-sigma)`` (``log c`` at ``sigma = 1``) ``- alpha
    (beta h / h_max)^(1+phi) / (1+phi)``, with ``c`` floored at ``c_floor`` so that
    zero consumption has a finite utility."""
    c = jnp.maximum(c, c_floor)
    log_case = jnp.abs(sigma - 1.0) < 1e-6
    safe_sigma = jnp.where(log_case, 0.0, sigma)
    u_c = jnp.where(log_case, jnp.log(c), c ** (1.0 - safe_sigma) / (1.0 - safe_sigma))
    return u_c - alpha * (beta * hours_share) ** (1.0 + phi) / (1.0 + phi)


def safe_ratio(num, den, default=0.0):
    """``num / den`` where ``den > 0``, else ``default``."""
    ok = den > 0
    return jnp.where(ok, num / jnp.where(ok, den, 1.0), default)
