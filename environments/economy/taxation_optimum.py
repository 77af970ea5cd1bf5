"""The optimal bracket schedule of ``taxation`` against best-responding workers.

The planner of ``taxation`` is a Stackelberg leader: it picks the ``B`` bracket rates,
the ``N`` workers answer with their hours. Each worker's answer depends only on its own
skill, the schedule and the lump-sum rebate, so with workers that best-respond exactly
the planner's per-step welfare is a deterministic function ``W(rates)`` of the rates
for a given skill sample. This module evaluates ``W`` and maximises it.

Shapes: ``skills`` is ``f32[E, N]`` (``E`` economies of ``N`` workers, dollars per hour;
one economy is ``E = 1``), ``rates`` and ``cutoffs`` are ``f32[B]``, ``hour_levels``
``f32[L]`` (the env's grid, ``env.hour_levels``) or ``None`` for continuous hours in
``[0, max_hours]``. Welfare is the mean over the ``E`` economies of the env's
per-worker-step welfare (``params.swf``, in income units): exactly what the planner
is paid per worker step once the workers play these hours.

**Best response.** On the hours grid it is ``argmax_k u(l_k)`` per worker
(``exact_hours``; ``policies.best_response_levels``), with continuous hours the closed
form of ``policies.best_response_hours``. Either is piecewise constant or kinked in
the rates; the grid's is not differentiable at all. The optimiser therefore climbs a
smooth relaxation (``soft_hours``): the softmax over the grid of ``u / temperature``,
whose expected hours tend to the exact best response as the temperature falls (annealed
geometrically during the run). Every reported welfare, and the choice of the best
iterate, uses the *exact* best response (``welfare(..., temperature=None)``).

**Rebate.** Workers take the rebate ``R`` as given; the welfare uses the rebate the
hours fund (``R = mean T(z)``, as the env pays it). With quasi-linear utility the
rebate adds a constant to every option, so the best response ignores it and one pass
(``iterations=1``) is exact; with isoelastic utility ``iterations > 1`` runs the fixed
point ``R -> hours(R) -> mean T(z)`` (unrolled, so it is differentiated through too).

**Optimiser** (``optimise``): Adam on the logits of the rates (``rates = sigmoid``),
several restarts under ``vmap``, the temperature annealed from ``temperature[0]`` to
``temperature[1]`` (both relative to ``step_pay``: the pre-tax pay of one grid step of
the median worker in utility units), keeping each restart's best iterate under the
exact objective; ``polish`` then runs a coordinate search on the exact objective.
``search`` scores any batch of schedules exactly (grids, random draws) so that a local
optimum of the gradient run is caught.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from jaxagents_environments.economy import brackets as schedule
from jaxagents_environments.economy import metrics, policies
from jaxagents_environments.economy.labour import worker_utility
from jaxagents_environments.economy.taxation import TaxationParams


# --------------------------------------------------------------------------- best responses
def _grid_utility(skills, rates, cutoffs, params, hour_levels, rebate):
    """Utility ``f32[L, N]`` of every grid level for one economy's ``skills`` ``[N]``."""
    levels = jnp.asarray(hour_levels, jnp.float32)[:, None]
    z = skills[None, :] * levels
    post = z - schedule.tax(z, rates, cutoffs) + rebate
    return worker_utility(post, jnp.broadcast_to(levels, z.shape), params)


def exact_hours(skills, rates, cutoffs, params: TaxationParams, hour_levels=None, max_hours: float = 100.0,
                rebate=0.0):
    """Exact best-response hours ``f32[N]`` of one economy (``skills`` ``[N]``): the best
    grid level, or the continuous optimum when ``hour_levels`` is ``None``."""
    if hour_levels is None:
        return policies.best_response_hours(skills, rates, cutoffs, params, max_hours, rebate)
    idx = policies.best_response_levels(skills, rates, cutoffs, params, hour_levels, rebate)
    return jnp.asarray(hour_levels, jnp.float32)[idx]


def soft_hours(skills, rates, cutoffs, params: TaxationParams, hour_levels, temperature, rebate=0.0):
    """Softmax-relaxed best response ``f32[N]``: ``sum_k softmax_k(u_k / temperature) l_k``
    (``temperature > 0``, utility units; may be traced). Differentiable in the rates."""
    u = _grid_utility(skills, rates, cutoffs, params, hour_levels, rebate)
    p = jax.nn.softmax(u / temperature, axis=0)
    return jnp.sum(p * jnp.asarray(hour_levels, jnp.float32)[:, None], axis=0)


