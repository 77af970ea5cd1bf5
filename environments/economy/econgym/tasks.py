"""EconGym's research tasks (its ``cfg/*.yaml`` and ``document/*`` pages, commit d81cd5d)
as economies of ``Society``: which roles learn, which follow EconGym's rules
(``rules.py``), the economy's settings, and the task's metric.

``TASKS[name]`` is a ``Task`` (EconGym's 28 and our variants); ``EconGymTask(name)`` is the environment a learner trains
in (``Society`` wrapped in ``ScriptedRoles`` for the rule roles), registered as
``econgym_task``; ``jaxagents list-tasks`` prints the catalogue.

How the tasks map onto EconGym's files (``ECONGYM_TASKS``, checked field by field
against them by ``test_econgym_task_configs.py``): the role types, household count,
market, parameters and episode length are the task file's as EconGym's ``load_config``
merges it onto its base config; the learning roles are those EconGym trains with
PPO/DDPG/SAC in that file (none in 14 files, whose question compares rule economies:
``EconGymTask`` then needs ``learn=``); the others follow EconGym's rules, its Saez or
US federal government where the file names them, and its behaviour-cloned households
(``bc.py``) where the file does and their converted weights are given. Our earlier
choices (a learning authority where EconGym trains none, other parameters) are
``OUR_VARIANTS``, named ``<task>_ours``. ``optimal_tax`` compares its learning fiscal
authority (HSV schedule) with the Saez government (``Task.rule_society``: the baseline
plays in the economy with the Saez government's brackets instead).
"""

from __future__ import annotations

import dataclasses
import os

from jaxagents_environments.economy.econgym.env import Society
import jax

from jaxagents.core.wrappers.base import Wrapper
from jaxagents.core.wrappers.scripted import ScriptedRoles
from jaxagents_environments.economy.econgym import bc
from jaxagents_environments.economy.econgym.rules import rule_policies

METRICS = {
    "gdp_growth": ("growth", "mean", "mean real GDP growth a year"),
    "gdp": ("gdp", "mean", "mean nominal GDP"),
    "welfare": ("mean_utility", "mean", "mean household utility a year"),
    "wealth_gini": ("wealth_gini", "last", "wealth Gini at the end (after tax)"),
    "income_gini": ("income_gini", "last", "income Gini at the end (after tax)"),
    "pension_fund": ("pension_fund", "last", "pension fund at the end"),
    "inflation_gap": ("inflation", "abs_gap", "mean |inflation - 2%|"),
}
"""Task metrics: ``name -> (info key, aggregation over an episode, description)``."""


@dataclasses.dataclass(frozen=True)
class Task:
    """One research task.

    ``question``: the question, one line. ``area``: EconGym's group (pension, fiscal,
    monetary, market, individual, multi-government, other). ``society``: ``Society``
    keyword arguments; ``params``: ``SocietyParams`` overrides; ``learn``: the roles a
    learner controls (every other role follows EconGym's rule; empty where EconGym
    trains none: the question then compares rule economies); ``metric``: a key of
    ``METRICS``; ``baseline``: the rule-based comparison, in words;
    ``advance_consumption``: the rule households consume ahead of income (EconGym's
    ``OLG_adv_consume``); ``rule_society``: ``society`` overrides of the economy the
    rule baseline plays in (e.g. the Saez government's brackets in place of the
    learner's HSV schedule), empty when it is the learners' economy;
    ``households_policy``: what households that do not learn do, ``bc`` (EconGym's
    behaviour-cloned networks, ``bc.py``, when their weights are given, else its rule)
    or ``rule``; ``episode_length``: years per episode; ``ours``: for a variant, what
    it changes from EconGym's task of the same name without the ``_ours`` suffix.
    """

    question: str
    area: str
    society: dict
    learn: tuple
    metric: str
    baseline: str
    params: dict = dataclasses.field(default_factory=dict)
    advance_consumption: bool = False
    rule_society: dict = dataclasses.field(default_factory=dict)
    households_policy: str = "bc"
    episode_length: int = 300
    ours: str = ""


SAEZ = {"tax_schedule": "saez"}
US = {"tax_schedule": "us_federal"}


def _s(households="ramsey", governments=("fiscal",), bank="non_profit", market="perfect", n=100, **kw):
    return dict(households=households, governments=governments, bank=bank, market=market, num_households=n, **kw)


