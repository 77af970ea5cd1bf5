"""Parameters and state of the macro economy.

``MacroParams`` holds everything a user may sweep (a population of economies is a
``vmap`` over it); ``check_params`` validates it on the host. ``MacroState`` holds the
stocks (balance sheets, capital, inventories) and what the agents observe of the last
step. Shapes: ``N`` households, ``M`` firms.
"""

from __future__ import annotations

import jax
import numpy as np
from flax import struct

from jaxagents_environments.economy.defaults import from_defaults


DEFAULTS: dict[str, float | list[float] | int] = {
    # households
    "h_max": 2512.0,
    "rho_e": 0.982,
    "sigma_e": 0.2,
    "p_star": 2.2e-6,
    "q_star": 0.99,
    "star_multiple": 504.3,
    "crra": 1.0,
    "frisch": 1.0,
    "labour_weight": 0.5,
    "labour_scale": 5.0,
    "c_floor": 1e-3,
    "save_min": -0.5,
    "borrow_limit": 0.0,
    "consumption_tax": 0.0,
    # firms
    "alpha": 0.36,
    "delta": 0.06,
    "tfp_mean": 1.0,
    "rho_z": 0.95,
    "sigma_z": 0.01,
    "price_step": 0.1,
    "invest_max": 0.5,
    "price_elasticity": 2.0,
    # bank
    "lending_spread_min": 0.01,
    "lending_spread_max": 0.03,
    "deposit_spread_max": 0.01,
    "reserve_penalty": 0.0,
    "bank_capital_ratio": 0.1,
    # government
    "tau_max": 0.6,
    "xi_max": 0.4,
    "tau_a_max": 0.05,
    "xi_a_max": 0.05,
    "spending_max": 0.5,
    "gov_weights": [1.0, 0.0, 0.0],
    # central bank
    "policy_rate_min": -0.02,
    "policy_rate_max": 0.10,
    "reserve_ratio_max": 0.2,
    "inflation_target": 0.02,
    "growth_target": 0.0,
    "inflation_weight": 900.0,
    "growth_weight": 300.0,
    # initial economy
    "init_labour": 1.0 / 3.0,
    "init_capital_output": 3.0,
    "init_price": 1.0,
    "init_gov_debt": 0.5,
    "init_policy_rate": 0.03,
    "init_reserve_ratio": 0.08,
    "init_fiscal": [0.263, 0.049, 0.0, 0.0, 0.189],
    "horizon": 100,
}
"""Default value of every ``MacroParams`` field (the spec's and EconGym's values)."""


