"""EconGym's Saez government (``agents/saez.py``, commit d81cd5d, after the AI
Economist's): an income tax in brackets whose rates it resets every ``period`` years
from Saez's formula on the incomes it has seen.

What it does, in EconGym's order, each year (``Government.compute_tax``):

1. In a year ``t`` with ``t % period == 0`` it sets new bracket rates. Until its
   buffer holds ``BUFFER`` samples the rates are uniform draws in ``[0, 1)``; after,
   they come from the buffer:

   * the labour elasticity ``e``: an ordinary least-squares fit of ``log z`` on ``log(1
     - tau)`` over the samples with ``z > 0`` and ``tau < 1``, floored at 0 and
     smoothed, ``e <- 0.02 e_fit + 0.98 e`` (from 0.5; kept when there are fewer than
     10 such samples or their rates do not vary);
   * on ``BINS`` equal income bins up to the top cutoff (and one bin above): the
     average welfare weight ``G(z)`` of incomes ``>= z`` (weights ``1 / max(1, z)``,
     averaged across a bin's edges) and the local Pareto parameter ``a(z) = z f(z) /
     P(z' >= z)`` (above the top cutoff ``zbar / (zbar - cutoff)``, ``zbar`` their
     mean);
   * the marginal rate of each bin ``(1 - G) / (1 - G + a e)``, bins without incomes
     filled by linear interpolation;
   * each bracket's rate is the tax this schedule collects over the bracket divided by
     its width (the top bracket takes the top bin's rate), clipped to ``[0, 1]``.
2. It appends every household's ``(income, marginal rate)`` to its buffer, which keeps
   the last ``BUFFER`` samples.
3. Each household pays ``sum_b rate_b clip(z - c_b, 0, c_{b+1} - c_b)``.

EconGym builds a new Saez government at every reset (the buffer starts empty and the
first ``period`` years are taxed at random rates) and so does ``Society``. Where we
differ: the buffer takes the households alive in slot order, which for overlapping
generations (whose newborns fill free slots here and are appended there) is a
different "last 500"; and values are ``f32``.

Shapes: ``C`` household slots, ``B`` brackets (``params.saez_brackets``), ``S =
BUFFER``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

BUFFER = 500
"""Samples the Saez government keeps (EconGym's ``_buffer_size``)."""
BINS = 100
"""Income bins of its estimates below the top cutoff (EconGym's ``_saez_n_estimation_bins``)."""
ELASTICITY_DECAY = 0.98
TINY = 1e-9


@struct.dataclass
class SaezState:
    """``rates`` ``f32[B]`` in force; the buffer ``income``, ``rate`` ``f32[S]`` and
    ``valid`` ``bool[S]`` (oldest first, the valid entries at the end);
    ``elasticity`` and ``log_z0`` ``f32[]`` (the running estimate and the last fit's
    intercept)."""

    rates: jax.Array
    income: jax.Array
    rate: jax.Array
    valid: jax.Array
    elasticity: jax.Array
    log_z0: jax.Array


def init(num_brackets: int) -> SaezState:
    """A new Saez government: no samples, rates 0, elasticity 0.5."""
    zero_s = jnp.zeros((BUFFER,), jnp.float32)
    return SaezState(rates=jnp.zeros((num_brackets,), jnp.float32), income=zero_s, rate=zero_s,
                     valid=jnp.zeros((BUFFER,), bool), elasticity=jnp.asarray(0.5, jnp.float32),
                     log_z0=jnp.zeros((), jnp.float32))


def bracket_tax(income, rates, cutoffs):
    """Tax ``f32[C]`` of ``income`` ``f32[C]`` under bracket ``rates`` ``f32[B]`` from
    ``cutoffs`` ``f32[B]`` (``cutoffs[0] = 0``, the last bracket open); rates above 1
    count as 1."""
    width = jnp.concatenate([cutoffs[1:] - cutoffs[:-1], jnp.full((1,), jnp.inf, cutoffs.dtype)])
    inside = jnp.minimum(width, jnp.maximum(income[..., None] - cutoffs, 0.0))
    return inside @ jnp.minimum(rates, 1.0)


def marginal_rate(income, rates, cutoffs):
    """The rate of the bracket ``income`` falls in (0 for negative incomes)."""
    bracket = jnp.sum(income[..., None] >= cutoffs, axis=-1) - 1
    return jnp.where(income < 0, 0.0, jnp.minimum(rates, 1.0)[jnp.clip(bracket, 0, rates.shape[0] - 1)])


def push(state: SaezState, income, rate, alive) -> SaezState:
    """The buffer after appending the ``alive`` entries of ``income``, ``rate``
    ``f32[C]`` in slot order, keeping the last ``S``."""
    # Entry j of the new buffer is the valid entry of rank total - S + 1 + j among the
    # old buffer followed by the C new ones: S binary searches in the running count
    # (not a scatter of C entries: at 10^6 households that doubled the step).
    count = jnp.cumsum(jnp.concatenate([state.valid, alive]).astype(jnp.int32))
    rank = count[-1] - BUFFER + 1 + jnp.arange(BUFFER)
    pos = jnp.searchsorted(count, rank, side="left")
    old, new = pos < BUFFER, jnp.clip(pos - BUFFER, 0, income.shape[0] - 1)

    def take(buffered, fresh):
        return jnp.where(rank >= 1, jnp.where(old, buffered[jnp.minimum(pos, BUFFER - 1)],
                                              fresh.astype(jnp.float32)[new]), 0.0)

    return state.replace(income=take(state.income, income), rate=take(state.rate, rate), valid=rank >= 1)


def elasticity_fit(state: SaezState):
    """``(elasticity, log_z0)`` after one of EconGym's updates (module docstring, 1)."""
    z, tau = state.income, state.rate
    use = state.valid & (z > 0) & (tau < 1)
    n = jnp.sum(use).astype(jnp.float32)
    safe_n = jnp.maximum(n, 1.0)
    mean_tau = jnp.sum(jnp.where(use, tau, 0.0)) / safe_n
    std_tau = jnp.sqrt(jnp.sum(jnp.where(use, (tau - mean_tau) ** 2, 0.0)) / safe_n)
    x = jnp.log(jnp.maximum(1.0 - tau, TINY))
    y = jnp.log(jnp.maximum(z, TINY))
    mx = jnp.sum(jnp.where(use, x, 0.0)) / safe_n
    my = jnp.sum(jnp.where(use, y, 0.0)) / safe_n
    sxx = jnp.sum(jnp.where(use, (x - mx) ** 2, 0.0))
    sxy = jnp.sum(jnp.where(use, (x - mx) * (y - my), 0.0))
    slope = sxy / jnp.where(sxx > 0, sxx, 1.0)
    keep = (n < 10) | (std_tau < 1e-6)
    elasticity = jnp.where(keep, state.elasticity,
                           (1.0 - ELASTICITY_DECAY) * jnp.maximum(slope, 0.0) + ELASTICITY_DECAY * state.elasticity)
    return elasticity, jnp.where(keep, state.log_z0, my - slope * mx)


def bin_rates(state: SaezState, elasticity, top):
    """Saez's marginal rate ``f32[BINS + 1]`` on each income bin of ``[0, top]`` and
    above it, from the buffer (module docstring, 1)."""
    z, valid = state.income, state.valid
    edges = jnp.linspace(0.0, top, BINS + 1)
    width = top / BINS
    mid = 0.5 * (edges[:-1] + edges[1:])
    inside = valid & (z >= 0) & (z <= top)
    below, above = valid & (z < 0), valid & (z > top)
    idx = jnp.clip(jnp.floor(z / width).astype(jnp.int32), 0, BINS - 1)
    counts = jnp.zeros((BINS,), jnp.float32).at[idx].add(inside.astype(jnp.float32))
    n_below, n_above = jnp.sum(below).astype(jnp.float32), jnp.sum(above).astype(jnp.float32)
    n_total = jnp.sum(counts) + n_below + n_above
    # welfare weights: G(z), the mean weight of incomes >= z, across each bin's edges
    weight = lambda v: 1.0 / jnp.maximum(1.0, v)  # noqa: E731
    w_above = jnp.sum(jnp.where(above, weight(z), 0.0))
    w_bins = counts * weight(mid)
    norm = jnp.sum(w_bins) + n_below + w_above + TINY  # each negative income weighs 1
    density = jnp.concatenate([w_bins, w_above[None]]) / norm
    pz = jnp.concatenate([counts, n_above[None]]) / n_total
    tail = lambda v: jnp.cumsum(v[::-1])[::-1]  # noqa: E731
    g_edge = tail(density) / (tail(pz) + TINY)
    g = jnp.concatenate([0.5 * (g_edge[:-1] + g_edge[1:]), g_edge[-1:]])
    # local Pareto parameter a(z)
    cum = jnp.cumsum(pz) + n_below / n_total
    cum = jnp.concatenate([cum[:1], jnp.minimum(cum[1:], 1.0)])
    geq = jnp.clip(1.0 - cum + 0.5 * pz, 0.0, 1.0)[:BINS]
    a_bins = jnp.where(pz[:BINS] == 0, jnp.nan, mid * pz[:BINS] / (geq + TINY) / width)
    mean_above = jnp.sum(jnp.where(above, z, 0.0)) / jnp.maximum(n_above, 1.0)
    a_top = jnp.where(n_above > 0, mean_above / (mean_above - top + TINY), 0.0)
    a = jnp.concatenate([a_bins, a_top[None]])
    tau = (1.0 - g) / (1.0 - g + a * elasticity + TINY)
    # bins without incomes: linear between the rates either side (0 before the first)
    i = jnp.arange(BINS + 1)
    real = ~jnp.isnan(tau)
    prev = jax.lax.cummax(jnp.where(real, i, -1))
    nxt = jax.lax.cummin(jnp.where(real, i, BINS + 1), reverse=True)
    prev_tau = jnp.where(prev >= 0, tau[jnp.maximum(prev, 0)], 0.0)
    next_tau = tau[jnp.minimum(nxt, BINS)]
    filled = prev_tau + (next_tau - prev_tau) * (i - prev) / jnp.maximum(nxt - prev, 1)
    return jnp.where(real, tau, filled)


def bracket_rates(tau_bins, cutoffs):
    """Bracket rates ``f32[B]`` from bin rates ``f32[BINS + 1]``: the tax the binned
    schedule collects inside each bracket over its width; the top bracket the top bin's."""
    top = cutoffs[-1]
    edges = jnp.linspace(0.0, top, BINS + 1)
    width = jnp.concatenate([jnp.full((BINS,), top / BINS), jnp.full((1,), jnp.inf)])
    due = jnp.maximum(jnp.minimum(width, jnp.maximum(cutoffs[1:, None] - edges, 0.0)) @ tau_bins, 0.0)
    burden = due - jnp.concatenate([jnp.zeros((1,)), due[:-1]])
    return jnp.clip(jnp.concatenate([burden / (cutoffs[1:] - cutoffs[:-1]), tau_bins[-1:]]), 0.0, 1.0)


def new_rates(key, state: SaezState, cutoffs) -> SaezState:
    """A year that sets rates: random until the buffer is full, Saez's after."""
    full = jnp.all(state.valid)
    elasticity, log_z0 = elasticity_fit(state)
    saez = bracket_rates(bin_rates(state, elasticity, cutoffs[-1]), cutoffs)
    random = jax.random.uniform(key, cutoffs.shape)
    return state.replace(rates=jnp.where(full, saez, random), elasticity=jnp.where(full, elasticity, state.elasticity),
                         log_z0=jnp.where(full, log_z0, state.log_z0))


def step(key, state: SaezState, t, income, alive, cutoffs, period):
    """One year (module docstring): ``(tax f32[C], next SaezState)``; ``t`` the year
    of the episode, ``alive`` ``bool[C]`` the households that pay."""
    state = jax.lax.cond(t % period == 0, lambda s: new_rates(key, s, cutoffs), lambda s: s, state)
    state = push(state, income, marginal_rate(income, state.rates, cutoffs), alive)
    return jnp.where(alive, bracket_tax(income, state.rates, cutoffs), 0.0), state