OLG_PENSION = _s("olg", ("pension",), n=1000)
ECONGYM_TASKS: dict[str, Task] = {
    # pension
    "delayed_retirement": Task("How does delaying retirement affect the economy?", "pension", OLG_PENSION,
                               ("pension",), "gdp_growth",
                               "IMF rule (retirement age and contribution track the debt ratio)"),
    "personal_pension": Task("Do personal pension accounts improve old-age security?", "pension", OLG_PENSION,
                             (), "welfare", "IMF rule"),
    "population_aging": Task("How does population ageing shape income, consumption and growth?", "pension",
                             OLG_PENSION, (), "gdp_growth", "IMF rule"),
    "pension_gap": Task("How can a pension authority close the pension funding gap?", "pension",
                        _s("olg", ("pension",), n=1000, objectives={"pension": "pension_gap"}), ("pension",),
                        "pension_fund", "IMF rule"),
    "pension_across_countries": Task("How do pension systems (retirement age, benefit rate) compare across "
                                     "countries?", "pension", OLG_PENSION, (), "gdp_growth",
                                     "IMF rule from retirement at 62", params={"retire_age": 62.0}),
    # fiscal
    "consumption_tax": Task("Can a consumption tax boost growth and fairness?", "fiscal", _s(**SAEZ), (),
                            "gdp_growth", "Saez government with a 7% consumption tax",
                            params={"consumption_tax": 0.07}),
    "estate_tax": Task("How does an inheritance tax shape the wealth distribution?", "fiscal",
                       _s("olg", ("pension",)), (), "wealth_gini",
                       "IMF rule; estate tax 0 above 13.61M (the task file's setting)"),
    "universal_basic_income": Task("Does a universal basic income improve equity?", "fiscal", _s("olg"),
                                   ("fiscal",), "income_gini", "calibrated HSV schedule paying 2,000 a year to "
                                   "everyone", params={"ubi": 2000.0}),
    "optimal_tax": Task("Which income and wealth tax maximises growth (against Saez and US brackets)?", "fiscal",
                        _s(), ("fiscal",), "gdp_growth", "Saez government", params={"alpha": 0.25},
                        rule_society=SAEZ),
    "wealth_tax": Task("How does a wealth tax affect wealth concentration?", "fiscal", _s(**US), (),
                       "wealth_gini", "US federal income brackets with the task file's wealth tax tau_a = 0.1 "
                       "(the fiscal action range caps learned ones at 0.05)",
                       params={"init_fiscal": [0.263, 0.049, 0.1, 0.0, 0.189]}),
    # monetary
    "negative_interest": Task("How effective are negative interest rates?", "monetary",
                              _s(governments=("central_bank",)), (), "gdp_growth", "Taylor rule (floored at 0)",
                              params={"alpha": 0.25, "tfp": 10.0, "birth_rate": 0.04}),
    "inflation_control": Task("How should monetary policy control inflation?", "monetary",
                              _s(governments=("central_bank",), bank="commercial"),
                              ("household", "central_bank", "bank"), "inflation_gap",
                              "Taylor rule, spread-setting bank and rule households"),
    "QE": Task("What are the long-run effects of quantitative easing?", "monetary",
               _s(governments=("central_bank",), bank="commercial"), (), "gdp_growth", "Taylor rule"),
    "optimal_monetary": Task("How should policy and bank rate spreads be set?", "monetary",
                             _s(governments=("central_bank",), bank="commercial"), ("central_bank", "bank"),
                             "welfare", "Taylor rule and spread-setting bank",
                             params={"alpha": 0.25, "tfp": 10.0, "lending_range": [0.0, 1.0],
                                     "deposit_range": [-0.001, 0.2]}),
    "dbl_government": Task("How should monetary and fiscal policy be coordinated?", "monetary",
                           _s(governments=("central_bank", "fiscal")), ("central_bank", "fiscal"), "gdp_growth",
                           "Taylor rule and calibrated HSV schedule"),
    # market competition
    "technology": Task("How does technology drive long-run growth?", "market", _s("olg", n=1000, **US), (),
                       "gdp_growth", "US federal brackets"),
    "monopoly": Task("How does a monopoly affect resources and welfare?", "market",
                     _s(bank="commercial", market="monopoly", **SAEZ), ("bank",), "welfare",
                     "price at twice TFP, wage at the marginal product, spread-setting bank"),
    "oligopoly": Task("Do learning oligopolists collude?", "market", _s(market="oligopoly", num_firms=2, **SAEZ),
                      ("firm",), "welfare", "price at 1.35 x TFP, wage at the marginal product"),
    "monopolistic_competition": Task("How does product diversity affect welfare?", "market",
                                     _s(market="monopolistic_competition", num_firms=10, **US),
                                     ("firm",), "welfare", "price at 1.2 x TFP, wage at the marginal product"),
    "market_type": Task("How do market structures shape consumer welfare?", "market",
                        _s(market="oligopoly", num_firms=2), (), "welfare",
                        "calibrated HSV schedule under an oligopoly of rule firms"),
    # individual decisions
    "age_consumption": Task("How does age shape consumption?", "individual", _s("olg", ("pension",), "commercial"),
                            (), "welfare", "behaviour-cloned OLG households"),
    "asset_allocation": Task("How does allocating wealth to a risky asset affect wealth?", "individual",
                             _s("ramsey_risk_invest", bank="commercial", **SAEZ), ("household",), "welfare",
                             "rule households (risky share 30%)"),
    "work_hard": Task("Does a long-hours work culture raise utility and output?", "individual",
                      _s("olg", n=1000), ("fiscal",), "welfare", "calibrated HSV schedule"),
    "work_life_well_being": Task("How does work-life balance affect well-being?", "individual",
                                 _s(governments=("pension",)), ("household",), "welfare", "rule households"),
    "over_leveraged_consumption": Task("How does consuming ahead of income affect the economy?", "individual",
                                       _s("olg", ("pension",), "commercial"), (), "welfare",
                                       "rule households that consume ahead of income", advance_consumption=True,
                                       households_policy="rule"),
    # others in EconGym's cfg folder
    "KS_model": Task("Krusell-Smith economy: how do households save under aggregate risk?", "other",
                     _s(), ("household",), "welfare", "rule households",
                     params={"tfp": 10.0, "depreciation": 0.0, "init_rate": 0.0}, episode_length=1200),
    "real_society": Task("A calibrated society under US federal taxes: what does learning policy change?", "other",
                         _s(n=1000, **US), (), "gdp_growth", "US federal brackets"),
    "tre_government": Task("How do fiscal, pension and monetary authorities coordinate?", "multi-government",
                           _s(governments=("central_bank", "fiscal", "pension"), market="oligopoly", num_firms=2),
                           (), "gdp_growth", "Taylor rule, HSV schedule and IMF rule"),
}
"""EconGym's 28 task files (``cfg/*.yaml`` merged by its ``load_config``) as tasks:
the same roles, types, parameters, learning roles, households and episode lengths
(``test_econgym_task_configs.py`` compares them field by field with the recorded
files)."""