@struct.dataclass
class MacroParams:
    """All scalars ``f32[]`` unless noted; defaults in ``DEFAULTS`` (the spec's and
    EconGym's), ranges as ``check_params`` enforces them (every entry finite).

    Attributes:
        h_max: hours a year a household can work, in (0, inf).
        rho_e: persistence of log productivity (log-AR(1)), in [0, 1).
        sigma_e: standard deviation of the log-productivity shock, in [0, 2].
        p_star: yearly probability that a household becomes a superstar, in [0, 1].
        q_star: yearly probability that a superstar stays one, in [0, 1].
        star_multiple: a superstar's productivity as a multiple of the mean productivity
            of the normal households, in [0, 10000].
        crra: relative risk aversion ``sigma`` of ``u = c^(1-sigma)/(1-sigma) - alpha
            (beta h/h_max)^(1+phi)/(1+phi)`` (log at 1), in (0, 10].
        frisch: curvature ``phi`` of the disutility of work in ``u`` (inverse Frisch
            elasticity), in [0, 10].
        labour_weight: weight ``alpha`` of the disutility of work in ``u``, in [0, inf).
        labour_scale: scale ``beta`` of the hours share in the disutility of work, in
            [0, inf).
        c_floor: consumption is floored at this in the utility (keeps ``u`` finite), in
            (0, inf).
        save_min: lowest savings share of the household's action (negative: spending out
            of assets), in [-10, 1).
        borrow_limit: debt a household may run, in units of last step's nominal GDP per
            household, in [0, 100].
        consumption_tax: tax rate ``tau_c`` on consumption spending, in [0, 10].
        alpha: capital share of production, in (0, 1).
        delta: capital's depreciation rate a year, in [0, 1].
        tfp_mean: mean TFP: ``log Z_j`` reverts to ``log tfp_mean`` (AR(1)), in (0, inf).
        rho_z: persistence of log TFP (AR(1)), in [0, 1).
        sigma_z: standard deviation of the log-TFP shock, in [0, 1].
        price_step: largest log price change a step of a firm's action, in [0, 1].
        invest_max: largest investment spending of a firm's action, as a share of the
            value of its output, in [0, 10].
        price_elasticity: buyers split their spending across firms with weights
            ``p_j^-price_elasticity``, in [0, 50].
        lending_spread_min: lowest spread of the lending rate over the policy rate (<=
            ``lending_spread_max``), in [0, 1].
        lending_spread_max: highest spread of the lending rate over the policy rate, in
            [0, 1].
        deposit_spread_max: highest spread of the deposit rate below the policy rate
            (the lowest is 0), in [0, 1].
        reserve_penalty: extra rate over the policy rate the bank pays on a reserve
            shortfall, in [0, 1].
        bank_capital_ratio: the bank starts with and keeps equity of this share of its
            loans, paying out the excess as dividends, in [0, 1).
        tau_max: upper end of the government's ``tau`` action (HSV income-tax level), in
            [0, 1].
        xi_max: upper end of the government's ``xi`` action (HSV income-tax
            progressivity), in [0, 1).
        tau_a_max: upper end of the government's ``tau_a`` action (HSV asset-tax level),
            in [0, 1].
        xi_a_max: upper end of the government's ``xi_a`` action (HSV asset-tax
            progressivity), in [0, 1).
        spending_max: upper end of the government's spending action, ``G`` as a share of
            nominal output, in [0, 1].
        gov_weights: ``f32[3]`` weights of the government's reward on real GDP growth,
            Gini reduction and mean household utility (finite; Ginis are computed only when
            the second is not 0).
        policy_rate_min: lower end of the central bank's policy-rate action (<=
            ``policy_rate_max``), in [-0.5, 1].
        policy_rate_max: upper end of the central bank's policy-rate action, in [-0.5,
            1].
        reserve_ratio_max: upper end of the central bank's reserve-ratio action (the
            lower end is 0), in [0, 1].
        inflation_target: ``pi*`` of the central bank's reward ``exp(-inflation_weight
            (pi - pi*)^2 - growth_weight (g - g*)^2)``, in [-1, 1].
        growth_target: ``g*`` of the central bank's reward, in [-1, 1].
        inflation_weight: weight of the inflation gap in the central bank's reward, in
            [0, inf).
        growth_weight: weight of the growth gap in the central bank's reward, in [0,
            inf).
        init_labour: hours share used to size the initial capital, in (0, 1].
        init_capital_output: initial capital over output ``K/Y``, in (0, 100].
        init_price: initial price of every firm, in (0, inf).
        init_gov_debt: initial government debt, as a multiple of nominal GDP, in [0,
            10].
        init_policy_rate: policy rate at reset (within the policy-rate action range), in
            [-0.5, 1].
        init_reserve_ratio: reserve ratio at reset (<= ``reserve_ratio_max``), in [0,
            1].
        init_fiscal: ``f32[5]`` ``(tau, xi, tau_a, xi_a, G/Y)`` in force before the
            first step, each at most its ``*_max``, in [0, 1].
        horizon: ``i32[]`` steps (years) before the episode is truncated, >= 1.
    """

    # households
    h_max: jax.Array
    rho_e: jax.Array
    sigma_e: jax.Array
    p_star: jax.Array
    q_star: jax.Array
    star_multiple: jax.Array
    crra: jax.Array
    frisch: jax.Array
    labour_weight: jax.Array
    labour_scale: jax.Array
    c_floor: jax.Array
    save_min: jax.Array
    borrow_limit: jax.Array
    consumption_tax: jax.Array
    # firms
    alpha: jax.Array
    delta: jax.Array
    tfp_mean: jax.Array
    rho_z: jax.Array
    sigma_z: jax.Array
    price_step: jax.Array
    invest_max: jax.Array
    price_elasticity: jax.Array
    # bank
    lending_spread_min: jax.Array
    lending_spread_max: jax.Array
    deposit_spread_max: jax.Array
    reserve_penalty: jax.Array
    bank_capital_ratio: jax.Array
    # government
    tau_max: jax.Array
    xi_max: jax.Array
    tau_a_max: jax.Array
    xi_a_max: jax.Array
    spending_max: jax.Array
    gov_weights: jax.Array
    # central bank
    policy_rate_min: jax.Array
    policy_rate_max: jax.Array
    reserve_ratio_max: jax.Array
    inflation_target: jax.Array
    growth_target: jax.Array
    inflation_weight: jax.Array
    growth_weight: jax.Array
    # initial economy
    init_labour: jax.Array
    init_capital_output: jax.Array
    init_price: jax.Array
    init_gov_debt: jax.Array
    init_policy_rate: jax.Array
    init_reserve_ratio: jax.Array
    init_fiscal: jax.Array
    horizon: jax.Array

    @classmethod
    def make(cls, **overrides) -> "MacroParams":
        """Params from ``DEFAULTS`` with ``overrides`` (``f32`` arrays, ``horizon`` ``i32``)."""
        return from_defaults(cls, DEFAULTS, overrides)


