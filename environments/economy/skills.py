"""Skill (hourly wage) distributions of the taxation economy.

A worker's skill ``v`` is its pre-tax income per hour. Following the LLM Economist,
the distributions below describe *potential income* ``y`` at ``reference_hours``
(40 h) and ``v = y / reference_hours``; draws are clipped to
``[income_min, income_max]`` (the AI Economist clips its Pareto skills the same way),
which also keeps every skill strictly positive.

* ``"gb2"`` — generalised beta of the second kind in the GAMLSS parametrisation
  ``GB2(mu, sigma, nu, tau)``: ``(y/mu)^sigma ~ BetaPrime(nu, tau)``, i.e.
  ``F(y) = I_w(nu, tau)`` with ``w = r/(1+r)``, ``r = (y/mu)^sigma`` (regularised
  incomplete beta); the default is the LLM Economist's fit to US incomes (ACS 2023):
  ``mu = 72,402.78, sigma = 2.0721, nu = 0.48652, tau = 1.14104``. Mean
  ``mu * B(nu + 1/sigma, tau - 1/sigma) / B(nu, tau)`` when ``sigma tau > 1``.
  Sampled by inverse transform. In ``s = sigma log(y/mu)`` the density is
  ``e^(nu s) / (1 + e^s)^(nu + tau)`` up to a constant; ``GB2_TABLE_SIZE`` points
  spanning the clip range (at least ``s in [-30, 30]``) integrate it (trapezoids, plus
  the exponential tails ``f(s_0)/nu`` and ``f(s_end)/tau`` beyond the grid, exact to
  ``O(e^-30)``; the total normalises, so no beta function is needed), the lower and
  upper masses are accumulated in log space from their own ends so that both tails
  stay accurate in float32, and the table is re-tabulated as ``s``
  at evenly spaced ``logit F`` (a draw finds its cell by arithmetic, not a search). A
  draw ``u`` maps to ``s`` by linear interpolation at ``logit u``: both tails are
  power laws, i.e. straight lines in ``(logit F, s)``, so this is nearly exact. A
  million draws cost one uniform each and a small gather (gamma-ratio sampling, with
  rejection loops, took seconds at that size; ``betainc`` tables compile slowly).
* ``"pareto"`` — ``y = scale * U^(-1/alpha)``, ``U ~ Uniform(0, 1]``, mean
  ``scale * alpha / (alpha - 1)``.
* ``"uniform"`` — ``y ~ Uniform[low, high]``.

The choice is the integer ``SkillParams.dist`` (an index into ``SKILL_DISTRIBUTIONS``),
so economies with different distributions can be ``vmap``-ed; with shared params the
``lax.switch`` is a real branch and only the chosen sampler runs.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

SKILL_DISTRIBUTIONS = ("gb2", "pareto", "uniform")
GB2_TABLE_SIZE = 4096


@struct.dataclass
class SkillParams:
    """Parameters of the skill distribution (all scalars, dollars of annual income).

    ``dist``: ``i32`` index into ``SKILL_DISTRIBUTIONS``; ``gb2_*``: GB2 parameters;
    ``pareto_alpha``/``pareto_scale``; ``uniform_low``/``uniform_high``;
    ``income_min``/``income_max``: clip of the potential income; ``reference_hours``:
    hours at which a draw is earned (skill = draw / reference_hours).
    """

    dist: jax.Array
    gb2_mu: jax.Array
    gb2_sigma: jax.Array
    gb2_nu: jax.Array
    gb2_tau: jax.Array
    pareto_alpha: jax.Array
    pareto_scale: jax.Array
    uniform_low: jax.Array
    uniform_high: jax.Array
    income_min: jax.Array
    income_max: jax.Array
    reference_hours: jax.Array


def default_skill_params(dist: str = "gb2") -> SkillParams:
    """Defaults: the US GB2 fit (mean $59k); Pareto(alpha=2, scale=30k) and
    Uniform[10k, 110k], both with a mean of $60k; clip to [$100, $10M]; 40 reference hours."""
    if dist not in SKILL_DISTRIBUTIONS:
        raise ValueError(f"skill_dist must be one of {SKILL_DISTRIBUTIONS}, got {dist!r}")
    f = lambda v: jnp.asarray(v, jnp.float32)  # noqa: E731
    return SkillParams(
        dist=jnp.asarray(SKILL_DISTRIBUTIONS.index(dist), jnp.int32),
        gb2_mu=f(72_402.78), gb2_sigma=f(2.0721), gb2_nu=f(0.48652), gb2_tau=f(1.14104),
        pareto_alpha=f(2.0), pareto_scale=f(30_000.0),
        uniform_low=f(10_000.0), uniform_high=f(110_000.0),
        income_min=f(100.0), income_max=f(1e7), reference_hours=f(40.0),
    )


def check_skill_params(p: SkillParams, prefix: str = "params.skills") -> None:
    """Host-side validation (numpy values, batch axes allowed); ``ValueError`` names the field."""
    def need(ok, field, allowed):
        if not np.all(ok):
            raise ValueError(f"{prefix}.{field} must be {allowed}, got {np.asarray(getattr(p, field)).tolist()}")

    need((p.dist >= 0) & (p.dist < len(SKILL_DISTRIBUTIONS)), "dist",
         f"an index in [0, {len(SKILL_DISTRIBUTIONS) - 1}] into {SKILL_DISTRIBUTIONS}")
    for field in ("gb2_mu", "gb2_sigma", "gb2_nu", "gb2_tau", "pareto_alpha", "pareto_scale",
                  "income_min", "reference_hours"):
        need(np.isfinite(getattr(p, field)) & (getattr(p, field) > 0), field, "finite and > 0")
    need(np.isfinite(p.uniform_low) & (p.uniform_low > 0), "uniform_low", "finite and > 0 (skills must be positive)")
    need(np.isfinite(p.uniform_high) & (p.uniform_high > p.uniform_low), "uniform_high", "finite and > uniform_low")
    need(np.isfinite(p.income_max) & (p.income_max > p.income_min), "income_max", "finite and > income_min")


def check_skills(skills, name: str = "skills") -> None:
    """Host check of explicit skills: finite and strictly positive."""
    s = np.asarray(skills, np.float64)
    if s.size == 0 or not np.all(np.isfinite(s)) or np.any(s <= 0):
        bad = s[~(np.isfinite(s) & (s > 0))][:5].tolist() if s.size else "empty"
        raise ValueError(f"{name} must be finite and > 0 (hourly wages), got invalid values {bad}")


def sample_incomes(key: jax.Array, n: int, p: SkillParams) -> jax.Array:
    """``n`` potential incomes at ``reference_hours``, clipped: ``f32[n]``."""

    def gb2(k):
        log_y, logit_f = gb2_logit_table(p)
        # log y at evenly spaced logit F (a draw's cell is then arithmetic), over the
        # logits that float32 uniforms reach: [logit(tiny), logit(1 - 2^-24)] ~ [-87, 17]
        grid = jnp.linspace(jnp.maximum(logit_f[0], -90.0), jnp.minimum(logit_f[-1], 20.0), GB2_TABLE_SIZE)
        table = jnp.interp(grid, logit_f, log_y)
        cells = jnp.stack([table[:-1], table[1:] - table[:-1]], axis=1)  # one gather per draw
        u = jax.random.uniform(k, (n,), minval=jnp.finfo(jnp.float32).tiny)
        pos = (jnp.log(u) - jnp.log1p(-u) - grid[0]) * ((GB2_TABLE_SIZE - 1) / (grid[-1] - grid[0]))
        pos = jnp.clip(pos, 0.0, GB2_TABLE_SIZE - 1.0)
        i = jnp.minimum(pos.astype(jnp.int32), GB2_TABLE_SIZE - 2)
        cell = cells[i]
        return jnp.exp(cell[:, 0] + (pos - i) * cell[:, 1])  # clipped to the income range below

    def pareto(k):
        u = 1.0 - jax.random.uniform(k, (n,))  # (0, 1]
        return p.pareto_scale * u ** (-1.0 / p.pareto_alpha)

    def uniform(k):
        return jax.random.uniform(k, (n,), minval=p.uniform_low, maxval=p.uniform_high)

    y = jax.lax.switch(p.dist, [gb2, pareto, uniform], key)
    return jnp.clip(y, p.income_min, p.income_max).astype(jnp.float32)


def gb2_logit_table(p: SkillParams, size: int = GB2_TABLE_SIZE):
    """``(log y, logit F(y))``, both ``f32[size]``, at ``s = sigma log(y/mu)`` evenly
    spaced over the clip range widened to at least ``[-30, 30]`` (the inverse-transform
    table of the GB2); masses are accumulated in log space, so no tail underflows."""
    s_min = p.gb2_sigma * (jnp.log(p.income_min) - jnp.log(p.gb2_mu))
    s_max = p.gb2_sigma * (jnp.log(p.income_max) - jnp.log(p.gb2_mu))
    s = jnp.linspace(jnp.minimum(s_min, -30.0), jnp.maximum(s_max, 30.0), size)
    h = s[1] - s[0]
    nu, tau = p.gb2_nu, p.gb2_tau
    log_f = nu * s - (nu + tau) * jnp.logaddexp(0.0, s)  # log density up to a constant
    log_cells = jnp.log(0.5 * h) + jnp.logaddexp(log_f[1:], log_f[:-1])  # trapezoids
    # beyond the grid the density is e^(nu s) (below) or e^(-tau s) (above) to O(e^-30)
    log_lower = jax.lax.cumlogsumexp(jnp.concatenate([(log_f[0] - jnp.log(nu))[None], log_cells]))
    log_upper = jax.lax.cumlogsumexp(
        jnp.concatenate([(log_f[-1] - jnp.log(tau))[None], log_cells[::-1]]))[::-1]
    logit = log_lower - log_upper
    # float32 may tie far out in a tail; the table must increase strictly
    logit = jax.lax.cummax(logit + jnp.arange(size, dtype=jnp.float32) * 1e-6)
    return jnp.log(p.gb2_mu) + s / p.gb2_sigma, logit


def sample_skills(key: jax.Array, n: int, p: SkillParams) -> jax.Array:
    """``n`` skills (hourly wages) ``f32[n]`` = potential income / reference hours."""
    return sample_incomes(key, n, p) / p.reference_hours


def gb2_mean(mu: float, sigma: float, nu: float, tau: float) -> float:
    """Mean of GB2 (GAMLSS parametrisation); needs ``sigma * tau > 1``."""
    if sigma * tau <= 1:
        raise ValueError("the GB2 mean is finite only when sigma * tau > 1")
    lg = math.lgamma
    return mu * math.exp(lg(nu + 1 / sigma) + lg(tau - 1 / sigma) - lg(nu) - lg(tau))