def _ours(name, what, **changes):
    base = ECONGYM_TASKS[name]
    return dataclasses.replace(base, ours=what, **changes)


OUR_VARIANTS: dict[str, Task] = {
    "population_aging_ours": _ours("population_aging", "a learning pension authority; birth rate 0.008",
                                   learn=("pension",), params={"birth_rate": 0.008}),
    "personal_pension_ours": _ours("personal_pension", "a learning pension authority", learn=("pension",)),
    "pension_across_countries_ours": _ours("pension_across_countries", "a learning pension authority; basic "
                                           "pension at 70%", learn=("pension",),
                                           params={"retire_age": 62.0, "pension_rate": 0.7}),
    "consumption_tax_ours": _ours("consumption_tax", "a learning fiscal authority (HSV schedule) against the "
                                  "Saez government", society=_s(), learn=("fiscal",), rule_society=SAEZ),
    "estate_tax_ours": _ours("estate_tax", "a learning fiscal authority (GDP and Gini) with a 15% estate tax",
                             society=_s("olg", ("fiscal",), objectives={"fiscal": "gdp_gini"}), learn=("fiscal",),
                             params={"estate_tax": 0.15},
                             baseline="calibrated HSV schedule with a 15% estate tax above 13.61M"),
    "universal_basic_income_ours": _ours("universal_basic_income", "the fiscal objective is GDP and Gini",
                                         society=_s("olg", objectives={"fiscal": "gdp_gini"})),
    "wealth_tax_ours": _ours("wealth_tax", "a learning fiscal authority (GDP and Gini) under the HSV schedule "
                             "with a 5% wealth tax", society=_s(objectives={"fiscal": "gdp_gini"}),
                             learn=("fiscal",), params={"init_fiscal": [0.263, 0.049, 0.05, 0.0, 0.189]},
                             baseline="calibrated HSV income schedule with a flat 5% wealth tax"),
    "negative_interest_ours": _ours("negative_interest", "a learning central bank", learn=("central_bank",)),
    "inflation_control_ours": _ours("inflation_control", "households follow the rule", learn=("central_bank", "bank"),
                                    baseline="Taylor rule and spread-setting bank"),
    "QE_ours": _ours("QE", "a learning central bank", learn=("central_bank",)),
    "technology_ours": _ours("technology", "a learning fiscal authority; TFP volatility 0.0076", learn=("fiscal",),
                             params={"sigma_z": 0.0076},
                             baseline="US federal brackets with TFP growing twice as fast"),
    "monopoly_ours": _ours("monopoly", "the firm learns too (EconGym's is a language model)",
                           learn=("firm", "bank")),
    "market_type_ours": _ours("market_type", "a learning fiscal authority", learn=("fiscal",)),
    "age_consumption_ours": _ours("age_consumption", "households learn", learn=("household",),
                                  baseline="rule households (saving by age band)"),
    "work_hard_ours": _ours("work_hard", "households learn", learn=("household",),
                            baseline="rule households (half-time work on average)"),
    "over_leveraged_consumption_ours": _ours("over_leveraged_consumption", "households learn",
                                             learn=("household",)),
    "real_society_ours": _ours("real_society", "a learning fiscal authority", learn=("fiscal",)),
    "tre_government_ours": _ours("tre_government", "learning central bank and fiscal authority",
                                 learn=("central_bank", "fiscal")),
}
"""Our earlier choices where they differ from EconGym's task, each a variant named
``<task>_ours`` (``Task.ours`` says what it changes)."""