# name -> (low, high, low_open, high_open): every entry of the field must lie in it
_RANGES = {
    "h_max": (0.0, np.inf, True, True),
    "rho_e": (0.0, 1.0, False, True),
    "sigma_e": (0.0, 2.0, False, False),
    "p_star": (0.0, 1.0, False, False),
    "q_star": (0.0, 1.0, False, False),
    "star_multiple": (0.0, 1e4, False, False),
    "crra": (0.0, 10.0, True, False),
    "frisch": (0.0, 10.0, False, False),
    "labour_weight": (0.0, np.inf, False, True),
    "labour_scale": (0.0, np.inf, False, True),
    "c_floor": (0.0, np.inf, True, True),
    "save_min": (-10.0, 1.0, False, True),
    "borrow_limit": (0.0, 100.0, False, False),
    "consumption_tax": (0.0, 10.0, False, False),
    "alpha": (0.0, 1.0, True, True),
    "delta": (0.0, 1.0, False, False),
    "tfp_mean": (0.0, np.inf, True, True),
    "rho_z": (0.0, 1.0, False, True),
    "sigma_z": (0.0, 1.0, False, False),
    "price_step": (0.0, 1.0, False, False),
    "invest_max": (0.0, 10.0, False, False),
    "price_elasticity": (0.0, 50.0, False, False),
    "lending_spread_min": (0.0, 1.0, False, False),
    "lending_spread_max": (0.0, 1.0, False, False),
    "deposit_spread_max": (0.0, 1.0, False, False),
    "reserve_penalty": (0.0, 1.0, False, False),
    "bank_capital_ratio": (0.0, 1.0, False, True),
    "tau_max": (0.0, 1.0, False, False),
    "xi_max": (0.0, 1.0, False, True),
    "tau_a_max": (0.0, 1.0, False, False),
    "xi_a_max": (0.0, 1.0, False, True),
    "spending_max": (0.0, 1.0, False, False),
    "gov_weights": (-np.inf, np.inf, True, True),
    "policy_rate_min": (-0.5, 1.0, False, False),
    "policy_rate_max": (-0.5, 1.0, False, False),
    "reserve_ratio_max": (0.0, 1.0, False, False),
    "inflation_target": (-1.0, 1.0, False, False),
    "growth_target": (-1.0, 1.0, False, False),
    "inflation_weight": (0.0, np.inf, False, True),
    "growth_weight": (0.0, np.inf, False, True),
    "init_labour": (0.0, 1.0, True, False),
    "init_capital_output": (0.0, 100.0, True, False),
    "init_price": (0.0, np.inf, True, True),
    "init_gov_debt": (0.0, 10.0, False, False),
    "init_policy_rate": (-0.5, 1.0, False, False),
    "init_reserve_ratio": (0.0, 1.0, False, False),
    "init_fiscal": (0.0, 1.0, False, False),
    "horizon": (1, np.inf, False, True),
}
_SHAPES = {"gov_weights": (3,), "init_fiscal": (5,)}


