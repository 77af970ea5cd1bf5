"""The macro economy: equations against closed forms, one step against an independent
numpy implementation (per-buyer rationing), the accounting identities as hypothesis
properties over random params and actions, and the Taylor-rule central bank.

Every env test runs two small economies (N = 7 households, M = 3 firms) side by side
under ``vmap`` (over keys, states, actions and params), so the file compiles one reset
and one step; the property test drives them with host-side actions.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jaxagents_environments.economy.macro import (
    GLOBAL_FEATURES, INFO_KEYS, PRICE_MAX, PRICE_MIN, MacroEconomy, MacroParams, TaylorRule,
    taylor_action, taylor_rate,
)
from jaxagents_environments.economy.macro import dynamics as dyn
from jaxagents_environments.economy.metrics import gini

N, M = 7, 3
ENV = MacroEconomy(N, M)
PARAMS = ENV.default_params()
# Every env test runs two economies side by side (vmap over keys, states, actions and
# params), so the whole file compiles one reset and one step.
_RESET = jax.jit(jax.vmap(ENV.reset))
_STEP = jax.jit(jax.vmap(ENV.step))
G_INFL, G_GROWTH = GLOBAL_FEATURES.index("inflation"), GLOBAL_FEATURES.index("growth")
RESIDUALS = [k for k in INFO_KEYS if k.startswith("residual/")]


def stack(*trees):
    return jax.tree_util.tree_map(lambda *x: jnp.stack([jnp.asarray(v) for v in x]), *trees)


def row(tree, b):
    return jax.tree_util.tree_map(lambda x: np.asarray(x)[b], jax.device_get(tree))


def reset(seed, params_a=PARAMS, params_b=None, same=False):
    """Two economies; ``same=True`` gives both the same key (identical states)."""
    keys = jax.random.split(jax.random.key(seed), 2)
    keys = jnp.stack([keys[0], keys[0]]) if same else keys
    params = stack(params_a, params_a if params_b is None else params_b)
    state, ts = _RESET(keys, params)
    return state, ts, params


def step(seed, state, acts, params, same=False):
    keys = jax.random.split(jax.random.key(seed), 2)
    keys = jnp.stack([keys[0], keys[0]]) if same else keys
    return _STEP(keys, state, acts, params)


def random_acts(seed, scale=1.0, batch=2):
    """Host-side uniform actions in ``[-scale, scale]``, ``{role: f32[batch, n, d]}``."""
    rng = np.random.default_rng(seed)
    return {
        name: (scale * rng.uniform(-1, 1, (batch, r.num_agents) + r.action_space.shape)).astype(np.float32)
        for name, r in ENV.roles.items()
    }


# --------------------------------------------------------------------------- closed forms
def test_hsv_tax_closed_form():
    x = jnp.array([-5.0, 0.0, 0.5, 1.0, 2.0, 10.0])
    # xi = 0 is a flat tax at tau, whatever the unit
    np.testing.assert_allclose(dyn.hsv_tax(x, 0.3, 0.0, 7.0), 0.3 * np.maximum(x, 0), rtol=1e-6, atol=1e-6)
    # progressive: T(x) = x - (1-tau)/(1-xi) s (x/s)^(1-xi), nothing on a non-positive base
    tau, xi, s = 0.25, 0.2, 2.0
    xp = np.maximum(np.asarray(x, np.float64), 0)
    want = xp - (1 - tau) / (1 - xi) * s * (xp / s) ** (1 - xi)
    np.testing.assert_allclose(dyn.hsv_tax(x, tau, xi, s), want, rtol=1e-5, atol=1e-6)
    # tau is the marginal rate at the unit s; transfers below it; post-tax never negative
    marginal = jax.grad(lambda v: dyn.hsv_tax(v, tau, xi, s))(s)
    assert abs(float(marginal) - tau) < 1e-5
    assert float(dyn.hsv_tax(0.1, tau, xi, s)) < 0
    assert np.all(np.asarray(x - dyn.hsv_tax(x, tau, xi, s))[x > 0] >= 0)


def test_production_and_marginal_products():
    z, k, l, p = jnp.array([1.3, 0.7]), jnp.array([50.0, 8.0]), jnp.array([20.0, 30.0]), jnp.array([2.0, 0.5])
    alpha = 0.36
    y, w, r = dyn.production(z, k, l, p, alpha)
    np.testing.assert_allclose(y, z * k**alpha * l ** (1 - alpha), rtol=1e-6)
    # the spec's formulas, and marginal products of the value of output
    np.testing.assert_allclose(w, p * z * (1 - alpha) * (k / l) ** alpha, rtol=1e-5)
    np.testing.assert_allclose(r, p * z * alpha * (k / l) ** (alpha - 1), rtol=1e-5)
    value = lambda kk, ll: jnp.sum(p * z * kk**alpha * ll ** (1 - alpha))
    np.testing.assert_allclose(jax.grad(value, 1)(k, l), w, rtol=1e-5)
    np.testing.assert_allclose(jax.grad(value, 0)(k, l), r, rtol=1e-5)
    np.testing.assert_allclose(w * l + r * k, p * y, rtol=1e-5)  # Euler: factors take all
    y0, w0, _ = dyn.production(z, k, jnp.zeros(2), p, alpha)
    assert np.all(np.asarray(y0) == 0) and np.all(np.asarray(w0) == 0)


_RATION = jax.jit(dyn.ration, static_argnums=4)


@given(st.integers(0, 10**6), st.sampled_from([1, 2, 5]), st.floats(0.0, 6.0), st.floats(0.01, 10.0))
@settings(max_examples=30, deadline=None)
def test_rationing_clears_in_m_rounds(seed, m, elasticity, demand_scale):
    rng = np.random.default_rng(seed)
    price = rng.uniform(0.3, 3.0, m).astype(np.float32)
    supply = (rng.uniform(0.0, 10.0, m) * (rng.uniform(size=m) < 0.8)).astype(np.float32)
    budget = np.float32(demand_scale * np.sum(price * supply) + 1.0)
    fill, sold, left, phi, q = jax.device_get(_RATION(budget, price, supply, np.float32(elasticity), m))
    sold, left = np.asarray(sold, np.float64), np.asarray(left, np.float64)
    assert np.all(left >= 0) and np.all(sold >= 0) and np.all((0 <= fill) & (fill <= 1 + 1e-6))
    np.testing.assert_allclose(sold + left, supply, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.sum(sold * price), phi * budget, rtol=1e-4)  # money
    np.testing.assert_allclose(np.sum(sold), q * budget, rtol=1e-4)  # goods
    # buyers go unserved only when every firm has sold out
    if float(phi) < 1 - 1e-5:
        assert np.all(left <= dyn.RATION_TOL * supply + 1e-6)
    if m == 1:  # closed form: one firm sells min(supply, budget / p)
        np.testing.assert_allclose(sold[0], min(float(supply[0]), float(budget / price[0])), rtol=1e-5)


def test_productivity_process_moments():
    n, rho, sigma = 50_000, 0.9, 0.3

    @jax.jit
    def draw():
        latent, star = dyn.stationary_productivity(jax.random.key(0), n, rho, sigma, 0.1, 0.7)
        return (latent, star) + dyn.productivity_step(jax.random.key(1), latent, star, rho, sigma, 0.1, 0.7)

    latent, star, new_latent, new_star = jax.device_get(draw())
    assert abs(float(np.std(latent)) - sigma / np.sqrt(1 - rho**2)) < 0.02
    assert abs(float(np.mean(star)) - 0.1 / (0.1 + 0.3)) < 0.01  # stationary superstar share
    slope, intercept = np.polyfit(latent, new_latent, 1)
    assert abs(slope - rho) < 0.01 and abs(intercept) < 0.01
    assert abs(float(np.std(new_latent - rho * latent)) - sigma) < 0.01
    assert abs(new_star[star].mean() - 0.7) < 0.015 and abs(new_star[~star].mean() - 0.1) < 0.01
    e = np.asarray(dyn.effective_productivity(new_latent, jnp.asarray(new_star), 504.3))
    mean_normal = np.exp(np.asarray(new_latent))[~new_star].mean()
    np.testing.assert_allclose(e[new_star], 504.3 * mean_normal, rtol=1e-4)
    np.testing.assert_allclose(e[~new_star], np.exp(np.asarray(new_latent))[~new_star], rtol=1e-6)


def test_crra_utility():
    c, h = jnp.array([0.0, 0.5, 2.0]), jnp.array([0.0, 0.4, 1.0])
    labour = 0.5 * (5.0 * h) ** 2 / 2
    np.testing.assert_allclose(
        dyn.crra_utility(c, h, 1.0, 1.0, 0.5, 5.0, 1e-3), np.log(np.maximum(c, 1e-3)) - labour, rtol=1e-6
    )
    np.testing.assert_allclose(
        dyn.crra_utility(c, h, 2.0, 1.0, 0.5, 5.0, 1e-3), -1.0 / np.maximum(c, 1e-3) - labour, rtol=1e-6
    )


# --------------------------------------------------------------------------- one step vs numpy
def _hsv(x, tau, xi, scale):
    xp = np.maximum(x, 0.0)
    s = max(scale, 1e-12)
    return xp - (1 - tau) / (1 - xi) * s * (xp / s) ** (1 - xi)


def _gini(x):
    x = np.maximum(np.asarray(x, np.float64), 0)
    n = x.size
    return np.abs(x[:, None] - x[None, :]).sum() / (2 * n * (n - 1) * x.mean()) if x.sum() > 0 else 0.0


def reference_step(s, acts, p, n, m):
    """One step written independently in float64 numpy, with explicit per-buyer orders."""
    s = {k: np.asarray(v, np.float64) for k, v in vars(s).items() if not k.startswith("_")}
    p = {k: np.asarray(v, np.float64) for k, v in vars(p).items() if not k.startswith("_")}
    u = {k: np.where(np.isfinite(v), np.clip(v, -1, 1), 0.0).astype(np.float64) for k, v in acts.items()}
    unit = lambda x: (x + 1) / 2
    save = p["save_min"] + unit(u["household"][:, 0]) * (1 - p["save_min"])
    hours_share = unit(u["household"][:, 1])
    price = np.clip(s["price"] * np.exp(p["price_step"] * u["firm"][:, 0]), PRICE_MIN, PRICE_MAX)
    invest = unit(u["firm"][:, 1]) * p["invest_max"]
    i = p["policy_rate_min"] + unit(u["central_bank"][0, 0]) * (p["policy_rate_max"] - p["policy_rate_min"])
    rr = unit(u["central_bank"][0, 1]) * p["reserve_ratio_max"]
    r_l = i + p["lending_spread_min"] + unit(u["bank"][0, 0]) * (p["lending_spread_max"] - p["lending_spread_min"])
    r_d = i - unit(u["bank"][0, 1]) * p["deposit_spread_max"]
    tau, xi, tau_a, xi_a, g = unit(u["government"][0]) * np.array(
        [p["tau_max"], p["xi_max"], p["tau_a_max"], p["xi_a_max"], p["spending_max"]])
    a, debt, e = s["assets"], s["loans"], s["productivity"]
    employer = np.arange(n) % m
    eff = e * hours_share * p["h_max"]
    L = np.array([eff[employer == j].sum() for j in range(m)])
    Y = s["tfp"] * s["capital"] ** p["alpha"] * L ** (1 - p["alpha"])
    with np.errstate(divide="ignore", invalid="ignore"):  # a firm without workers pays no wage
        W = np.where(L > 0, price * s["tfp"] * (1 - p["alpha"]) * (s["capital"] / L) ** p["alpha"], 0.0)
    wage_income = eff * W[employer]
    hh_int = np.where(a >= 0, r_d, r_l) * a
    firm_int = np.where(debt >= 0, r_l, r_d) * debt
    deposits = a[a > 0].sum() - debt[debt < 0].sum()
    bank_loans = -a[a < 0].sum() + debt[debt > 0].sum()
    res_income = i * (s["reserves"] - rr * deposits) - p["reserve_penalty"] * max(rr * deposits - s["reserves"], 0)
    div_f = np.maximum(s["profit"], 0)
    div_b = max(s["bank_equity"] - p["bank_capital_ratio"] * bank_loans, 0)
    owned = np.maximum(a, 0)
    dividends = (div_f.sum() + div_b) * owned / owned.sum()
    y = wage_income + hh_int + dividends
    Ty = _hsv(y, tau, xi, np.maximum(y, 0).mean())
    Ta = _hsv(a, tau_a, xi_a, np.maximum(a, 0).mean())
    y_post, a_post = y - Ty, a - Ta
    cash = a_post + y_post + p["borrow_limit"] * s["nominal_gdp"] / n
    x = np.minimum(np.maximum((1 - save) * np.maximum(y_post, 0), 0), np.maximum(cash, 0))
    tc = p["consumption_tax"]
    budgets = np.concatenate([x / (1 + tc), [g * np.sum(price * Y)], invest * price * Y])  # buyers
    supply = Y + s["inventory"]
    left, spent, goods, sold = supply.copy(), np.zeros(budgets.size), np.zeros(budgets.size), np.zeros(m)
    for _ in range(m):  # each buyer orders from the firms that have goods, every firm serves pro rata
        open_ = left > 1e-6 * supply
        if not open_.any():
            break
        w = np.where(open_, price ** -p["price_elasticity"], 0.0)
        w = w / w.sum()
        orders = (budgets - spent)[:, None] * w[None, :] / price[None, :]  # [buyers, firms]
        asked = orders.sum(0)
        frac = np.where(asked >= left, left / np.maximum(asked, 1e-300), 1.0)
        got = orders * frac[None, :]
        goods += got.sum(1)
        spent += (got * price[None, :]).sum(1)
        sold += got.sum(0)
        left = np.where(asked >= left, 0.0, left - got.sum(0))
    served = spent / np.where(budgets > 0, budgets, 1.0)
    assert np.ptp(served[budgets > 0]) < 1e-9, "every buyer is served the same fraction"
    hh_paid = spent[:n] * (1 + tc)
    taxes = Ty.sum() + Ta.sum() + tc * spent[:n].sum()
    new_loans = debt + div_f + W * L + firm_int + spent[n + 1:] - price * sold
    capital = (1 - p["delta"]) * s["capital"] + goods[n + 1:]
    write_off = np.maximum(new_loans - price * (capital + left), 0)
    bank_profit = firm_int.sum() - hh_int.sum() + res_income - write_off.sum()
    profit = price * sold - W * L - firm_int - p["delta"] * price * s["capital"]
    consumption = goods[:n]
    utility = np.log(np.maximum(consumption, p["c_floor"])) - p["labour_weight"] * (
        p["labour_scale"] * hours_share) ** (1 + p["frisch"]) / (1 + p["frisch"])
    real_gdp = Y.sum()
    P = np.sum(price * Y) / real_gdp
    inflation, growth = P / s["price_index"] - 1, real_gdp / s["real_gdp"] - 1
    g_pre_y, g_post_y, g_pre_a, g_post_a = (_gini(v) for v in (y, y_post, a, a_post))
    rel = lambda pre, post: (pre - post) / pre if pre > 0 else 0.0
    reduction = 0.5 * (rel(g_pre_y, g_post_y) + rel(g_pre_a, g_post_a))
    if p["gov_weights"][1] == 0:  # Ginis are not computed: reported as -1
        g_post_y = g_post_a = -1.0
    gw = p["gov_weights"]
    return dict(
        assets=a_post + y_post - hh_paid, loans=new_loans - write_off, capital=capital, inventory=left,
        price=price, bank_equity=s["bank_equity"] - div_b + bank_profit,
        reserves=s["reserves"] + spent[n] - taxes + res_income, gov_debt=s["gov_debt"] + spent[n] - taxes + res_income,
        consumption=consumption, income=y, profit=profit, wage=W, price_index=P, tax_revenue=taxes,
        gini_income=g_post_y, gini_wealth=g_post_a,
        reward_household=utility, reward_firm=profit / (s["nominal_gdp"] / m),
        reward_bank=bank_profit / s["nominal_gdp"],
        reward_government=gw[0] * growth + gw[1] * reduction + gw[2] * utility.mean(),
        reward_central_bank=np.exp(-p["inflation_weight"] * (inflation - p["inflation_target"]) ** 2
                                   - p["growth_weight"] * (growth - p["growth_target"]) ** 2),
    )


REF_PARAMS = MacroParams.make(
    consumption_tax=0.1, borrow_limit=0.5, price_elasticity=3.0, gov_weights=[0.5, 1.0, 0.2],
    reserve_penalty=0.03, save_min=-1.0, p_star=0.2, q_star=0.8, star_multiple=20.0,
)


@pytest.mark.parametrize("case", ["random", "rationed", "out_of_range"])
def test_step_matches_independent_numpy_step(case):
    state, _, params = reset(3, REF_PARAMS, PARAMS)
    for t in range(4):  # a few steps in, so that inventories, dividends and prices vary
        state, _ = step(10 + t, state, random_acts(20 + t), params)
    acts = random_acts(99, scale=3.0 if case == "out_of_range" else 1.0)
    if case == "rationed":  # households spend everything, government and firms buy a lot
        acts["household"][:, :, 0] = -1.0
        acts["government"][:, 0, 4] = 1.0
        acts["firm"][:, :, 1] = 1.0
    if case == "out_of_range":
        acts["bank"][:, 0, 0] = np.nan
    new, ts = step(7, state, acts, params)
    for b in range(2):
        ref = reference_step(row(state, b), row(acts, b), row(params, b), N, M)
        for k, want in ref.items():
            got = ts.reward[k[len("reward_"):]][b] if k.startswith("reward_") else getattr(new, k)[b]
            np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=2e-4, atol=1e-3, err_msg=k)
        if case == "rationed":
            assert float(new.spent_fraction[b]) < 1 and np.all(np.asarray(new.inventory[b]) == 0)
        assert bool(ts.info["illegal_action"][b]) == (case == "out_of_range")


def test_out_of_range_actions_are_clipped():
    state, _, params = reset(0, same=True)
    wide = random_acts(1, scale=4.0, batch=1)
    acts = {k: np.concatenate([v, np.clip(v, -1, 1)]) for k, v in wide.items()}
    _, ts = step(2, state, acts, params, same=True)
    for tree in (ts.obs, ts.reward):
        jax.tree_util.tree_map(lambda x: np.testing.assert_allclose(x[0], x[1], rtol=1e-6), tree)
    assert bool(ts.info["illegal_action"][0]) and not bool(ts.info["illegal_action"][1])


# --------------------------------------------------------------------------- identities (property)
ROLLOUT_STEPS = 12


def rollout(seed, params, scale, corners, nan_rate):
    """Random-action rollouts of two economies; host-side actions (no extra compile)."""
    rng = np.random.default_rng(seed)
    state, ts0, params = reset(seed, *params)
    states, steps = [], []
    for t in range(ROLLOUT_STEPS):
        acts = random_acts(rng.integers(2**31), scale)
        for a in acts.values():
            if corners:
                a[...] = np.sign(a)
            a[rng.uniform(size=a.shape) < nan_rate] = np.nan
        state, ts = step(seed + t, state, acts, params)
        states.append(state)
        steps.append(ts)
    over_time = lambda trees: jax.tree_util.tree_map(lambda *x: np.stack(x), *jax.device_get(trees))
    return jax.device_get(ts0), (over_time(states), over_time(steps))


_PARAM_RANGES = {
    "crra": (0.5, 3.0), "consumption_tax": (0.0, 0.3), "borrow_limit": (0.0, 1.0), "save_min": (-1.0, 0.0),
    "price_elasticity": (0.0, 6.0), "price_step": (0.0, 0.5), "invest_max": (0.0, 1.0), "delta": (0.0, 0.2),
    "alpha": (0.2, 0.6), "sigma_e": (0.0, 0.6), "p_star": (0.0, 0.3), "tau_max": (0.0, 1.0), "xi_max": (0.0, 0.8),
    "tau_a_max": (0.0, 0.2), "xi_a_max": (0.0, 0.5), "spending_max": (0.0, 1.0), "reserve_penalty": (0.0, 0.1),
    "bank_capital_ratio": (0.0, 0.5), "init_gov_debt": (0.0, 2.0), "init_capital_output": (0.5, 6.0),
}


@st.composite
def macro_params(draw):
    values = {k: draw(st.floats(lo, hi)) for k, (lo, hi) in _PARAM_RANGES.items()}
    values["gov_weights"] = [draw(st.floats(-1, 1)), draw(st.sampled_from([0.0, 1.0])), draw(st.floats(-1, 1))]
    values["init_fiscal"] = [0.0, 0.0, 0.0, 0.0, 0.0]
    return MacroParams.make(**values)


@given(macro_params(), macro_params(), st.integers(0, 2**20), st.sampled_from([1.0, 3.0]), st.booleans(),
       st.sampled_from([0.0, 0.05]))
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_accounting_identities_hold_every_step(params_a, params_b, seed, scale, corners, nan_rate):
    """Two economies with different params side by side (``vmap`` over params)."""
    for params in (params_a, params_b):
        ENV.validate_params(params)
    ts0, (states, ts) = rollout(seed, (params_a, params_b), scale, corners, nan_rate)
    for k in RESIDUALS:  # money, bank and central-bank balance sheets, goods, wages, sales
        assert np.all(np.abs(ts0.info[k]) < 1e-5), k
        assert np.all(np.abs(ts.info[k]) < 1e-4), (k, np.abs(ts.info[k]).max())
    for leaf in jax.tree_util.tree_leaves((ts.obs, ts.reward, ts.info, states)):
        if np.issubdtype(np.asarray(leaf).dtype, np.floating):
            assert np.all(np.isfinite(leaf))
    assert np.all(states.inventory >= 0) and np.all(states.capital > 0) and np.all(states.consumption >= 0)
    assert np.all((states.price >= PRICE_MIN) & (states.price <= PRICE_MAX))
    assert np.all((states.spent_fraction >= 0) & (states.spent_fraction <= 1 + 1e-6))
    assert np.all((states.fill >= 0) & (states.fill <= 1 + 1e-6))
    # unserved budgets only when every firm sold out
    short = states.spent_fraction < 1 - 1e-4
    assert np.all(states.inventory[short] <= 1e-5 * (states.output[short] + 1))
    assert ts.info["illegal_action"].any() == ((scale > 1 and not corners) or nan_rate > 0)
    for b, p in enumerate((params_a, params_b)):
        gini_income = ts.info["gini_income"][:, b]
        if float(p.gov_weights[1]) == 0:
            assert np.all(gini_income == -1)
        else:
            assert np.all((gini_income >= 0) & (gini_income <= 1))


# --------------------------------------------------------------------------- rewards and info
def test_flat_tax_leaves_gini_unchanged_and_progressive_tax_reduces_it():
    params = MacroParams.make(gov_weights=[0.0, 1.0, 0.0])
    state, _, params = reset(5, params, same=True)
    acts = random_acts(6, batch=1)
    acts = {k: np.concatenate([v, v]) for k, v in acts.items()}
    acts["government"][0, 0] = [0.0, -1.0, -1.0, -1.0, 0.0]  # flat: xi = tau_a = xi_a = 0
    acts["government"][1, 0] = [0.0, 1.0, 1.0, 1.0, 0.0]  # progressive income and asset taxes
    new, ts = step(7, state, acts, params, same=True)
    assert abs(float(ts.reward["government"][0, 0])) < 1e-5
    pre_tax = np.maximum(np.asarray(new.income[0]), 0)  # a flat tax scales incomes: same Gini
    np.testing.assert_allclose(float(ts.info["gini_income"][0]), float(gini(jnp.asarray(pre_tax))), atol=1e-5)
    assert float(ts.reward["government"][1, 0]) > 0.01
    assert float(ts.info["gini_income"][1]) < float(ts.info["gini_income"][0])


def test_info_and_observations_are_consistent():
    state, ts0, params = reset(8)
    assert set(ts0.info) == set(INFO_KEYS)
    new, ts = step(9, state, random_acts(10), params)
    assert jax.tree_util.tree_structure(ts.info) == jax.tree_util.tree_structure(ts0.info)
    for name, role in ENV.roles.items():
        assert role.observation_space.check(ts.obs[name], (2, role.num_agents)) is None
        inflation = np.broadcast_to(np.asarray(new.inflation)[:, None], (2, role.num_agents))
        np.testing.assert_allclose(ts.obs[name][:, :, G_INFL], inflation, rtol=1e-6)
    np.testing.assert_allclose(ts.info["real_gdp"], np.sum(np.asarray(new.output), -1), rtol=1e-6)
    assert ENV.global_obs_shape == (len(GLOBAL_FEATURES) + 9 * M + 4 + 3,)
    assert all(float(np.abs(ts0.reward[k]).sum()) == 0 for k in ENV.roles)


def test_horizon_truncates_and_stepping_on_stays_finite():
    state, ts, params = reset(0, MacroParams.make(horizon=3), MacroParams.make(horizon=4))
    flags = []
    for t in range(5):
        state, ts = step(t, state, random_acts(t), params)
        flags.append((tuple(np.asarray(ts.truncated)), tuple(np.asarray(ts.terminated))))
        assert all(np.isfinite(np.asarray(v)).all() for v in ts.obs.values())
    assert [f[0] for f in flags] == [(False, False), (False, False), (True, False), (True, True), (True, True)]
    assert not any(any(f[1]) for f in flags)


# --------------------------------------------------------------------------- validation
@pytest.mark.parametrize("field, value, match", [
    ("tau_max", 1.5, r"tau_max.*\[0.0, 1.0\]"),
    ("xi_max", 1.0, r"xi_max"),
    ("policy_rate_min", 0.2, r"policy_rate_min must be <= params.policy_rate_max"),
    ("rho_e", 1.0, r"rho_e"),
    ("horizon", 0, r"horizon"),
    ("gov_weights", [1.0, 0.0], r"gov_weights must have shape \(3,\)"),
    ("init_fiscal", [0.9, 0.0, 0.0, 0.0, 0.0], r"init_fiscal"),
    ("alpha", float("nan"), r"alpha must be finite"),
])
def test_invalid_params_raise_before_compiling(field, value, match):
    with pytest.raises(ValueError, match=match):
        ENV.validate_params(MacroParams.make(**{field: value}))
    with pytest.raises(ValueError, match="unknown MacroParams fields"):
        MacroParams.make(no_such_field=1.0)


@pytest.mark.parametrize("kwargs, match", [
    ({"num_households": 0}, "num_households"), ({"num_households": 2.5}, "num_households"),
    ({"num_households": 4, "num_firms": 5}, "num_firms"), ({"num_firms": 0}, "num_firms"),
])
def test_invalid_sizes_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        MacroEconomy(**kwargs)


# --------------------------------------------------------------------------- Taylor rule
def test_taylor_rate_is_more_than_one_for_one_in_inflation():
    rule = TaylorRule()
    base = taylor_rate(0.02, 0.0, rule)
    assert abs(float(base) - 0.04) < 1e-7  # r* + pi* at target
    # the Taylor principle: +1 point of inflation -> +1.5 points of rate
    np.testing.assert_allclose(taylor_rate(0.03, 0.0, rule) - base, 0.015, rtol=1e-5)
    np.testing.assert_allclose(taylor_rate(0.02, 0.01, rule) - base, 0.005, rtol=1e-5)
    custom = TaylorRule(inflation_coef=1.0, growth_coef=0.0)
    np.testing.assert_allclose(taylor_rate(0.05, 0.3, custom) - taylor_rate(0.02, 0.0, custom), 0.06, rtol=1e-5)


def test_taylor_central_bank_sets_the_rule_rate_in_the_env():
    state, ts, params = reset(4)
    for t in range(6):
        obs = np.asarray(ts.obs["central_bank"])  # [2, 1, d]
        want = np.clip(np.asarray(taylor_rate(obs[:, 0, G_INFL], obs[:, 0, G_GROWTH])), -0.02, 0.10)
        acts = random_acts(t)
        acts["central_bank"] = np.asarray(taylor_action(obs, PARAMS))
        state, ts = step(t, state, acts, params)
        np.testing.assert_allclose(np.asarray(state.policy[:, 0]), want, atol=1e-6)
        np.testing.assert_allclose(np.asarray(state.policy[:, 1]), 0.08, atol=1e-6)
    # rising inflation raises the rate, and the bounds of the env hold
    fake = np.zeros((3, len(GLOBAL_FEATURES)), np.float32)
    fake[:, G_INFL] = [-0.5, 0.03, 0.5]
    a = np.asarray(taylor_action(fake, PARAMS))
    assert a[0, 0] == -1.0 and a[2, 0] == 1.0 and -1 < a[1, 0] < 1
    fake[:, G_INFL] = [0.0, 0.02, 0.04]
    assert np.all(np.diff(np.asarray(taylor_action(fake, PARAMS))[:, 0]) > 0)