# --------------------------------------------------------------------------- welfare
def scores(skills, hours, rates, cutoffs, params: TaxationParams) -> dict:
    """Per-worker-step scores of one economy (``skills``/``hours`` ``[N]``), as the env
    computes them (exact Gini): ``welfare`` (``params.swf``), ``equality_x_productivity``,
    ``utilitarian``, ``inverse_income`` (income units), ``gini``, ``mean_hours``,
    ``gdp_per_worker`` (income units), ``revenue_share``. The rebate is the revenue
    shared equally."""
    unit = params.income_unit
    z = skills * hours
    tax = schedule.tax(z, rates, cutoffs)
    post = z - tax + jnp.mean(tax)
    u = worker_utility(post, hours, params)
    gini = metrics.gini(post)
    out = {
        "equality_x_productivity": (1.0 - gini) * jnp.mean(z) / unit,  # mean(post) == mean(z)
        "utilitarian": jnp.mean(u),
        "inverse_income": jnp.mean(u / jnp.maximum(z / unit, 1.0)),
        "gini": gini,
        "mean_hours": jnp.mean(hours),
        "gdp_per_worker": jnp.mean(z) / unit,
        "revenue_share": jnp.sum(tax) / jnp.maximum(jnp.sum(z), 1e-9),
    }
    out["welfare"] = jax.lax.switch(params.swf, [
        lambda: out["equality_x_productivity"], lambda: out["utilitarian"], lambda: out["inverse_income"]])
    return out


def equilibrium_hours(skills, rates, cutoffs, params: TaxationParams, hour_levels=None, max_hours: float = 100.0,
                      temperature=None, iterations: int = 1):
    """Best-response hours ``f32[N]`` of one economy and the rebate they fund: exact
    (``temperature=None``) or softmax-relaxed; ``iterations`` passes of the rebate's
    fixed point from ``R = 0`` (one is exact for quasi-linear utility)."""
    rebate = jnp.zeros((), jnp.float32)
    for _ in range(max(int(iterations), 1)):
        if temperature is None:
            hours = exact_hours(skills, rates, cutoffs, params, hour_levels, max_hours, rebate)
        else:
            hours = soft_hours(skills, rates, cutoffs, params, hour_levels, temperature, rebate)
        rebate = jnp.mean(schedule.tax(skills * hours, rates, cutoffs))
    return hours, rebate


def evaluate(rates, skills, cutoffs, params: TaxationParams, hour_levels=None, max_hours: float = 100.0,
             temperature=None, iterations: int = 1) -> dict:
    """``scores`` of ``rates`` against best-responding workers, averaged over the ``E``
    economies of ``skills`` ``[E, N]``: a dict of scalars."""
    skills = jnp.atleast_2d(jnp.asarray(skills, jnp.float32))

    def one(v):
        hours, _ = equilibrium_hours(v, rates, cutoffs, params, hour_levels, max_hours, temperature, iterations)
        return scores(v, hours, rates, cutoffs, params)

    return jax.tree.map(jnp.mean, jax.vmap(one)(skills))


def welfare(rates, skills, cutoffs, params: TaxationParams, hour_levels=None, max_hours: float = 100.0,
            temperature=None, iterations: int = 1):
    """The planner's welfare ``f32[]`` of ``rates`` (mean over economies), exact or
    relaxed; differentiable in ``rates`` when ``temperature`` is given."""
    return evaluate(rates, skills, cutoffs, params, hour_levels, max_hours, temperature, iterations)["welfare"]


def search(candidates, skills, cutoffs, params: TaxationParams, hour_levels=None, max_hours: float = 100.0,
           iterations: int = 1, batch_size: int = 64):
    """Exact welfare ``f32[M]`` of every schedule in ``candidates`` ``[M, B]`` (a grid,
    random draws), ``batch_size`` schedules at a time."""
    fn = lambda r: welfare(r, skills, cutoffs, params, hour_levels, max_hours, None, iterations)  # noqa: E731
    return jax.lax.map(fn, jnp.asarray(candidates, jnp.float32), batch_size=batch_size)


def step_pay(skills, params: TaxationParams, hour_levels=None, max_hours: float = 100.0):
    """Pre-tax pay of one grid step (a tenth of ``max_hours`` when continuous) of the
    median worker, in income units: the scale of the relaxation's temperature."""
    step = (float(hour_levels[1]) - float(hour_levels[0])) if hour_levels is not None else max_hours / 10
    return float(np.median(np.asarray(skills))) * step / float(params.income_unit)


# --------------------------------------------------------------------------- optimiser
class Optimum(NamedTuple):
    """``rates`` ``f32[R, B]`` (each restart's best iterate under the exact objective),
    ``welfare`` ``f32[R]`` (its exact welfare), ``surrogate`` ``f32[S, R]`` (the relaxed
    welfare along the run), ``exact`` ``f32[S, R]`` (the exact welfare of each iterate),
    ``init`` ``f32[R, B]`` (the starting rates)."""

    rates: jax.Array
    welfare: jax.Array
    surrogate: jax.Array
    exact: jax.Array
    init: jax.Array


