"""A macro economy of households, firms, a bank, a government and a central bank
(EconGym's roles), stock-flow consistent, vectorised over 10^2..10^5+ households.

(Just over 400 lines: the step below is one accounting sequence whose order is the
model; its pieces -- parameters, market clearing, taxes -- are already in
``params.py`` and ``dynamics.py``.)

One step is one year. Money is bank deposits; every payment moves balances between
two accounts, so the accounting identities below hold every step and are reported in
``info`` (``residual/*``, relative to the size of the balance sheets).

Actions, per role (all ``Box(-1, 1)``, mapped linearly; out-of-range entries are clipped
to [-1, 1] and non-finite ones set to 0, and ``info["illegal_action"]`` flags either):

* ``household`` (N), ``[save, work]``: savings share ``s = save_min + (save+1)/2
  (1 - save_min)`` (default ``[-0.5, 1]``; negative spends out of assets) and hours
  ``h = (work+1)/2 h_max``.
* ``firm`` (M), ``[price, invest]``: ``p = p_prev exp(price_step * price)`` (kept in
  ``[PRICE_MIN, PRICE_MAX]``) and investment spending ``(invest+1)/2 invest_max``
  times the value of its output.
* ``bank`` (1), ``[lend, deposit]``: lending rate ``i + [lending_spread_min,
  lending_spread_max]``, deposit rate ``i - [0, deposit_spread_max]``.
* ``government`` (1), ``[tau, xi, tau_a, xi_a, g]`` each onto ``[0, *_max]``: HSV
  income and asset taxes and spending ``G = g x nominal output``.
* ``central_bank`` (1), ``[rate, reserve]``: policy rate ``i`` in ``[policy_rate_min,
  policy_rate_max]`` (default [-0.02, 0.10]), reserve ratio in ``[0, reserve_ratio_max]``.

Observations (``f32``, ``obs.py``; money divided by last year's nominal GDP, per
household or per firm, so nothing drifts with the price level; every entry clipped to
``[-1e6, 1e6]``). Every role's opens with the same 21 public entries: inflation (the
change of the GDP deflator), real growth, policy rate, reserve ratio, deposit rate,
lending rate, ``tau``, ``xi``, ``tau_a``, ``xi_a``, government spending share, log price
index, government debt / GDP, capital / output, inventory / output, the fraction
``phi`` of spending budgets the goods market served, mean hours share, income and wealth Ginis (-1 when not
computed), bank equity / GDP and ``t / horizon``. Then, per role:

* ``household`` (28): its productivity over the mean, superstar flag (0/1), assets,
  last pre-tax income, last consumption at the price index (those three over nominal
  GDP per household), last hours share and its employer's full-time wage (``W h_max``
  over nominal GDP per household);
* ``firm`` (30): TFP ``Z_j``, price over the price index, capital / output, inventory /
  output, loans / (price x capital), share of employment, last fill fraction, last
  profit over nominal GDP / M and its full-time wage (as the household's);
* ``bank`` (25): deposits / GDP, loans / GDP, reserves / deposits, profit / GDP;
* ``government`` (24): tax revenue, spending and primary deficit, each over nominal GDP;
* ``central_bank`` (21): the public entries only.

A step, in order (stocks are those at the start of the step):

1. Production. Household ``i`` works for firm ``i mod M`` and supplies ``e_i h_i``
   effective hours; firm ``j``: ``L_j = sum e_i h_i``, ``Y_j = Z_j K_j^alpha
   L_j^(1-alpha)``, wage ``W_j = p_j Z_j (1-alpha)(K_j/L_j)^alpha`` (marginal product
   at its price; rental ``alpha p_j Y_j / K_j`` is reported in ``info``).
2. Interest on opening balances: deposits earn ``r_d``, loans pay ``r_l`` (households
   and firms alike); the bank earns ``i`` on its reserves minus the required ``rr x
   deposits`` (required reserves earn nothing: the reserve ratio taxes the bank) and
   pays ``reserve_penalty`` more on a shortfall. The government pays ``i`` on its debt
   to the central bank, which remits its whole profit back to it. Dividends: each firm
   pays out last step's profit when positive, the bank its equity above
   ``bank_capital_ratio x loans``, to households in proportion to their deposits.
3. Taxes: income ``y_i = e_i h_i W_j + interest_i + dividends_i``; ``T(y_i)`` and
   ``T_a(a_i)`` are HSV taxes (``dynamics.hsv_tax``) with the base measured in units of
   its mean positive value, so ``tau`` is the marginal rate at the mean.
4. Spending plans (nominal, incl. consumption tax ``tau_c``): households ``x_i = (1 -
   s_i) max(y_i - T(y_i), 0)``, capped by cash on hand ``a_i - T_a + y_i - T(y_i) +
   borrow_limit x GDP per household``; government ``G = g sum_j p_j Y_j``; firm ``j``
   invests ``invest_j p_j Y_j``.
5. Goods market (``dynamics.ration``): supply ``Y_j + inventory_j``; every buyer
   splits its budget over the firms with weights ``p_j^-elasticity``; a firm sells
   ``min(demand, supply)``, every buyer of a rationed firm gets the same fraction of
   its order, and unserved budgets move on to the firms with goods left (M rounds, so
   buyers go unserved only when every firm has sold out). Every buyer ends up served the
   same fraction ``phi`` of its budget; the rest stays with it. Unsold goods are kept
   as inventory.
6. Stocks: ``a' = a + y - T - T_a - spent``; firm loans grow by dividends, wages,
   interest and investment and shrink by sales; a firm whose debt then exceeds the
   value of its capital and inventory defaults on the excess, which the bank writes
   off; ``K' = (1-delta) K + I``; bank equity grows by its interest margin less
   write-offs and dividends; government debt by ``G - taxes + interest -
   remittance``; reserves move with every payment between the government and the
   bank's customers.
7. Productivity: ``log e`` log-AR(1) with the superstar state
   (``dynamics.productivity_step``); ``log Z_j`` AR(1) around ``log tfp_mean``.

Accounting identities (``info``, each divided by the gross balance sheet + GDP):
``residual/money``: ``sum a - sum loans_j - gov_debt + bank_equity + cb_equity`` (net
financial wealth is zero); ``residual/bank``: reserves + loans - deposits - equity;
``residual/central_bank``: gov_debt - reserves - cb_equity; ``residual/goods``:
``sum Y - sum Delta inventory - (C + I + G)`` (goods); ``residual/wages``: firms'
wage bill minus households' wage income; ``residual/sales``: firms' revenue minus what
buyers paid for goods.

Rewards: household ``u = c^(1-sigma)/(1-sigma)`` (log at sigma = 1) ``- alpha (beta
h/h_max)^(1+phi)/(1+phi)``; firm profit (revenue - wages - interest - ``delta p K``)
over last nominal GDP / M; bank profit (margin less write-offs) over last nominal
GDP; government ``gov_weights . (real GDP growth, Gini reduction, mean household
utility)`` where the
Gini reduction is the mean relative fall of the Gini of income and of wealth from
before to after tax; central bank ``exp(-inflation_weight (pi - pi*)^2 -
growth_weight (g - g*)^2)`` with ``pi`` the change of the GDP deflator.

Ginis need sorts of N values (on CPU 20-50x the cost of a step at N = 10^5), so they
are computed only when ``gov_weights[1] != 0`` (a real branch when params are shared
across the batch); otherwise ``gini_income``/``gini_wealth`` read -1.

Episodes are truncated after ``params.horizon`` steps and never terminate. This is
an agent-based economy: nothing but the agents keeps it near a steady state. With
consistent behaviour (households saving little, firms nudging prices towards
clearing, a Taylor central bank) it stays put for a century; random agents let
balances grow and pile up inventories, and aggressive price cuts set off debt
deflation. Whatever the actions, every quantity stays finite (prices are bounded,
divisions guarded, observations clipped to ``[-OBS_CLIP, OBS_CLIP]``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxagents_environments.economy.macro import dynamics as dyn
from jaxagents_environments.economy.macro import obs as macro_obs
from jaxagents_environments.economy.macro.params import MacroParams, MacroState, check_params
from jaxagents_environments.economy.metrics import gini
from jaxagents.core import Box, Env, Role

PRICE_MIN, PRICE_MAX = 1e-4, 1e4
ROLES = ("household", "firm", "bank", "government", "central_bank")
ACTION_DIMS = {"household": 2, "firm": 2, "bank": 2, "government": 5, "central_bank": 2}
MAX_HOUSEHOLDS = 10**8
INFO_KEYS = (
    "residual/money", "residual/bank", "residual/central_bank", "residual/goods", "residual/wages",
    "residual/sales", "nominal_gdp", "real_gdp", "inflation", "growth", "policy_rate",
    "rental_rate", "tax_revenue", "gov_spending", "spent_fraction", "mean_utility", "write_off",
    "gini_income", "gini_wealth", "illegal_action",
)


class MacroEconomy(Env):
    """Households, firms, a bank, a government and a central bank (module docstring).

    Args:
        num_households: N, 1 .. 10^8 (the tests and benchmarks use 10^2 .. 10^5).
        num_firms: M, 1 .. N (household ``i`` works for firm ``i mod M``).
    """

    def __init__(self, num_households: int = 100, num_firms: int = 1):
        if not isinstance(num_households, (int, np.integer)) or not 1 <= num_households <= MAX_HOUSEHOLDS:
            raise ValueError(f"num_households must be an int in [1, {MAX_HOUSEHOLDS}], got {num_households!r}")
        if not isinstance(num_firms, (int, np.integer)) or not 1 <= num_firms <= num_households:
            raise ValueError(f"num_firms must be an int in [1, num_households={num_households}], got {num_firms!r}")
        self.num_households = int(num_households)
        self.num_firms = int(num_firms)
        n_global = len(macro_obs.GLOBAL_FEATURES)
        dims = {
            "household": n_global + len(macro_obs.HOUSEHOLD_FEATURES),
            "firm": n_global + len(macro_obs.FIRM_FEATURES),
            "bank": n_global + len(macro_obs.BANK_FEATURES),
            "government": n_global + len(macro_obs.GOVERNMENT_FEATURES),
            "central_bank": n_global + len(macro_obs.CENTRAL_BANK_FEATURES),
        }
        counts = {"household": self.num_households, "firm": self.num_firms}
        self.roles = {
            r: Role(
                counts.get(r, 1),
                Box(-macro_obs.OBS_CLIP, macro_obs.OBS_CLIP, (dims[r],), jnp.float32),
                Box(-1.0, 1.0, (ACTION_DIMS[r],), jnp.float32),
                always_legal=True,
                always_active=True,
            )
            for r in ROLES
        }
        self.global_obs_shape = (n_global + self.num_firms * len(macro_obs.FIRM_FEATURES)
                                 + len(macro_obs.BANK_FEATURES) + len(macro_obs.GOVERNMENT_FEATURES),)

    # ------------------------------------------------------------------ params
    def default_params(self) -> MacroParams:
        return MacroParams.make()

    def check_params(self, params: MacroParams) -> None:
        check_params(params)

    # ------------------------------------------------------------------ helpers
    def _employer(self):
        return jnp.arange(self.num_households, dtype=jnp.int32) % self.num_firms

    def _by_firm(self, x):
        """Sum a household quantity ``[N]`` over each firm's workers: ``[M]``."""
        if self.num_firms == 1:
            return jnp.sum(x)[None]
        return jax.ops.segment_sum(x, self._employer(), self.num_firms)

    def _to_households(self, x):
        """Each household's employer's value of a firm quantity ``[M]``: ``[N]``."""
        if self.num_firms == 1:
            return jnp.broadcast_to(x[0], (self.num_households,))
        return x[self._employer()]

    def _obs(self, state, params):
        return macro_obs.observations(state, params, self._employer(), self.num_households, self.num_firms)

    def global_obs(self, state, params=None):
        """Global features, every firm's features, the bank's and the government's."""
        params = self.default_params() if params is None else params
        return macro_obs.global_observation(state, params, self.num_households)

    @staticmethod
    def _stock_residuals(state):
        """Relative residuals of the three balance-sheet identities and their scale."""
        a, loans = state.assets, state.loans
        deposits, bank_loans = macro_obs.bank_book(state)
        scale = (jnp.sum(jnp.abs(a)) + jnp.sum(jnp.abs(loans)) + jnp.abs(state.gov_debt)
                 + jnp.abs(state.reserves) + jnp.abs(state.bank_equity) + jnp.abs(state.cb_equity)
                 + jnp.abs(state.nominal_gdp))
        scale = jnp.maximum(scale, dyn.TINY)
        money = jnp.sum(a) - jnp.sum(loans) - state.gov_debt + state.bank_equity + state.cb_equity
        bank = state.reserves + bank_loans - deposits - state.bank_equity
        cb = state.gov_debt - state.reserves - state.cb_equity
        return money / scale, bank / scale, cb / scale, scale

    def _info(self, state, flows: dict):
        money, bank, cb, _ = self._stock_residuals(state)
        info = {
            "residual/money": money, "residual/bank": bank, "residual/central_bank": cb,
            "nominal_gdp": state.nominal_gdp, "real_gdp": state.real_gdp,
            "inflation": state.inflation, "growth": state.growth, "policy_rate": state.policy[0],
            "tax_revenue": state.tax_revenue, "gov_spending": state.gov_spending,
            "spent_fraction": state.spent_fraction, "gini_income": state.gini_income,
            "gini_wealth": state.gini_wealth, **flows,
        }
        return {k: jnp.asarray(info[k], bool if k == "illegal_action" else jnp.float32) for k in INFO_KEYS}

    # ------------------------------------------------------------------ reset
    def reset_env(self, key, params: MacroParams):
        p = params
        n, m = self.num_households, self.num_firms
        k_e, k_z = jax.random.split(key)
        latent, star = dyn.stationary_productivity(k_e, n, p.rho_e, p.sigma_e, p.p_star, p.q_star)
        e = dyn.effective_productivity(latent, star, p.star_multiple)
        tfp = p.tfp_mean * jnp.exp(jax.random.normal(k_z, (m,)) * p.sigma_z / jnp.sqrt(1.0 - p.rho_z**2))
        # capital sized so that K/Y = init_capital_output at mean TFP and init_labour
        labour = self._by_firm(e * p.init_labour * p.h_max)
        capital = (p.tfp_mean * p.init_capital_output) ** (1.0 / (1.0 - p.alpha)) * labour
        price = jnp.full((m,), p.init_price, jnp.float32)
        y, wage, rental = dyn.production(tfp, capital, labour, price, p.alpha)
        nominal_gdp, real_gdp = jnp.sum(price * y), jnp.sum(y)
        # last step's profit, as if it had sold all its output at the initial rates: the
        # dividends paid in the first step (without them demand falls short at once)
        lending_rate = p.init_policy_rate + p.lending_spread_min
        profit = (rental - lending_rate * price - p.delta * price) * capital
        # balance sheets: firms' capital is bank-financed, the government owes the
        # central bank (whose liabilities are the bank's reserves), and households own
        # the deposits that fund it all, in proportion to productivity
        loans = price * capital
        gov_debt = p.init_gov_debt * nominal_gdp
        bank_equity = p.bank_capital_ratio * jnp.sum(loans)
        assets = (jnp.sum(loans) + gov_debt - bank_equity) * e / jnp.sum(e)
        zero = jnp.zeros((), jnp.float32)
        state = MacroState(
            latent=latent, star=star, productivity=e, assets=assets,
            income=e * p.init_labour * p.h_max * self._to_households(wage),
            consumption=jnp.zeros((n,), jnp.float32), labour=jnp.full((n,), p.init_labour, jnp.float32),
            tfp=tfp, capital=capital, inventory=jnp.zeros((m,), jnp.float32), loans=loans, price=price,
            output=y, employment=labour, wage=wage, fill=jnp.ones((m,), jnp.float32),
            profit=profit,
            gov_debt=gov_debt, reserves=gov_debt, bank_equity=bank_equity, cb_equity=zero,
            policy=jnp.stack([p.init_policy_rate, p.init_reserve_ratio, p.init_policy_rate,
                              p.init_policy_rate + p.lending_spread_min]),
            fiscal=p.init_fiscal, price_index=dyn.safe_ratio(nominal_gdp, real_gdp, p.init_price),
            nominal_gdp=nominal_gdp, real_gdp=real_gdp, inflation=zero, growth=zero,
            spent_fraction=jnp.ones((), jnp.float32), gini_income=-jnp.ones(()), gini_wealth=-jnp.ones(()),
            tax_revenue=zero, gov_spending=zero, bank_profit=zero, t=jnp.zeros((), jnp.int32),
        )
        flows = {"residual/goods": zero, "residual/wages": zero, "residual/sales": zero,
                 "rental_rate": jnp.mean(rental), "mean_utility": zero, "illegal_action": jnp.zeros((), bool),
                 "write_off": zero}
        return state, self.make_timestep(self._obs(state, params), info=self._info(state, flows))

    # ------------------------------------------------------------------ step
    def step_env(self, key, state: MacroState, actions, params: MacroParams):
        p = params
        n, m = self.num_households, self.num_firms
        u_h, bad_h = dyn.clean_actions(actions["household"])
        u_f, bad_f = dyn.clean_actions(actions["firm"])
        u_b, bad_b = dyn.clean_actions(actions["bank"][0])
        u_g, bad_g = dyn.clean_actions(actions["government"][0])
        u_c, bad_c = dyn.clean_actions(actions["central_bank"][0])
        illegal = bad_h | bad_f | bad_b | bad_g | bad_c

        # decisions
        save = p.save_min + dyn.unit_interval(u_h[:, 0]) * (1.0 - p.save_min)
        labour = dyn.unit_interval(u_h[:, 1])
        price = jnp.clip(state.price * jnp.exp(p.price_step * u_f[:, 0]), PRICE_MIN, PRICE_MAX)
        invest = dyn.unit_interval(u_f[:, 1]) * p.invest_max
        rate = dyn.scale_action(u_c[0], p.policy_rate_min, p.policy_rate_max)
        reserve_ratio = dyn.unit_interval(u_c[1]) * p.reserve_ratio_max
        r_l = rate + dyn.scale_action(u_b[0], p.lending_spread_min, p.lending_spread_max)
        r_d = rate - dyn.unit_interval(u_b[1]) * p.deposit_spread_max
        fiscal = dyn.unit_interval(u_g) * jnp.stack([p.tau_max, p.xi_max, p.tau_a_max, p.xi_a_max, p.spending_max])
        tau, xi, tau_a, xi_a, g_share = fiscal

        # 1. production and wages
        eff_hours = state.productivity * labour * p.h_max
        employment = self._by_firm(eff_hours)
        y, wage, rental = dyn.production(state.tfp, state.capital, employment, price, p.alpha)
        wage_income = eff_hours * self._to_households(wage)
        wage_bill = wage * employment

        # 2. interest on opening balances; dividends: firms pay out last step's profit
        # (when positive) and the bank its equity above the target capital ratio, to
        # households in proportion to their deposits
        a, debt = state.assets, state.loans
        hh_interest = jnp.where(a >= 0, r_d, r_l) * a
        firm_interest = jnp.where(debt >= 0, r_l, r_d) * debt
        deposits, bank_loans = macro_obs.bank_book(state)
        firm_dividends = jnp.maximum(state.profit, 0.0)
        bank_dividend = jnp.maximum(state.bank_equity - p.bank_capital_ratio * bank_loans, 0.0)
        owned = jnp.maximum(a, 0.0)
        ownership = jnp.where(jnp.sum(owned) > 0, owned / jnp.maximum(jnp.sum(owned), dyn.TINY), 1.0 / n)
        dividends = (jnp.sum(firm_dividends) + bank_dividend) * ownership
        required = reserve_ratio * deposits
        shortfall = jnp.maximum(required - state.reserves, 0.0)
        reserve_income = rate * (state.reserves - required) - p.reserve_penalty * shortfall

        # 3. taxes
        income = wage_income + hh_interest + dividends
        income_tax = dyn.hsv_tax(income, tau, xi, jnp.mean(jnp.maximum(income, 0.0)))
        asset_tax = dyn.hsv_tax(a, tau_a, xi_a, jnp.mean(jnp.maximum(a, 0.0)))
        post_income, post_assets = income - income_tax, a - asset_tax

        # 4. spending plans (household budgets include the consumption tax)
        cash = post_assets + post_income + p.borrow_limit * state.nominal_gdp / n
        budget = jnp.clip((1.0 - save) * jnp.maximum(post_income, 0.0), 0.0, jnp.maximum(cash, 0.0))
        nominal_output = jnp.sum(price * y)
        gov_budget = g_share * nominal_output
        invest_budget = invest * price * y
        hh_goods_budget = jnp.sum(budget) / (1.0 + p.consumption_tax)

        # 5. goods market
        supply = y + state.inventory
        total = hh_goods_budget + gov_budget + jnp.sum(invest_budget)
        fill, sold, inventory, phi, q = dyn.ration(total, price, supply, p.price_elasticity, m)
        revenue = price * sold
        consumption = q * budget / (1.0 + p.consumption_tax)
        hh_paid = phi * budget
        gov_goods, gov_paid = q * gov_budget, phi * gov_budget
        invest_goods, invest_paid = q * invest_budget, phi * invest_budget
        consumption_tax = p.consumption_tax * phi * hh_goods_budget

        # 6. balance sheets
        assets = post_assets + post_income - hh_paid
        loans = debt + firm_dividends + wage_bill + firm_interest + invest_paid - revenue
        capital = (1.0 - p.delta) * state.capital + invest_goods
        taxes = jnp.sum(income_tax) + jnp.sum(asset_tax) + consumption_tax
        bank_profit = jnp.sum(firm_interest) - jnp.sum(hh_interest) + reserve_income
        cb_profit = rate * state.gov_debt - reserve_income
        remittance = cb_profit  # the central bank hands all its profit to the government
        # a firm whose debt exceeds the value of its capital and inventory defaults on
        # the excess: the bank writes it off against its equity
        write_off = jnp.maximum(loans - price * (capital + inventory), 0.0)
        loans = loans - write_off
        bank_profit = bank_profit - jnp.sum(write_off)
        new = dict(
            assets=assets, loans=loans, capital=capital, inventory=inventory,
            bank_equity=state.bank_equity - bank_dividend + bank_profit,
            reserves=state.reserves + gov_paid - taxes + reserve_income,
            cb_equity=state.cb_equity + cb_profit - remittance,
            gov_debt=state.gov_debt + gov_paid - taxes + rate * state.gov_debt - remittance,
        )

        # aggregates
        real_gdp = jnp.sum(y)
        price_index = dyn.safe_ratio(nominal_output, real_gdp, state.price_index)  # GDP deflator
        inflation = price_index / state.price_index - 1.0
        growth = dyn.safe_ratio(real_gdp, state.real_gdp, 1.0) - 1.0
        profit = revenue - wage_bill - firm_interest - p.delta * price * state.capital

        # rewards
        utility = dyn.crra_utility(consumption, labour, p.crra, p.frisch, p.labour_weight, p.labour_scale, p.c_floor)
        mean_utility = jnp.mean(utility)

        def inequality(_):
            rows = jnp.maximum(jnp.stack([income, post_income, a, post_assets]), 0.0)
            g = gini(rows)
            reduction = 0.5 * (dyn.safe_ratio(g[0] - g[1], g[0]) + dyn.safe_ratio(g[2] - g[3], g[2]))
            return jnp.stack([reduction, g[1], g[3]]).astype(jnp.float32)

        def no_inequality(_):
            return jnp.array([0.0, -1.0, -1.0], jnp.float32)

        gini_reduction, gini_income, gini_wealth = jax.lax.cond(
            p.gov_weights[1] != 0, inequality, no_inequality, None
        )
        rewards = {
            "household": utility,
            "firm": dyn.safe_ratio(profit, state.nominal_gdp / m),
            "bank": dyn.safe_ratio(bank_profit, state.nominal_gdp)[None],
            "government": jnp.dot(p.gov_weights, jnp.stack([growth, gini_reduction, mean_utility]))[None],
            "central_bank": jnp.exp(
                -p.inflation_weight * (inflation - p.inflation_target) ** 2
                - p.growth_weight * (growth - p.growth_target) ** 2
            )[None],
        }

        # 7. productivity for the next step
        k_e, k_z = jax.random.split(key)
        latent, star = dyn.productivity_step(k_e, state.latent, state.star, p.rho_e, p.sigma_e, p.p_star, p.q_star)
        log_z = ((1.0 - p.rho_z) * jnp.log(p.tfp_mean) + p.rho_z * jnp.log(state.tfp)
                 + p.sigma_z * jax.random.normal(k_z, (m,)))

        t = state.t + 1
        next_state = MacroState(
            latent=latent, star=star, productivity=dyn.effective_productivity(latent, star, p.star_multiple),
            income=income, consumption=consumption, labour=labour, tfp=jnp.exp(log_z), price=price,
            output=y, employment=employment, wage=wage, fill=fill, profit=profit,
            policy=jnp.stack([rate, reserve_ratio, r_d, r_l]), fiscal=fiscal, price_index=price_index,
            nominal_gdp=nominal_output, real_gdp=real_gdp, inflation=inflation, growth=growth,
            spent_fraction=phi, gini_income=gini_income, gini_wealth=gini_wealth, tax_revenue=taxes,
            gov_spending=gov_paid, bank_profit=bank_profit, t=t, **new,
        )

        # flow identities (the stock identities are computed by _info from next_state)
        _, _, _, scale = self._stock_residuals(next_state)
        goods = (jnp.sum(y) + jnp.sum(state.inventory) - jnp.sum(inventory)) - (
            jnp.sum(consumption) + gov_goods + jnp.sum(invest_goods)
        )
        flows = {
            "residual/goods": goods / jnp.maximum(jnp.sum(supply), dyn.TINY),
            "residual/wages": (jnp.sum(wage_bill) - jnp.sum(wage_income)) / scale,
            "residual/sales": (jnp.sum(revenue) - (jnp.sum(hh_paid) - consumption_tax + gov_paid
                                                    + jnp.sum(invest_paid))) / scale,
            "rental_rate": jnp.mean(rental), "mean_utility": mean_utility, "illegal_action": illegal,
            "write_off": jnp.sum(write_off),
        }
        return next_state, self.make_timestep(
            self._obs(next_state, params),
            reward=rewards,
            truncated=t >= p.horizon,
            info=self._info(next_state, flows),
        )