TASKS: dict[str, Task] = {**ECONGYM_TASKS, **OUR_VARIANTS}
"""Every task: EconGym's 28 and our variants."""

GOV_NAMES = {"fiscal": "tax", "pension": "pension", "central_bank": "central_bank"}
HOUSEHOLD_NAMES = {"ramsey": "ramsey", "olg": "OLG", "ramsey_risk_invest": "ramsey_risk_invest",
                   "olg_risk_invest": "OLG_risk_invest"}


def econgym_view(name: str) -> dict:
    """Task ``name`` in the vocabulary of EconGym's merged task file: ``{field: value}``
    with fields such as ``households.type``, ``government.tax.tau``, ``market.Z``,
    ``bank.depreciation_rate``, ``episode_length`` and each role's algorithm kind
    (``*.alg``: ``learn``, ``rule``, ``bc``, ``saez``, ``us_federal``), read from the
    economy the task builds (its ``SocietyParams``), not from the task's own dicts."""
    import numpy as np

    spec = TASKS[name]
    env = Society(**spec.society, params=spec.params)
    p, cfg = env.default_params(), env.config

    def f(x):
        return [float(v) for v in np.asarray(x).reshape(-1)] if np.ndim(x) else float(x)

    hh_type = HOUSEHOLD_NAMES[cfg.households] + ("_adv_consume" if spec.advance_consumption else "")
    view = {
        "episode_length": spec.episode_length, "consumption_tax_rate": f(p.consumption_tax),
        "estate_tax_rate": f(p.estate_tax), "estate_tax_exemption": f(p.estate_exemption),
        "households.type": hh_type, "households.households_n": cfg.num_households,
        "households.alg": "learn" if "household" in spec.learn else spec.households_policy,
        "households.birth_rate": f(p.birth_rate), "households.initial_working_age": f(p.initial_working_age),
        "households.BUI": f(p.ubi), "households.CRRA": f(p.crra), "households.IFE": f(p.ife),
        "households.h_max": f(p.h_max), "households.e_p": f(p.e_p), "households.e_q": f(p.e_q),
        "households.rho_e": f(p.rho_e), "households.sigma_e": f(p.sigma_e), "households.super_e": f(p.super_e),
        "households.stock_alpha": f(p.stock_alpha), "households.at_min": f(p.at_min),
        "households.range": [f(p.save_range)[0], 0.0, f(p.save_range)[1], 1.0],
        "government.types": [GOV_NAMES[g] for g in cfg.governments],
        "market.type": cfg.market, "market.firm_n": cfg.num_firms, "market.alpha": f(p.alpha), "market.Z": f(p.tfp),
        "market.sigma_z": f(p.sigma_z), "market.epsilon": f(p.epsilon),
        "bank.type": cfg.bank, "bank.base_interest_rate": f(p.init_rate), "bank.lending_rate": f(p.init_rate),
        "bank.deposit_rate": f(p.init_rate), "bank.depreciation_rate": f(p.depreciation),
    }
    fiscal = f(p.init_fiscal)
    for g in cfg.governments:
        k = f"government.{GOV_NAMES[g]}"
        if g in spec.learn:
            alg = "learn"
        elif g == "fiscal" and cfg.tax_schedule in ("saez", "us_federal"):
            alg = cfg.tax_schedule
        else:
            alg = "rule"
        view[f"{k}.alg"] = alg
        view.update({f"{k}.{n}": v for n, v in zip(("tau", "xi", "tau_a", "xi_a", "Gt_prob"), fiscal)})
        view.update({f"{k}.retire_age": f(p.retire_age), f"{k}.contribution_rate": f(p.contribution_rate),
                     f"{k}.pension_growth_rate": f(p.pension_growth_rate), f"{k}.base_interest_rate": f(p.policy_rate),
                     f"{k}.reserve_ratio": f(p.reserve_ratio), f"{k}.real_gdp": f(p.real_gdp),
                     f"{k}.real_debt_rate": f(p.real_debt_rate), f"{k}.real_population": f(p.real_population)})
        if g != "central_bank":
            view[f"{k}.gov_task"] = cfg.objective(g)
        fm, pr, po = f(p.fiscal_max), f(p.pension_range), f(p.policy_range)
        view[f"{k}.range"] = {"fiscal": [0.0] * 5 + fm, "pension": [pr[0], pr[2], pr[1], pr[3]],
                              "central_bank": [po[0], po[2], po[1], po[3]]}[g]
    if cfg.market != "perfect":
        view["market.alg"] = "learn" if "firm" in spec.learn else "rule"
    if cfg.bank == "commercial":
        view["bank.alg"] = "learn" if "bank" in spec.learn else "rule"
        lr, dr = f(p.lending_range), f(p.deposit_range)
        view["bank.range"] = [lr[0], dr[0], lr[1], dr[1]]
    return view