def _logit(rates):
    r = jnp.clip(jnp.asarray(rates, jnp.float32), 1e-3, 1 - 1e-3)
    return jnp.log(r) - jnp.log1p(-r)


def optimise(key, skills, cutoffs, params: TaxationParams, hour_levels=None, max_hours: float = 100.0, *,
             restarts: int = 8, steps: int = 300, lr: float = 0.05, temperature=(0.3, 0.003), init_rates=None,
             iterations: int = 1) -> Optimum:
    """Maximise the welfare over the rates by gradient ascent through the relaxed best
    response. ``restarts`` random starts (rates uniform in ``[0.05, 0.95]``) plus the
    rows of ``init_rates`` ``[K, B]`` (e.g. the best flat rate, Saez); Adam (``lr``) on
    the logits for ``steps`` steps, the temperature annealed geometrically from
    ``temperature[0] * step_pay`` to ``temperature[1] * step_pay`` (with continuous
    hours the closed-form best response is differentiated instead and the temperature
    is unused). Jitted as one ``scan`` over steps of a ``vmap`` over restarts."""
    skills = jnp.atleast_2d(jnp.asarray(skills, jnp.float32))
    b = int(np.shape(cutoffs)[-1])
    init = jax.random.uniform(key, (restarts, b), jnp.float32, 0.05, 0.95)
    if init_rates is not None:
        init = jnp.concatenate([jnp.atleast_2d(jnp.asarray(init_rates, jnp.float32)), init])
    scale = step_pay(skills, params, hour_levels, max_hours)
    hi, lo = temperature[0] * scale, temperature[1] * scale
    temps = hi * (lo / hi) ** jnp.linspace(0.0, 1.0, steps)
    opt = optax.adam(lr)
    exact_w = lambda r: welfare(r, skills, cutoffs, params, hour_levels, max_hours, None, iterations)  # noqa: E731

    def surrogate(logits, temp):
        t = None if hour_levels is None else temp
        return welfare(jax.nn.sigmoid(logits), skills, cutoffs, params, hour_levels, max_hours, t, iterations)

    def one_step(carry, temp):
        logits, opt_state, best, best_w = carry
        w, g = jax.value_and_grad(surrogate)(logits, temp)
        exact = exact_w(jax.nn.sigmoid(logits))
        better = exact > best_w
        best = jnp.where(better, jax.nn.sigmoid(logits), best)
        best_w = jnp.where(better, exact, best_w)
        updates, opt_state = opt.update(-g, opt_state)  # ascent
        return (optax.apply_updates(logits, updates), opt_state, best, best_w), (w, exact)

    def run(start):
        logits = _logit(start)
        carry = (logits, opt.init(logits), jax.nn.sigmoid(logits), jnp.asarray(-jnp.inf, jnp.float32))
        (logits, _, best, best_w), (sur, ex) = jax.lax.scan(one_step, carry, temps)
        final = exact_w(jax.nn.sigmoid(logits))
        better = final > best_w
        return jnp.where(better, jax.nn.sigmoid(logits), best), jnp.maximum(final, best_w), sur, ex

    rates, w, sur, ex = jax.jit(jax.vmap(run))(init)
    return Optimum(rates, w, sur.T, ex.T, init)


def polish(rates, skills, cutoffs, params: TaxationParams, hour_levels=None, max_hours: float = 100.0,
           step_sizes=(0.02, 0.01, 0.005, 0.002, 0.001), max_moves: int = 50, iterations: int = 1):
    """Coordinate search on the exact welfare from ``rates`` ``[B]``: at each step size,
    move to the best of the ``2B`` neighbours ``rates +- step e_b`` (clipped to
    ``[0, 1]``) while it improves. Returns ``(rates f32[B], welfare f32[])``."""
    rates = jnp.clip(jnp.asarray(rates, jnp.float32), 0.0, 1.0)
    b = rates.shape[0]
    score = jax.jit(jax.vmap(lambda r: welfare(r, skills, cutoffs, params, hour_levels, max_hours, None, iterations)))
    best = float(score(rates[None])[0])
    for h in step_sizes:
        moves = jnp.concatenate([jnp.eye(b), -jnp.eye(b)]) * h
        for _ in range(max_moves):
            cand = jnp.clip(rates[None] + moves, 0.0, 1.0)
            w = np.asarray(score(cand))
            k = int(np.argmax(w))
            if w[k] <= best:
                break
            rates, best = cand[k], float(w[k])
    return rates, jnp.asarray(best, jnp.float32)
