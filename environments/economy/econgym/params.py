"""Static configuration, parameters and state of EconGym's economic society.

``SocietyConfig`` is static (it fixes shapes and which roles exist), ``SocietyParams``
holds every number a user may sweep (a population of economies is a ``vmap`` over it)
and ``check_params`` validates it on the host; ``SocietyState`` holds the economy
between two steps. Shapes: ``C`` household slots (``num_households`` for infinitely
lived households, more for overlapping generations, whose population changes), ``M``
firms. Defaults are EconGym's (``cfg/base_config.yaml`` at commit d81cd5d), money in
US dollars, one step a year.
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
from flax import struct

from jaxagents_environments.economy.defaults import from_defaults
from jaxagents_environments.economy.econgym.saez import SaezState

HOUSEHOLD_TYPES = ("ramsey", "olg", "ramsey_risk_invest", "olg_risk_invest")
GOVERNMENT_TYPES = ("fiscal", "pension", "central_bank")
BANK_TYPES = ("non_profit", "commercial")
MARKET_TYPES = ("perfect", "monopoly", "oligopoly", "monopolistic_competition")
OBJECTIVES = ("gdp", "gini", "social_welfare", "mean_welfare", "gdp_gini", "pension_gap")
TAX_SCHEDULES = ("hsv", "us_federal", "saez", "none")
ESTATES = ("econgym", "conserving")
MAX_HOUSEHOLDS = 10**8


@dataclasses.dataclass(frozen=True)
class SocietyConfig:
    """Which roles exist, and the sizes (static: they fix the shapes).

    Args:
        households: one of ``HOUSEHOLD_TYPES``: infinitely lived (``ramsey``) or
            overlapping generations (``olg``: age, retirement, mortality, births,
            pensions), each optionally with a risky asset (``*_risk_invest``).
        governments: a non-empty tuple of distinct ``GOVERNMENT_TYPES``; the first is
            the main government (its debt is the one the bank lends to). A type that is
            absent keeps its instruments at their ``params`` values.
        bank: ``non_profit`` (deposit and lending rates set by the market: the marginal
            product of capital under perfect competition, else the policy rate) or
            ``commercial`` (chooses both rates).
        market: ``perfect`` (1 firm, wage at the marginal product), ``monopoly`` (1
            firm), ``oligopoly`` or ``monopolistic_competition`` (``num_firms`` firms),
            the last three setting their price and wage.
        num_households: households at reset, 1 .. 10^8.
        num_firms: ``M``; 1 for ``perfect`` and ``monopoly``; >= 2 otherwise.
        capacity: household slots ``C`` (>= ``num_households``); default
            ``num_households`` for infinitely lived households and ``ceil(1.25 N)`` for
            overlapping generations (births into a full economy are dropped and counted
            in ``info["births_dropped"]``).
        objectives: ``{government type: objective}`` for ``fiscal`` and ``pension``
            (one of ``OBJECTIVES``; default ``gdp``); the central bank's is its own.
        tax_schedule: income tax of the households: ``hsv`` (the fiscal authority's
            HSV schedule), ``us_federal`` (the 2022 US federal brackets), ``saez``
            (EconGym's Saez government, ``saez.py``: brackets ``params.saez_brackets``
            whose rates it sets every ``params.saez_period`` years) or ``none``. Under
            the last three a fiscal authority's ``tau`` and ``xi`` are not used; its
            asset tax and spending are.
        estates: how overlapping generations settle estates (``demography.py``):
            ``econgym`` (EconGym's rules, its accounting leaks included) or
            ``conserving`` (ours: each estate is the deceased's own wealth, taxed once,
            and none of it vanishes).
    """

    households: str = "ramsey"
    governments: tuple = ("fiscal",)
    bank: str = "non_profit"
    market: str = "perfect"
    num_households: int = 100
    num_firms: int = 1
    capacity: int | None = None
    objectives: tuple = ()
    tax_schedule: str = "hsv"
    estates: str = "econgym"

    def __post_init__(self):
        def one_of(name, value, allowed):
            if value not in allowed:
                raise ValueError(f"{name} must be one of {list(allowed)}, got {value!r}")

        one_of("households", self.households, HOUSEHOLD_TYPES)
        one_of("bank", self.bank, BANK_TYPES)
        one_of("market", self.market, MARKET_TYPES)
        one_of("tax_schedule", self.tax_schedule, TAX_SCHEDULES)
        one_of("estates", self.estates, ESTATES)
        govs = tuple(self.governments) if not isinstance(self.governments, str) else (self.governments,)
        if not govs or len(set(govs)) != len(govs) or any(g not in GOVERNMENT_TYPES for g in govs):
            raise ValueError(f"governments must be a non-empty tuple of distinct types from "
                             f"{list(GOVERNMENT_TYPES)}, got {self.governments!r}")
        object.__setattr__(self, "governments", govs)
        n = self.num_households
        if not isinstance(n, (int, np.integer)) or not 1 <= n <= MAX_HOUSEHOLDS:
            raise ValueError(f"num_households must be an int in [1, {MAX_HOUSEHOLDS}], got {n!r}")
        m = self.num_firms
        single = self.market in ("perfect", "monopoly")
        if not isinstance(m, (int, np.integer)) or (single and m != 1) or (not single and not 2 <= m <= 1000):
            allowed = "1" if single else "an int in [2, 1000]"
            raise ValueError(f"num_firms must be {allowed} for market={self.market!r}, got {m!r}")
        cap = self.capacity
        if cap is None:
            cap = int(np.ceil(1.25 * n)) if self.olg else n
        if not isinstance(cap, (int, np.integer)) or not n <= cap <= MAX_HOUSEHOLDS:
            raise ValueError(f"capacity must be an int in [num_households={n}, {MAX_HOUSEHOLDS}], got {cap!r}")
        object.__setattr__(self, "capacity", int(cap))
        objectives = dict(self.objectives)
        for gov, obj in objectives.items():
            if gov not in ("fiscal", "pension") or gov not in govs:
                raise ValueError(f"objectives keys must be governments of this economy among "
                                 f"['fiscal', 'pension'], got {gov!r} (governments: {list(govs)})")
            one_of(f"objectives[{gov!r}]", obj, OBJECTIVES)
        object.__setattr__(self, "objectives", tuple(sorted(objectives.items())))

    @property
    def olg(self) -> bool:
        return self.households.startswith("olg")

    @property
    def risk_invest(self) -> bool:
        return self.households.endswith("risk_invest")

    @property
    def firms_decide(self) -> bool:
        return self.market != "perfect"

    def objective(self, gov: str) -> str:
        return dict(self.objectives).get(gov, "gdp")


DEFAULTS: dict[str, float | list[float] | int] = {
    # households
    "h_max": 2512.0,
    "rho_e": 0.982,
    "sigma_e": 0.2,
    "e_p": 2.2e-6,
    "e_q": 0.99,
    "super_e": 504.3,
    "crra": 1.0,
    "ife": 1.0,
    "labour_weight": 0.5,
    "labour_scale": 5.0,
    "stock_alpha": 0.1,
    "at_min": -1e6,
    "save_range": [-0.5, 1.0],
    "ubi": 0.0,
    # overlapping generations
    "birth_rate": 0.011,
    "initial_working_age": 24.0,
    "max_age": 102.0,
    # firms
    "alpha": 0.36,
    "tfp": 1.0,
    "sigma_z": 0.0038,
    "epsilon": 0.5,
    "price_bounds": [1e-4, 1e2],
    "price_step": 0.1,
    "wage_step": 0.6931472,
    # bank
    "init_rate": 0.0345,
    "depreciation": 0.06,
    "lending_range": [0.03, 0.2],
    "deposit_range": [-0.001, 0.1],
    # governments
    "init_fiscal": [0.263, 0.049, 0.0, 0.0, 0.189],
    "fiscal_max": [0.6, 2.0, 0.05, 2.0, 0.6],
    "retire_age": 65.0,
    "contribution_rate": 0.08,
    "pension_growth_rate": 0.01,
    "pension_rate": 1.0,
    "pension_range": [60.0, 70.0, 0.05, 0.2],
    "policy_rate": 0.03,
    "reserve_ratio": 0.08,
    "policy_range": [-0.02, 0.1, 0.0, 0.2],
    "consumption_tax": 0.0,
    "estate_tax": 0.0,
    "estate_exemption": 13610000.0,
    "saez_brackets": [0.0, 1e6, 2e6, 3e6, 4e6],
    "saez_period": 100,
    # initial economy (US data, as EconGym)
    "real_gdp": 254746e8,
    "real_population": 333428e3,
    "real_debt_rate": 1.2129,
    "real_total_hours": 265888.875e6,
    "horizon": 300,
}
"""Default value of every ``SocietyParams`` field (EconGym's)."""


@struct.dataclass
class SocietyParams:
    """All scalars ``f32[]`` unless noted; defaults in ``DEFAULTS`` (EconGym's values),
    ranges as ``check_params`` enforces them (every entry finite).

    Attributes:
        h_max: hours a year a household can work, in [1e-3, 1e5] (2512).
        rho_e: persistence of log productivity (log-AR(1)), in [0, 0.9999].
        sigma_e: standard deviation of the log-productivity shock, in [0, 2].
        e_p: yearly probability that a normal household becomes a superstar, in [0, 1].
        e_q: yearly probability that a superstar stays one, in [0, 1].
        super_e: a superstar's productivity in units of the mean normal productivity,
            in [0, 1e4].
        crra: relative risk aversion of ``u = c^(1-crra)/(1-crra) - labour_weight
            (labour_scale h/2512)^(1+ife)/(1+ife)`` (log at 1), in [0, 10].
        ife: inverse Frisch elasticity of labour supply in ``u``, in [0, 10].
        labour_weight: weight of the disutility of work in ``u``, in [0, 1e3].
        labour_scale: scale of hours in the disutility of work, in [0, 1e3].
        stock_alpha: the risky asset's price response to net buying, in [0, 10].
        at_min: a household's assets below it (dollars) end the episode, in [-1e15, 0].
        save_range: ``f32[2]`` low and high savings share of the household's action,
            in [-10, 1] with low <= high and high > 0.
        ubi: dollars a year paid to every household and counted as government
            spending, in [0, 1e7].
        birth_rate: births a year per household (overlapping generations), in [0, 1].
        initial_working_age: age of the newborn households (years), in [0, 150].
        max_age: households die at this age if not before (years), in [1, 200].
        alpha: capital share of production, in [1e-3, 0.999].
        tfp: initial TFP scale: a firm's initial TFP is ``tfp (1 + U[0, 1))``, in
            [1e-6, 1e6].
        sigma_z: ``log Z`` grows by ``sigma_z U[0, 1)`` a year, in [0, 1].
        epsilon: CES elasticity of the households' aggregate of goods and of the price
            index, in [1e-3, 100].
        price_bounds: ``f32[2]`` lowest and highest price and wage of deciding firms,
            in [1e-8, 1e8], low <= high.
        price_step: largest log price change a year of a deciding firm's action, in
            [0, 5].
        wage_step: largest log deviation of a deciding firm's wage from the marginal
            product of labour, in [0, 5] (default ``log 2``).
        init_rate: deposit and lending rate at reset, and the bank's view of the policy
            rate (the bank sees a step's policy rate only after it), in [-0.5, 1].
        depreciation: capital's depreciation rate a year, in [0, 1].
        lending_range: ``f32[2]`` the commercial bank's lending-rate action range, in
            [-0.5, 1], low <= high.
        deposit_range: ``f32[2]`` its deposit-rate action range, in [-0.5, 1], low <=
            high.
        init_fiscal: ``f32[5]`` ``(tau, xi, tau_a, xi_a, G/Y)`` in force where no fiscal
            authority acts, each in [0, 10].
        fiscal_max: ``f32[5]`` upper ends of the fiscal authority's action ranges (the
            lower ends are 0), each in [0, 10].
        retire_age: retirement age (years) in force where no pension authority acts,
            in [0, 150].
        contribution_rate: share of a worker's income paid into its pension account
            where no pension authority acts, in [0, 1].
        pension_growth_rate: the pension fund's yearly return, in [-1, 1].
        pension_rate: basic pension multiplier: a retiree gets ``pension_rate`` x 1% of
            the average wage per working year, plus its own account as an annuity, in
            [0, 100].
        pension_range: ``f32[4]`` the pension authority's action ranges: retirement
            age low, high, contribution rate low, high; each in [0, 150], low <= high.
        policy_rate: policy rate in force where no central bank acts, in [-0.5, 1].
        reserve_ratio: reserve ratio in force where no central bank acts, in [0, 0.999].
        policy_range: ``f32[4]`` the central bank's action ranges: policy rate low,
            high, reserve ratio low, high; each in [-0.5, 1], low <= high.
        consumption_tax: tax rate on consumption spending, in [0, 10].
        estate_tax: tax rate on estates above ``estate_exemption``, in [0, 1].
        estate_exemption: the untaxed part of an estate (dollars), in [0, 1e15].
        saez_brackets: ``f32[B]`` the Saez government's bracket cutoffs (dollars): at
            least 2, rising from 0 (EconGym's five linear brackets up to 4M dollars).
        saez_period: ``i32[]`` years between the Saez government's rate updates, >= 1
            (EconGym's 100).
        real_gdp: US GDP (dollars) that sets the initial economy's scale, in [1, 1e18].
        real_population: US population, in [1, 1e12].
        real_debt_rate: initial government debt over GDP, in [0, 100].
        real_total_hours: US hours worked a year, in [1, 1e18] (with ``real_gdp``, GDP
            and hours per household set the scale).
        horizon: ``i32[]`` steps (years) before the episode is truncated, >= 1.
    """

    h_max: jax.Array
    rho_e: jax.Array
    sigma_e: jax.Array
    e_p: jax.Array
    e_q: jax.Array
    super_e: jax.Array
    crra: jax.Array
    ife: jax.Array
    labour_weight: jax.Array
    labour_scale: jax.Array
    stock_alpha: jax.Array
    at_min: jax.Array
    save_range: jax.Array
    ubi: jax.Array
    birth_rate: jax.Array
    initial_working_age: jax.Array
    max_age: jax.Array
    alpha: jax.Array
    tfp: jax.Array
    sigma_z: jax.Array
    epsilon: jax.Array
    price_bounds: jax.Array
    price_step: jax.Array
    wage_step: jax.Array
    init_rate: jax.Array
    depreciation: jax.Array
    lending_range: jax.Array
    deposit_range: jax.Array
    init_fiscal: jax.Array
    fiscal_max: jax.Array
    retire_age: jax.Array
    contribution_rate: jax.Array
    pension_growth_rate: jax.Array
    pension_rate: jax.Array
    pension_range: jax.Array
    policy_rate: jax.Array
    reserve_ratio: jax.Array
    policy_range: jax.Array
    consumption_tax: jax.Array
    estate_tax: jax.Array
    estate_exemption: jax.Array
    saez_brackets: jax.Array
    saez_period: jax.Array
    real_gdp: jax.Array
    real_population: jax.Array
    real_debt_rate: jax.Array
    real_total_hours: jax.Array
    horizon: jax.Array

    @classmethod
    def make(cls, **overrides) -> "SocietyParams":
        """Params from ``DEFAULTS`` with ``overrides`` (``f32`` arrays, ``horizon`` ``i32``)."""
        return from_defaults(cls, DEFAULTS, overrides, integers=("horizon", "saez_period"))


_INF = np.inf
# name -> (low, high): every entry must be finite and in [low, high]
_RANGES = {
    "h_max": (1e-3, 1e5), "rho_e": (0.0, 0.9999), "sigma_e": (0.0, 2.0), "e_p": (0.0, 1.0), "e_q": (0.0, 1.0),
    "super_e": (0.0, 1e4), "crra": (0.0, 10.0), "ife": (0.0, 10.0), "labour_weight": (0.0, 1e3),
    "labour_scale": (0.0, 1e3), "stock_alpha": (0.0, 10.0), "at_min": (-1e15, 0.0), "save_range": (-10.0, 1.0),
    "ubi": (0.0, 1e7), "birth_rate": (0.0, 1.0), "initial_working_age": (0.0, 150.0), "max_age": (1.0, 200.0),
    "alpha": (1e-3, 0.999), "tfp": (1e-6, 1e6), "sigma_z": (0.0, 1.0), "epsilon": (1e-3, 100.0),
    "price_bounds": (1e-8, 1e8), "price_step": (0.0, 5.0), "wage_step": (0.0, 5.0), "init_rate": (-0.5, 1.0),
    "depreciation": (0.0, 1.0), "lending_range": (-0.5, 1.0),
    "deposit_range": (-0.5, 1.0), "init_fiscal": (0.0, 10.0), "fiscal_max": (0.0, 10.0),
    "retire_age": (0.0, 150.0), "contribution_rate": (0.0, 1.0), "pension_growth_rate": (-1.0, 1.0),
    "pension_rate": (0.0, 100.0), "pension_range": (0.0, 150.0), "policy_rate": (-0.5, 1.0),
    "reserve_ratio": (0.0, 0.999), "policy_range": (-0.5, 1.0), "consumption_tax": (0.0, 10.0),
    "estate_tax": (0.0, 1.0), "estate_exemption": (0.0, 1e15), "real_gdp": (1.0, 1e18),
    "real_population": (1.0, 1e12), "real_debt_rate": (0.0, 100.0), "real_total_hours": (1.0, 1e18),
    "saez_brackets": (0.0, 1e15), "saez_period": (1, 10**9), "horizon": (1, 10**9),
}
_SHAPES = {"save_range": (2,), "price_bounds": (2,), "lending_range": (2,), "deposit_range": (2,),
           "init_fiscal": (5,), "fiscal_max": (5,), "pension_range": (4,), "policy_range": (4,)}
_ORDERED = ("save_range", "price_bounds", "lending_range", "deposit_range")  # [low, high] pairs


def check_params(params: SocietyParams) -> None:
    """Raise ``ValueError`` naming the field and what is allowed (host numpy values)."""
    for name, (lo, hi) in _RANGES.items():
        v = np.asarray(getattr(params, name), np.float64)
        want = _SHAPES.get(name, ())
        if name == "saez_brackets":
            if v.ndim != 1 or v.shape[0] < 2 or v[0] != 0 or np.any(np.diff(v) <= 0):
                raise ValueError(f"params.saez_brackets must be >= 2 rising cutoffs from 0, got {v.tolist()}")
        elif v.shape != want:
            raise ValueError(f"params.{name} must have shape {want}, got {v.shape}")
        if np.any(~np.isfinite(v) | (v < lo) | (v > hi)):
            raise ValueError(f"params.{name} must be finite and in [{lo}, {hi}], got {v.tolist()}")
    for name in _ORDERED:
        lo, hi = np.asarray(getattr(params, name)).tolist()
        if lo > hi:
            raise ValueError(f"params.{name} must be [low, high] with low <= high, got {[lo, hi]}")
    for name in ("pension_range", "policy_range"):
        v = np.asarray(getattr(params, name)).tolist()
        if v[0] > v[1] or v[2] > v[3]:
            raise ValueError(f"params.{name} must be [low, high, low, high] with each low <= high, got {v}")
    if not 0.0 < float(params.save_range[1]) <= 1.0:
        raise ValueError(f"params.save_range[1] must be in (0, 1], got {float(params.save_range[1])}")


@struct.dataclass
class SocietyState:
    """The economy between two steps.

    Household slots ``[C]``: ``alive``; productivity ``e_normal`` and ``e_star`` (the
    normal and the superstar component, one of them 0; ``e = e_normal + e_star``),
    ``e`` (as of the last step); ``assets`` (wealth at the start of the next step:
    deposits plus the risky position), ``savings`` (the deposit part; < 0 a loan),
    ``stock`` (units of the risky asset), ``risky_income`` (last step's gain on it,
    paid in the next step's income), ``age``, ``working_years``, ``pension_account``;
    and of the last step ``income``, ``post_income``, ``consumption`` (CES aggregate),
    ``hours`` (hours a year), ``pension`` (> 0 received, < 0 contributed); ``order``
    ``i32[C]`` (each household's row in EconGym's arrays: the newborn are appended).

    Firms ``[M]``: ``tfp``, ``capital`` (next step's), ``price``, ``wage`` (per effective
    hour) and of the last step ``output``, ``labour`` (effective hours).

    Scalars ``[]``: ``gov_debt`` (next step's), ``gdp`` (last step's nominal GDP),
    ``policy`` ``f32[9]`` in force (tau, xi, tau_a, xi_a, G/Y, retirement age,
    contribution rate, policy rate, reserve ratio), ``gov_split`` ``f32[M]`` (share of
    government spending per firm), ``bank_rates`` ``f32[2]`` (lending, deposit) and
    ``bank_view`` ``f32[2]`` (the policy rate and reserve ratio the bank last saw),
    ``bank_account``, ``bank_profit``, ``pension_fund``, ``estate_tax`` (the estate
    tax EconGym's rules charge each household until the next deaths), ``stock_price``,
    ``price_index``, ``inflation``, ``growth``, ``money_unit`` (GDP per household at
    reset: the unit observations measure money in), ``t`` ``i32[]``; ``saez`` the Saez
    government's ``SaezState`` (``saez.py``; carried, unused, under other schedules).
    """

    alive: jax.Array
    e_normal: jax.Array
    e_star: jax.Array
    e: jax.Array
    assets: jax.Array
    savings: jax.Array
    stock: jax.Array
    risky_income: jax.Array
    age: jax.Array
    working_years: jax.Array
    pension_account: jax.Array
    income: jax.Array
    post_income: jax.Array
    consumption: jax.Array
    hours: jax.Array
    pension: jax.Array
    tfp: jax.Array
    capital: jax.Array
    price: jax.Array
    wage: jax.Array
    output: jax.Array
    labour: jax.Array
    gov_debt: jax.Array
    gdp: jax.Array
    policy: jax.Array
    gov_split: jax.Array
    bank_rates: jax.Array
    bank_view: jax.Array
    bank_account: jax.Array
    bank_profit: jax.Array
    pension_fund: jax.Array
    estate_tax: jax.Array
    order: jax.Array
    stock_price: jax.Array
    price_index: jax.Array
    inflation: jax.Array
    growth: jax.Array
    money_unit: jax.Array
    t: jax.Array
    saez: SaezState