def check_params(params: MacroParams) -> None:
    """Raise ``ValueError`` naming the field and its allowed range (host numpy values)."""
    for name, (lo, hi, lo_open, hi_open) in _RANGES.items():
        v = np.asarray(getattr(params, name), np.float64)
        want = _SHAPES.get(name, ())
        if v.shape != want:
            raise ValueError(f"params.{name} must have shape {want}, got {v.shape}")
        bad = ~np.isfinite(v) | (v <= lo if lo_open else v < lo) | (v >= hi if hi_open else v > hi)
        if np.any(bad):
            rng = ("(" if lo_open else "[") + f"{lo}, {hi}" + (")" if hi_open else "]")
            raise ValueError(f"params.{name} must be finite and in {rng}, got {v.tolist()}")
    pairs = [("lending_spread_min", "lending_spread_max"), ("policy_rate_min", "policy_rate_max")]
    for lo_name, hi_name in pairs:
        if getattr(params, lo_name) > getattr(params, hi_name):
            raise ValueError(f"params.{lo_name} must be <= params.{hi_name}")
    fiscal_max = np.array([params.tau_max, params.xi_max, params.tau_a_max, params.xi_a_max, params.spending_max])
    if np.any(np.asarray(params.init_fiscal) > fiscal_max):
        raise ValueError(
            "params.init_fiscal (tau, xi, tau_a, xi_a, G/Y) must not exceed "
            f"(tau_max, xi_max, tau_a_max, xi_a_max, spending_max) = {fiscal_max.tolist()}"
        )
    if not params.policy_rate_min <= params.init_policy_rate <= params.policy_rate_max:
        raise ValueError("params.init_policy_rate must lie in [policy_rate_min, policy_rate_max]")
    if params.init_reserve_ratio > params.reserve_ratio_max:
        raise ValueError("params.init_reserve_ratio must be <= params.reserve_ratio_max")


@struct.dataclass
class MacroState:
    """The economy between two steps.

    Households ``[N]``: ``latent`` log productivity (normal state), ``star`` superstar
    flag, ``productivity`` (``e``, used by the next step), ``assets`` (net deposits;
    < 0 is a bank loan), and of the last step
    ``income`` (pre-tax), ``consumption`` (goods), ``labour`` (hours share).

    Firms ``[M]``: ``tfp``, ``capital``, ``inventory`` (goods), ``loans`` (net bank
    debt; < 0 is a deposit), ``price``, and of the last step ``output``,
    ``employment`` (effective hours), ``wage`` (per effective hour), ``fill``
    (fraction of demand served), ``profit``.

    Scalars ``[]``: ``gov_debt`` (the government's overdraft at the central bank),
    ``reserves`` (the bank's account at the central bank), ``bank_equity``,
    ``cb_equity``; ``policy`` ``f32[4]`` (policy rate, reserve ratio, deposit rate,
    lending rate) and ``fiscal`` ``f32[5]`` (tau, xi, tau_a, xi_a, G/Y) in force;
    last step's ``price_index`` (GDP deflator), ``nominal_gdp``, ``real_gdp``,
    ``inflation``, ``growth``, ``spent_fraction`` (phi: share of budgets served),
    ``gini_income``/``gini_wealth`` (post-tax; -1 when not computed),
    ``tax_revenue``, ``gov_spending``, ``bank_profit``; ``t`` ``i32[]``.
    """

    latent: jax.Array
    star: jax.Array
    productivity: jax.Array
    assets: jax.Array
    income: jax.Array
    consumption: jax.Array
    labour: jax.Array
    tfp: jax.Array
    capital: jax.Array
    inventory: jax.Array
    loans: jax.Array
    price: jax.Array
    output: jax.Array
    employment: jax.Array
    wage: jax.Array
    fill: jax.Array
    profit: jax.Array
    gov_debt: jax.Array
    reserves: jax.Array
    bank_equity: jax.Array
    cb_equity: jax.Array
    policy: jax.Array
    fiscal: jax.Array
    price_index: jax.Array
    nominal_gdp: jax.Array
    real_gdp: jax.Array
    inflation: jax.Array
    growth: jax.Array
    spent_fraction: jax.Array
    gini_income: jax.Array
    gini_wealth: jax.Array
    tax_revenue: jax.Array
    gov_spending: jax.Array
    bank_profit: jax.Array
    t: jax.Array
