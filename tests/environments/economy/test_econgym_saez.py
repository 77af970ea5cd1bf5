"""EconGym's Saez government (``econgym/saez.py``) against EconGym's own class.

``data/econgym_saez.npz`` holds EconGym's ``SaezGovernment`` (commit d81cd5d) run year by
year on fixed income streams (``econgym_reference/record_saez.py`` writes it; the
command is in its docstring). The replay feeds ours the same incomes, injects EconGym's
random first rates, and checks every year's bracket rates, taxes and elasticity.
"""

from __future__ import annotations

import json
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxagents_environments.economy.econgym import saez

DATA = os.path.join(os.path.dirname(__file__), "data", "econgym_saez.npz")


@pytest.fixture(scope="module")
def ref():
    with np.load(DATA) as d:
        return {k: d[k] for k in d.files}


def replay(ref, name):
    """Our rates, taxes and elasticity ``(f[T, B], f[T, C], f[T])`` for scenario ``name``."""
    cutoffs = jnp.asarray(ref[f"{name}/cutoffs"], jnp.float32)
    period = int(ref[f"{name}/period"])
    xs = (jnp.arange(ref[f"{name}/income"].shape[0]), jnp.asarray(ref[f"{name}/income"], jnp.float32),
          jnp.asarray(ref[f"{name}/alive"]), jnp.asarray(ref[f"{name}/random"]),
          jnp.asarray(ref[f"{name}/rates"], jnp.float32))

    def set_rates(s, random, recorded):
        s = saez.new_rates(jax.random.key(0), s, cutoffs)
        return s.replace(rates=jnp.where(random, recorded, s.rates))  # EconGym's random draw injected

    def year(state, x):
        t, income, alive, random, recorded = x
        state = jax.lax.cond(t % period == 0, set_rates, lambda s, *_: s, state, random, recorded)
        state = saez.push(state, income, saez.marginal_rate(income, state.rates, cutoffs), alive)
        tax = jnp.where(alive, saez.bracket_tax(income, state.rates, cutoffs), 0.0)
        return state, (state.rates, tax, state.elasticity, jnp.sum(state.valid))

    _, out = jax.jit(lambda xs: jax.lax.scan(year, saez.init(cutoffs.shape[0]), xs))(xs)
    return jax.device_get(out)


@pytest.mark.parametrize("name", ["narrow", "spread", "masked", "default"])
def test_saez_government_matches_econgym(ref, name):
    rates, tax, elasticity, filled = replay(ref, name)
    np.testing.assert_array_equal(filled, ref[f"{name}/buffer_len"])
    saez_years = ~ref[f"{name}/random"] & (np.arange(len(filled)) % int(ref[f"{name}/period"]) == 0)
    assert saez_years.sum() >= 2, "the scenario must reach Saez updates"
    np.testing.assert_allclose(rates, ref[f"{name}/rates"], rtol=0, atol=1e-5)  # measured <= 1.4e-6
    np.testing.assert_allclose(elasticity, ref[f"{name}/elasticity"], rtol=0, atol=1e-6)
    scale = np.maximum(np.abs(ref[f"{name}/tax"]), 1.0)
    assert np.max(np.abs(tax - ref[f"{name}/tax"]) / scale) < 5e-5  # measured <= 5.3e-6


def test_elasticity_moves_only_when_rates_vary(ref):
    """The narrow stream's incomes all sit in the first bracket: the fit is skipped and
    the elasticity stays at 0.5; the spread stream's is fitted."""
    assert np.all(ref["narrow/elasticity"] == 0.5)
    assert np.ptp(ref["spread/elasticity"]) > 0.05
    assert json.loads(str(ref["meta"]))["econgym_commit"].startswith("d81cd5d")


def test_bracket_tax_closed_form():
    cutoffs = jnp.asarray([0.0, 10.0, 30.0])
    rates = jnp.asarray([0.1, 0.5, 1.5])  # above 1 counts as 1
    z = jnp.asarray([-5.0, 0.0, 5.0, 10.0, 20.0, 40.0])
    np.testing.assert_allclose(saez.bracket_tax(z, rates, cutoffs), [0, 0, 0.5, 1.0, 6.0, 21.0], rtol=1e-6)
    np.testing.assert_allclose(saez.marginal_rate(z, rates, cutoffs), [0, 0.1, 0.1, 0.5, 0.5, 1.0])
