"""Overlapping generations: ageing, mortality, estates and births, on fixed slots.

EconGym deletes the rows of the households that die and appends rows for the newborn;
here the population lives in ``C`` slots with an ``alive`` mask (shapes stay static
under ``jit``): a death frees a slot, a birth fills the lowest free slot, and births
beyond the free slots are dropped and counted. ``estates="econgym"`` (the default)
settles estates by EconGym's ``OLG_step`` rules, accounting leaks included (commit
d81cd5d):

* the estate is the start-of-year wealth of the first ``k`` households in its arrays
  (``k`` the number of deaths), whoever died;
* the estate tax is added to every household's tax bill (so the government collects
  it ``N`` times) and, until someone else dies, again every later year
  (``society_step`` carries it in ``SocietyState.estate_tax``);
* with births the newborn share the estates; with none, ``estates / N`` is added to
  the survivors' start-of-year wealth, which the next year overwrites: only the
  bank's books of the year (and stock holdings) keep it.

``estates="conserving"`` (ours, a named variant) closes those leaks: the estate is the
deceased's own end-of-year wealth, taxed once, and without births it goes to the
survivors' end-of-year wealth.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxagents.core.rng import uniforms

# Mortality a year by age band (US life table, as EconGym): ages below each bound
AGE_BOUNDS = (1.0, 5.0, 15.0, 25.0, 35.0, 45.0, 55.0, 65.0, 75.0, 85.0)
DEATH_RATES = (0.0056, 28.0e-5, 15.3e-5, 79.5e-5, 163.4e-5, 255.4e-5, 453.3e-5, 992.1e-5, 1978.7e-5,
               4708.2e-5, 14389.6e-5)


def death_probability(age):
    """Probability of dying within the year at ``age`` (``f32`` like ``age``)."""
    band = jnp.sum(age[..., None] >= jnp.asarray(AGE_BOUNDS, jnp.float32), axis=-1)
    return jnp.asarray(DEATH_RATES, jnp.float32)[band]


def older(age, alive):
    """Everyone alive a year older (``f32[C]``); empty slots keep their age."""
    return jnp.where(alive, age + 1.0, age)


def estate(wealth, exemption, rate):
    """``(inherited, tax)`` of an estate: wealth above ``exemption`` is taxed at ``rate``."""
    inherited = jnp.where(wealth <= exemption, wealth, exemption + (wealth - exemption) * (1.0 - rate))
    return inherited, wealth - inherited


def step(key, h, params, stock_price, rng="hash", estates="econgym", start_assets=None):
    """Age everyone a year, draw deaths, settle estates and add the newborn.

    EconGym ages every household at every step; deaths and births start in the
    second year (``society_step`` applies only :func:`older` in the first).

    ``h``: a dict of household arrays ``[C]`` with at least ``alive``, ``age``,
    ``assets`` (end-of-year wealth), ``stock``, ``e_normal``, ``e_star`` and optionally
    ``order`` (``i32``: each household's row in EconGym's arrays, whose first rows its
    estate rule reads; newborns get the next ones); every other
    entry is reset to 0 in a newborn's slot; ``rng`` as in ``jaxagents.core.rng``.
    ``estates``: ``econgym`` (EconGym's rules, from ``start_assets`` ``f32[C]``, the
    start-of-year wealth) or ``conserving`` (ours: module docstring). Returns ``(h,
    flows)`` with flows ``deaths``, ``births``, ``births_dropped``, ``estate_tax``,
    ``inherited`` and ``bank_inherited`` (the estates the bank counts among this year's
    start-of-year deposits) (``f32[]``) and ``died`` (``bool[C]``).
    """
    alive = h["alive"]
    c = alive.shape[0]
    u = uniforms(key, (2, c), rng)
    n_before = jnp.sum(alive)
    age = older(h["age"], alive)
    dies = alive & ((u[0] < death_probability(age)) | (age >= params.max_age))
    n_dead = jnp.sum(dies)
    if estates == "econgym":
        # EconGym taxes the start-of-year wealth of its first `n_dead` rows, whoever
        # died (rows by `order`, else the alive slots in slot order)
        if "order" in h:  # EconGym's row order: survivors in order, the newborn appended
            rank = jnp.zeros((c,), jnp.int32).at[jnp.argsort(jnp.where(alive, h["order"], jnp.iinfo(jnp.int32).max))
                                               ].set(jnp.arange(c, dtype=jnp.int32))
            first_rows = alive & (rank < n_dead)
        else:
            first_rows = alive & (jnp.cumsum(alive.astype(jnp.int32)) <= n_dead)
        inherited_i, tax_i = estate(start_assets, params.estate_exemption, params.estate_tax)
        inherited = jnp.sum(jnp.where(first_rows, inherited_i, 0.0))
        estate_tax = jnp.sum(jnp.where(first_rows, start_assets - inherited_i, 0.0))
    else:
        inherited_i, tax_i = estate(h["assets"], params.estate_exemption, params.estate_tax)
        inherited = jnp.sum(jnp.where(dies, inherited_i, 0.0))
        estate_tax = jnp.sum(jnp.where(dies, tax_i, 0.0))
    stock_value = jnp.sum(jnp.where(dies, h["stock"], 0.0)) * stock_price
    survivors = alive & ~dies
    n_survivors = jnp.sum(survivors)
    wanted = jnp.floor(n_before.astype(jnp.float32) * params.birth_rate).astype(jnp.int32)

    # newborn slots: the lowest free ones, at most `wanted`
    newborn = ~survivors & (jnp.cumsum((~survivors).astype(jnp.int32)) <= wanted)
    births = jnp.sum(newborn)
    share = jnp.where(births > 0, inherited / jnp.maximum(births, 1), 0.0)
    stock_share = jnp.where((inherited > 0) & (stock_price > 0), stock_value / jnp.where(inherited > 0, inherited, 1.0), 0.0)
    # a newborn copies the productivity of a random survivor
    def draw_parents():
        rank = jnp.minimum((u[1] * n_survivors).astype(jnp.int32), jnp.maximum(n_survivors - 1, 0))
        return jnp.clip(jnp.searchsorted(jnp.cumsum(survivors.astype(jnp.int32)), rank + 1), 0, c - 1)

    parent = jax.lax.cond(births > 0, draw_parents, lambda: jnp.arange(c, dtype=jnp.int32))

    out = {}
    for name, x in h.items():
        out[name] = jnp.where(newborn, jnp.zeros_like(x), x)
    out["alive"] = survivors | newborn
    if "order" in h:  # the newborn take the next row numbers, in slot order
        last = jnp.max(jnp.where(survivors, h["order"], -1))
        out["order"] = jnp.where(newborn, last + jnp.cumsum(newborn.astype(jnp.int32)), h["order"])
    out["age"] = jnp.where(newborn, params.initial_working_age, age)
    if estates == "econgym":
        # without births EconGym adds inherited / N (N before the deaths) to the
        # survivors' start-of-year wealth, which the next year overwrites: only the
        # bank's books and the stock holdings keep it
        bequest = jnp.where(births > 0, 0.0, inherited / jnp.maximum(n_before, 1))
        bank_inherited = jnp.where(births > 0, inherited, bequest * n_survivors)
        stock_bequest = bequest
        bequest = 0.0
    else:
        bequest = jnp.where(births > 0, 0.0, jnp.where(n_survivors > 0, inherited / jnp.maximum(n_survivors, 1), 0.0))
        bank_inherited = jnp.zeros((), jnp.float32)  # the bank settles the deceased's own deposits
        stock_bequest = bequest
    out["assets"] = jnp.where(newborn, share, jnp.where(survivors, h["assets"] + bequest, h["assets"]))
    out["stock"] = jnp.where(newborn, share * stock_share / stock_price,
                             jnp.where(survivors, h["stock"] + stock_bequest * stock_share / stock_price, h["stock"]))
    out["e_normal"] = jnp.where(newborn, h["e_normal"][parent], h["e_normal"])
    out["e_star"] = jnp.where(newborn, h["e_star"][parent], h["e_star"])
    if "e" in h:
        out["e"] = jnp.where(newborn, h["e_normal"][parent] + h["e_star"][parent], h["e"])
    flows = {
        "deaths": n_dead.astype(jnp.float32), "births": births.astype(jnp.float32),
        "births_dropped": (wanted - births).astype(jnp.float32), "estate_tax": estate_tax, "inherited": inherited,
        "bank_inherited": bank_inherited, "died": dies,
    }
    return out, flows