class EconGymTask(ScriptedRoles):
    """The environment of a task: ``Society`` with the task's settings, every role that
    does not learn acting by EconGym's rule (``ScriptedRoles``). The rule baseline is
    ``rule_env().rule_actions``.

    Args:
        task: a key of ``TASKS``.
        num_households: overrides the task's household count (10^3 .. 10^6 and beyond).
        learn: overrides the learning roles (a non-empty tuple of role names).
        horizon: years per episode (default the task's ``episode_length``: EconGym's
            300, 1,200 for ``KS_model``).
        rng: as ``Society``'s.
        rule_economy: build the economy of the rule baseline (``Task.rule_society``).
        params: ``SocietyParams`` overrides on top of the task's (e.g. ``{"saez_period": 5}``).
        households: what households that do not learn do: ``bc`` (EconGym's
            behaviour-cloned networks, ``bc.py``) or ``rule`` (EconGym's rule
            households); default the task's ``households_policy``, which is ``bc`` where
            EconGym's is, falling back to ``rule`` when no converted networks are found.
        bc_weights: directory of the networks ``bc_convert.py`` converted from an
            EconGym checkout (default ``$ECONGYM_BC_WEIGHTS``).
        inequality: compute the wealth and income Ginis every year, as EconGym's step
            does (``Society``'s); always where the task's metric is a Gini. On for
            speed comparisons, so both sides do the same work.

    ``households_policy`` says which households the economy got.

    Observation and actions: only the learning roles are roles of this environment,
    each with ``Society``'s observation and action (``econgym.env``'s module docstring
    lists them entry by entry). The default task, ``optimal_tax``, learns ``fiscal``
    alone: it observes ``f32[9]``, the public part (the mean wealth and productivity of
    the richest 10% and of the poorest half, the firm's wage and price, the bank's
    lending and deposit rates) and government debt, and acts ``Box(-1, 1, (5,))``:
    ``[tau, xi, tau_a, xi_a, G/Y]`` mapped onto ``[0, params.fiscal_max]``.
    """

    def __init__(self, task: str = "optimal_tax", num_households: int | None = None, learn=None,
                 horizon: int | None = None, rng: str = "hash", rule_economy: bool = False,
                 params: dict | None = None, households: str | None = None, bc_weights: str | None = None,
                 inequality: bool | None = None):
        if task not in TASKS:
            raise ValueError(f"task must be one of {sorted(TASKS)}, got {task!r}")
        spec = TASKS[task]
        horizon = spec.episode_length if horizon is None else horizon
        kwargs = {**spec.society, **(spec.rule_society if rule_economy else {})}
        if num_households is not None:
            kwargs["num_households"] = num_households
        gini = METRICS[spec.metric][0] in ("wealth_gini", "income_gini") or bool(inequality)
        env = Society(**kwargs, horizon=horizon, rng=rng, params={**spec.params, **dict(params or {})},
                      inequality=gini)
        learners = tuple(spec.learn if learn is None else learn)
        unknown = [r for r in learners if r not in env.roles]
        if not learners and learn is not None:
            raise ValueError("learn must name at least one role (the rule baseline is rule_actions())")
        if not learners:
            raise ValueError(f"task {task!r} has no learning role in EconGym (its question compares rule "
                             f"economies): pass learn= one of {sorted(env.roles)}"
                             + (f", or use {task + '_ours'!r}" if task + "_ours" in TASKS else ""))
        if unknown:
            raise ValueError(f"learn roles {unknown} are not roles of task {task!r}; roles: {sorted(env.roles)}")
        scripted = tuple(r for r in env.roles if r not in learners)
        if households not in (None, "bc", "rule"):
            raise ValueError(f"households must be 'bc' or 'rule', got {households!r}")
        weights_dir = bc_weights or os.environ.get(bc.ENV_VAR)
        if households == "bc" and not weights_dir:
            raise ValueError(f"households='bc' needs bc_weights= (or ${bc.ENV_VAR}): a directory of networks "
                             "converted by environments/economy/econgym/bc_convert.py")
        policy = households or spec.households_policy
        self.households_policy = "bc" if policy == "bc" and weights_dir else "rule"
        scripts = rule_policies(env, scripted, spec.advance_consumption)
        if "household" in scripts and self.households_policy == "bc":
            scripts["household"] = bc.household_bc(env, bc.weights_for(env.config.households, weights_dir))
        if scripts:
            super().__init__(env, scripts)
        else:  # every role learns (EconGym's inflation_control): nothing is scripted
            Wrapper.__init__(self, env)
            self.policies, self.scripted, self.roles = {}, (), dict(env.roles)
        self.task, self.spec = task, spec
        self._learner_rules = rule_policies(env, learners, spec.advance_consumption)
        self._rebuild = dict(task=task, num_households=num_households, learn=learn, horizon=horizon, rng=rng,
                             params=params, households=households, bc_weights=bc_weights,
                             inequality=inequality)
        self.rule_economy = bool(rule_economy) or not spec.rule_society

    def rule_env(self) -> "EconGymTask":
        """The economy the rule baseline plays in (``Task.rule_society``): this env, or
        the same task with those overrides; ``rule_actions`` is to be called on it."""
        return self if self.rule_economy else EconGymTask(**self._rebuild, rule_economy=True)

    def rule_actions(self, key, state, timestep, params=None):
        """The rule baseline: what EconGym's rules would do in the learners' place,
        ``{role: action}`` for the roles of this env (one unbatched state and the
        ``timestep`` it came with)."""
        params = self.default_params() if params is None else params
        inner_ts = timestep.replace(obs={r: timestep.obs[r] for r in self._learner_rules})
        keys = jax.random.split(key, len(self._learner_rules))
        return {r: fn(k, state.env_state, inner_ts, params)
                for k, (r, fn) in zip(keys, self._learner_rules.items())}

    @property
    def name(self) -> str:
        return f"EconGymTask[{self.task}]"

    @classmethod
    def tasks(cls) -> dict[str, str]:
        """``{task: "area; learns ...; metric ...: question"}`` (``jaxagents list-tasks``)."""
        return {name: f"[{t.area}] learn {'+'.join(t.learn)}; metric {t.metric}; {t.question}"
                for name, t in TASKS.items()}

