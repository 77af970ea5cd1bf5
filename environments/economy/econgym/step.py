"""One year of EconGym's society: the accounting sequence of ``env.py``'s docstring.

The order of the blocks is the model (each block's equations are in its module);
``society_step`` only reads the actions, chains the blocks and assembles rewards,
observations and ``info``. ``info`` carries the flows the identity tests check:
``gov_debt' = (1 + i) gov_debt + gov_spending - tax_revenue``, ``pension_fund' = (1 +
g) pension_fund - pension_paid``, households' ``n' = n - deaths + births``, goods
``investment = gdp - gov_spending - consumption_value`` (without UBI).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxagents_environments.economy.econgym import demography
from jaxagents_environments.economy.econgym import government as gov
from jaxagents_environments.economy.econgym import households as hh
from jaxagents_environments.economy.econgym import market as mk
from jaxagents_environments.economy.econgym import saez

INFO_KEYS = (
    "gdp", "inflation", "growth", "price_index", "tax_revenue", "gov_spending", "gov_debt", "pension_fund",
    "pension_paid", "policy_rate", "lending_rate", "deposit_rate", "bank_profit", "capital", "consumption",
    "consumption_value", "investment", "households", "births", "deaths", "births_dropped", "estate_tax", "wealth_gini",
    "income_gini", "mean_utility", "illegal_action",
)


def _clean(u):
    finite = jnp.isfinite(u)
    return jnp.where(finite, jnp.clip(u, -1.0, 1.0), 0.0), jnp.any(~finite | (u < -1.0) | (u > 1.0))


def _onto(u, low, high):
    return low + (u + 1.0) * 0.5 * (high - low)


def society_step(env, key, state, actions, p):
    """``(next_state, timestep)`` of ``env`` (a ``Society``) for ``actions``."""
    cfg = env.config
    c, m = cfg.capacity, cfg.num_firms
    k_e, k_z, k_demo = jax.random.split(key, 3)
    clean, bad = {}, []
    for role, u in actions.items():
        clean[role], b = _clean(u)
        bad.append(b)
    illegal = jnp.any(jnp.stack(bad))

    # 1. instruments -----------------------------------------------------------------
    policy, split = state.policy, state.gov_split
    if "fiscal" in clean:
        a = clean["fiscal"][0]
        policy = policy.at[:5].set(_onto(a[:5], 0.0, p.fiscal_max))
        if m > 1:
            w = (a[5:] + 1.0) * 0.5
            split = jnp.where(jnp.sum(w) > 0, w / jnp.where(jnp.sum(w) > 0, jnp.sum(w), 1.0), 0.0)
    if "pension" in clean:
        a = clean["pension"][0]
        policy = policy.at[5].set(jnp.round(_onto(a[0], p.pension_range[0], p.pension_range[1])))
        policy = policy.at[6].set(_onto(a[1], p.pension_range[2], p.pension_range[3]))
    if "central_bank" in clean:
        a = clean["central_bank"][0]
        policy = policy.at[7].set(_onto(a[0], p.policy_range[0], p.policy_range[1]))
        policy = policy.at[8].set(_onto(a[1], p.policy_range[2], p.policy_range[3]))
    tau, xi, tau_a, xi_a, g_share, retire_age, contribution, policy_rate, reserve_ratio = policy
    seen_rate = state.bank_view[0]  # the policy rate as the bank (and the debt) saw it last year
    if cfg.bank == "commercial":
        a = clean["bank"][0]
        r_l = _onto(a[0], p.lending_range[0], p.lending_range[1])
        r_d = _onto(a[1], p.deposit_range[0], p.deposit_range[1])
        if "central_bank" in cfg.governments:
            r_l = jnp.clip(r_l, seen_rate + 0.01, seen_rate + 0.03)
            r_d = jnp.clip(r_d, seen_rate - 0.01, seen_rate)
    price = state.price
    if cfg.firms_decide:
        a = clean["firm"]
        price = jnp.clip(state.price * jnp.exp(p.price_step * a[:, 0]), p.price_bounds[0], p.price_bounds[1])
    u = clean["household"]
    alive = state.alive
    e_normal, e_star = hh.productivity_step(k_e, state.e_normal, state.e_star, alive, p.rho_e, p.sigma_e,
                                            p.e_p, p.e_q, p.super_e, env.rng)
    e = e_normal + e_star
    save = _onto(u[:, 0], p.save_range[0], p.save_range[1])
    hours = (u[:, 1] + 1.0) * 0.5 * p.h_max
    invest_share = (u[:, 2] + 1.0) * 0.5 if cfg.risk_invest else jnp.zeros((c,))
    employer, spend_split = env._employer((u + 1.0) * 0.5)
    old = alive & (state.age >= retire_age) if cfg.olg else jnp.zeros((c,), bool)
    # EconGym's firms hire the hours every household offers, retirees' included: it
    # zeroes retirees' hours only afterwards, in the households' step, so they produce
    # without a wage
    offered = jnp.where(alive, hours, 0.0)
    hours = jnp.where(alive & ~old, hours, 0.0)

    # 2. production ------------------------------------------------------------------
    capital = jnp.maximum(state.capital, 1e-8)
    tfp = mk.tfp_step(k_z, state.tfp, p.sigma_z)
    labour = env._by_firm(e * offered, employer)
    output, wage_mpl, rental = mk.production(tfp, capital, labour, price, p.alpha)
    if cfg.firms_decide:
        wage = jnp.clip(wage_mpl * jnp.exp(p.wage_step * clean["firm"][:, 1]), p.price_bounds[0], p.price_bounds[1])
    else:
        wage = wage_mpl
    if cfg.bank == "non_profit":
        r = jnp.mean(rental) if cfg.market == "perfect" else seen_rate
        r_l = r_d = r

    # 3. households ------------------------------------------------------------------
    income = (e * hours * wage[employer] + hh.interest(state.savings, r_d, r_l) + state.risky_income
              + p.ubi)
    income = jnp.where(alive, income, 0.0)
    saez_state = state.saez
    if cfg.tax_schedule == "hsv":
        income_tax = hh.hsv_tax(income, tau, xi)
    elif cfg.tax_schedule == "us_federal":
        income_tax = hh.us_federal_tax(income)
    elif cfg.tax_schedule == "saez":  # its own key: the other draws stay those of the other schedules
        income_tax, saez_state = saez.step(jax.random.fold_in(key, 3), state.saez, state.t, income, alive,
                                           p.saez_brackets, p.saez_period)
    else:
        income_tax = jnp.zeros((c,))
    asset_tax = jnp.where(alive, hh.hsv_tax(state.assets, tau_a, xi_a), 0.0)
    income_tax = jnp.where(alive, income_tax, 0.0)
    post_income, post_assets = income - income_tax, state.assets - asset_tax
    if cfg.olg:
        pension, account = hh.pension_flows(income, old, alive, state.working_years, state.pension_account,
                                            contribution, hh.annuity_factor(retire_age), p.pension_rate)
        working_years = jnp.where(alive & ~old, state.working_years + 1.0, state.working_years)
    else:
        pension, account, working_years = jnp.zeros((c,)), state.pension_account, state.working_years
    budget = jnp.maximum((1.0 - save) * (post_income + pension) / (1.0 + p.consumption_tax), 0.0)
    goods, sold_hh = hh.buy_goods(budget, spend_split, price, output, alive)
    consumption = jnp.where(alive, hh.ces(goods, p.epsilon), 0.0)
    spent = goods @ price
    wealth = jnp.where(alive, post_income + post_assets + pension - (1.0 + p.consumption_tax) * spent, state.assets)
    risky = invest_share * wealth
    savings = jnp.where(alive, wealth - risky, state.savings)
    stock, stock_price, risky_income = hh.trade_stock(risky, state.stock, state.stock_price, p.stock_alpha, alive)
    rewards_hh = jnp.where(alive, hh.utility(consumption, hours, p.crra, p.ife, p.labour_weight,
                                             p.labour_scale), 0.0)

    # 4. demography ------------------------------------------------------------------
    people = dict(alive=alive, age=state.age, assets=wealth, savings=savings, stock=stock,
                  risky_income=risky_income, e_normal=e_normal, e_star=e_star, e=e,
                  working_years=working_years, pension_account=account, income=income,
                  post_income=post_income, consumption=consumption, hours=hours, pension=pension,
                  order=state.order)
    zero = jnp.zeros((), jnp.float32)
    flows = dict(deaths=zero, births=zero, births_dropped=zero, estate_tax=zero)
    if cfg.olg:
        aged, demo = demography.step(k_demo, people, p, stock_price, env.rng, cfg.estates, state.assets)
        # EconGym ages every household every year, the first included; only deaths and
        # births wait for the second year (its step skips them at t == 0)
        first = state.t == 0
        older = dict(people, age=demography.older(people["age"], alive))
        people = jax.tree.map(lambda new, old_: jnp.where(first, old_, new), aged, older)
        flows = {k: jnp.where(first, 0.0, demo[k]) for k in flows}
        inherited = jnp.where(first, 0.0, demo["bank_inherited"])
        died = demo["died"] & ~first
    else:
        inherited, died = zero, jnp.zeros((c,), bool)
    alive_next = people["alive"]
    estate_tax_carried = state.estate_tax
    if cfg.olg and cfg.estates == "econgym":
        # EconGym adds the last estate tax to every household's bill, this year's
        # households (the newborn included), every year until the next deaths
        estate_tax_carried = jnp.where(flows["deaths"] > 0, flows["estate_tax"], state.estate_tax)
        flows["estate_tax"] = jnp.sum(alive_next).astype(jnp.float32) * estate_tax_carried
    # EconGym keeps this year's government and bank books after removing this year's
    # dead: their taxes, pension flows, purchases and start-of-year deposits drop out
    # of them (the newborn's start-of-year deposit is its inheritance); ours
    # ("conserving") books everyone who lived the year
    books = alive & ~died if cfg.estates == "econgym" else alive

    # 5. governments -----------------------------------------------------------------
    gov_goods = split * g_share * output
    revenue = (jnp.sum(jnp.where(books, income_tax + asset_tax + p.consumption_tax * spent, 0.0))
               + flows["estate_tax"])
    n_alive = jnp.sum(alive).astype(jnp.float32)
    spending = jnp.sum(price * gov_goods) + p.ubi * n_alive
    debt_next = gov.debt_step(state.gov_debt, seen_rate, spending, revenue)
    gdp = jnp.sum(price * output)
    pension_booked = jnp.where(books, pension, 0.0)
    pension_paid = jnp.sum(pension_booked)
    fund = gov.pension_fund_step(state.pension_fund, p.pension_growth_rate, pension_booked) if cfg.olg \
        else state.pension_fund

    # 6. bank ------------------------------------------------------------------------
    hh_goods = jnp.sum(goods, axis=0)
    investment = price * (output - gov_goods - jnp.sum(jnp.where(books[:, None], goods, 0.0), axis=0))
    capital_next, account_next, bank_profit = mk.bank_step(
        state.t == 0, state.bank_account, jnp.sum(jnp.where(books, state.assets, 0.0)) + inherited,
        jnp.sum(jnp.where(alive_next, people["assets"], 0.0)), capital,
        investment + (1.0 - p.depreciation) * capital, state.gov_debt, debt_next, jnp.stack([r_l, r_d]),
        reserve_ratio, p.depreciation)

    # metrics and rewards ------------------------------------------------------------
    index = mk.price_index(price, wage, p.epsilon)
    inflation = index / state.price_index - 1.0
    growth = (gdp + 1e-8) / (state.gdp + 1e-8) - 1.0
    if env._gini:
        w1, i1 = gov.econgym_gini(post_assets, alive), gov.econgym_gini(post_income, alive)
        w0, i0 = ((gov.econgym_gini(state.assets, alive), gov.econgym_gini(income, alive)) if env._gini_reward
                  else (jnp.nan, jnp.nan))  # a sort each: only where a reward reads them
        ginis = (w0, w1, i0, i1)
    else:
        ginis = None
    rewards = {"household": rewards_hh}
    for g in cfg.governments:
        if g == "central_bank":
            r = gov.central_bank_reward(inflation, growth)
        else:
            r = gov.objective_reward(cfg.objective(g), gdp, state.gdp, ginis, rewards_hh, alive, fund)
        rewards[g] = jnp.reshape(r, (1,))
    if "bank" in env.roles:
        rewards["bank"] = mk.scaled_reward(bank_profit)[None]
    if "firm" in env.roles:
        profit = mk.firm_profit(price, jnp.minimum(output, hh_goods + gov_goods), wage, labour, r_l, capital)
        rewards["firm"] = mk.scaled_reward(profit)

    t = state.t + 1
    next_state = state.replace(
        alive=alive_next, e_normal=people["e_normal"], e_star=people["e_star"], e=people["e"],
        assets=people["assets"], savings=people["savings"], stock=people["stock"],
        risky_income=people["risky_income"], age=people["age"], working_years=people["working_years"],
        pension_account=people["pension_account"], income=people["income"], post_income=people["post_income"],
        consumption=people["consumption"], hours=people["hours"], pension=people["pension"],
        tfp=tfp, capital=capital_next, price=price, wage=wage, output=output, labour=labour,
        gov_debt=debt_next, gdp=gdp, policy=policy, gov_split=split, bank_rates=jnp.stack([r_l, r_d]),
        bank_view=jnp.stack([policy_rate, reserve_ratio]), bank_account=account_next, bank_profit=bank_profit,
        pension_fund=fund, estate_tax=estate_tax_carried, order=people["order"], stock_price=stock_price, price_index=index, inflation=inflation, growth=growth, t=t,
        saez=saez_state,
    )
    n_next = jnp.sum(alive_next)
    finite = jnp.all(jnp.isfinite(people["assets"])) & jnp.isfinite(debt_next) & jnp.all(jnp.isfinite(capital_next))
    terminated = (jnp.any(alive_next & (people["assets"] < p.at_min)) | ~finite
                  | (jnp.sum(capital_next) < 0))
    if cfg.olg:
        terminated = terminated | (n_next <= 5)
    if "pension" in cfg.governments and cfg.olg:
        terminated = terminated | (fund < 0)
    info = dict(
        gdp=gdp, inflation=inflation, growth=growth, price_index=index, tax_revenue=revenue,
        gov_spending=spending, gov_debt=debt_next, pension_fund=fund, pension_paid=pension_paid,
        policy_rate=policy_rate, lending_rate=r_l, deposit_rate=r_d, bank_profit=bank_profit,
        capital=jnp.sum(capital_next), consumption=jnp.sum(jnp.where(books[:, None], goods, 0.0)),
        consumption_value=jnp.sum(jnp.where(books, spent, 0.0)), investment=jnp.sum(investment),
        households=n_next.astype(jnp.float32), wealth_gini=-1.0 if ginis is None else ginis[1],
        income_gini=-1.0 if ginis is None else ginis[3],
        mean_utility=jnp.sum(rewards_hh) / jnp.maximum(n_alive, 1.0), illegal_action=illegal, **flows,
    )
    info = {k: jnp.asarray(info[k], bool if k == "illegal_action" else jnp.float32) for k in INFO_KEYS}
    return next_state, env.make_timestep(
        env._observe(next_state, p), reward=rewards, terminated=terminated,
        truncated=t >= p.horizon, active=env._active(alive_next), info=info,
    )
