"""EconGym's research tasks (its ``cfg/*.yaml`` and ``document/*`` pages, commit d81cd5d)
as economies of ``Society``: which roles learn, which follow EconGym's rules
(``rules.py``), the economy's settings, and the task's metric.

``TASKS[name]`` is a ``Task``; ``EconGymTask(name)`` is the environment a learner trains
in (``Society`` wrapped in ``ScriptedRoles`` for the rule roles), registered as
``econgym_task``; ``jaxagents list-tasks`` prints the catalogue.

How the tasks map onto EconGym's files: the role types, household count, market and
settings are the task file's (merged onto EconGym's base config); the learning roles are
those EconGym trains with PPO/DDPG/SAC in that file, and where it trains none (the
question is then a comparison of settings, made in EconGym with rules everywhere) the
authority the question is about learns here. EconGym's households are mostly its
behaviour-cloned network (``bc``, trained on survey data); here they follow its rule
households. Where EconGym's government is its Saez government (``saez.py``) it is
here too: the economy of ``asset_allocation``, ``monopoly`` and ``oligopoly``, and the
rule baseline of ``optimal_tax`` and ``consumption_tax``, whose learning fiscal authority
sets an HSV schedule (``Task.rule_society``: the baseline plays in the economy with
the Saez government's brackets instead).
"""

from __future__ import annotations

import dataclasses

from jaxagents_environments.economy.econgym.env import Society
import jax

from jaxagents.core.wrappers.scripted import ScriptedRoles
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
    learner controls (every other role follows EconGym's rule); ``metric``: a key of
    ``METRICS``; ``baseline``: the rule-based comparison, in words;
    ``advance_consumption``: the rule households borrow against the future
    (over-leveraged consumption); ``rule_society``: ``society`` overrides of the
    economy the rule baseline plays in (e.g. the Saez government's brackets in place of
    the learner's HSV schedule), empty when it is the learners' economy.
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


SAEZ = {"tax_schedule": "saez"}


def _s(households="ramsey", governments=("fiscal",), bank="non_profit", market="perfect", n=100, **kw):
    return dict(households=households, governments=governments, bank=bank, market=market, num_households=n, **kw)


TASKS: dict[str, Task] = {
    # pension
    "delayed_retirement": Task("How does delaying retirement affect the economy?", "pension",
                               _s("olg", ("pension",), n=1000), ("pension",), "gdp_growth",
                               "IMF rule (retirement age and contribution track the debt ratio)"),
    "personal_pension": Task("Do personal pension accounts improve old-age security?", "pension",
                             _s("olg", ("pension",), n=1000), ("pension",), "welfare", "IMF rule"),
    "population_aging": Task("How does population ageing shape income, consumption and growth?", "pension",
                             _s("olg", ("pension",), n=1000), ("pension",), "gdp_growth", "IMF rule",
                             params={"birth_rate": 0.008}),
    "pension_gap": Task("How can a pension authority close the pension funding gap?", "pension",
                        _s("olg", ("pension",), n=1000, objectives={"pension": "pension_gap"}), ("pension",),
                        "pension_fund", "IMF rule"),
    "pension_across_countries": Task("How do pension systems (retirement age, benefit rate) compare across "
                                     "countries?", "pension", _s("olg", ("pension",), n=1000), ("pension",),
                                     "gdp_growth", "IMF rule from retirement at 62, benefits at 70%",
                                     params={"retire_age": 62.0, "pension_rate": 0.7}),
    # fiscal
    "consumption_tax": Task("Can a consumption tax boost growth and fairness?", "fiscal", _s(),
                            ("fiscal",), "gdp_growth", "Saez government with a 7% consumption tax",
                            params={"consumption_tax": 0.07}, rule_society=SAEZ),
    "estate_tax": Task("How does an inheritance tax shape the wealth distribution?", "fiscal",
                       _s("olg", ("fiscal",), objectives={"fiscal": "gdp_gini"}), ("fiscal",), "wealth_gini",
                       "calibrated HSV schedule with a 15% estate tax above 13.61M", params={"estate_tax": 0.15}),
    "universal_basic_income": Task("Does a universal basic income improve equity?", "fiscal",
                                   _s("olg", objectives={"fiscal": "gdp_gini"}), ("fiscal",), "income_gini",
                                   "calibrated HSV schedule paying 2,000 a year to everyone",
                                   params={"ubi": 2000.0}),
    "optimal_tax": Task("Which income and wealth tax maximises growth (against Saez and US brackets)?", "fiscal",
                        _s(), ("fiscal",), "gdp_growth", "Saez government", params={"alpha": 0.25},
                        rule_society=SAEZ),
    "wealth_tax": Task("How does a wealth tax affect wealth concentration?", "fiscal",
                       _s(objectives={"fiscal": "gdp_gini"}), ("fiscal",), "wealth_gini",
                       "calibrated HSV income schedule with a flat 10% wealth tax",
                       params={"init_fiscal": [0.263, 0.049, 0.05, 0.0, 0.189]}),
    # monetary
    "negative_interest": Task("How effective are negative interest rates?", "monetary",
                              _s(governments=("central_bank",)), ("central_bank",), "gdp_growth",
                              "Taylor rule (floored at 0)", params={"alpha": 0.25, "tfp": 10.0}),
    "inflation_control": Task("How should monetary policy control inflation?", "monetary",
                              _s(governments=("central_bank",), bank="commercial"), ("central_bank", "bank"),
                              "inflation_gap", "Taylor rule and spread-setting bank"),
    "QE": Task("What are the long-run effects of quantitative easing?", "monetary",
               _s(governments=("central_bank",), bank="commercial"), ("central_bank",), "gdp_growth",
               "Taylor rule"),
    "optimal_monetary": Task("How should policy and bank rate spreads be set?", "monetary",
                             _s(governments=("central_bank",), bank="commercial"), ("central_bank", "bank"),
                             "welfare", "Taylor rule and spread-setting bank", params={"alpha": 0.25, "tfp": 10.0}),
    "dbl_government": Task("How should monetary and fiscal policy be coordinated?", "monetary",
                           _s(governments=("central_bank", "fiscal")), ("central_bank", "fiscal"), "gdp_growth",
                           "Taylor rule and calibrated HSV schedule"),
    # market competition
    "technology": Task("How does technology drive long-run growth?", "market",
                       _s("olg", n=1000, tax_schedule="us_federal"), ("fiscal",), "gdp_growth",
                       "US federal brackets with TFP growing twice as fast", params={"sigma_z": 0.0076}),
    "monopoly": Task("How does a monopoly affect resources and welfare?", "market",
                     _s(bank="commercial", market="monopoly", **SAEZ), ("firm", "bank"), "welfare",
                     "price at twice TFP, wage at the marginal product, spread-setting bank"),
    "oligopoly": Task("Do learning oligopolists collude?", "market", _s(market="oligopoly", num_firms=2, **SAEZ),
                      ("firm",), "welfare", "price at 1.35 x TFP, wage at the marginal product"),
    "monopolistic_competition": Task("How does product diversity affect welfare?", "market",
                                     _s(market="monopolistic_competition", num_firms=10, tax_schedule="us_federal"),
                                     ("firm",), "welfare", "price at 1.2 x TFP, wage at the marginal product"),
    "market_type": Task("How do market structures shape consumer welfare?", "market",
                        _s(market="oligopoly", num_firms=2), ("fiscal",), "welfare",
                        "calibrated HSV schedule under an oligopoly of rule firms"),
    # individual decisions
    "age_consumption": Task("How does age shape consumption?", "individual",
                            _s("olg", ("pension",), "commercial"), ("household",), "welfare",
                            "rule households (saving by age band)"),
    "asset_allocation": Task("How does allocating wealth to a risky asset affect wealth?", "individual",
                             _s("ramsey_risk_invest", bank="commercial", **SAEZ), ("household",), "welfare",
                             "rule households (risky share 30%)"),
    "work_hard": Task("Does a long-hours work culture raise utility and output?", "individual",
                      _s("olg", n=1000), ("household",), "welfare", "rule households (half-time work on average)"),
    "work_life_well_being": Task("How does work-life balance affect well-being?", "individual",
                                 _s(governments=("pension",)), ("household",), "welfare", "rule households"),
    "over_leveraged_consumption": Task("How does consuming ahead of income affect the economy?", "individual",
                                       _s("olg", ("pension",), "commercial"), ("household",), "welfare",
                                       "rule households that consume ahead of income", advance_consumption=True),
    # others in EconGym's cfg folder
    "KS_model": Task("Krusell-Smith economy: how do households save under aggregate risk?", "other",
                     _s(), ("household",), "welfare", "rule households", params={"tfp": 10.0, "depreciation": 0.0}),
    "real_society": Task("A calibrated society under US federal taxes: what does learning policy change?", "other",
                         _s(n=1000, tax_schedule="us_federal"), ("fiscal",), "gdp_growth", "US federal brackets"),
    "tre_government": Task("How do fiscal, pension and monetary authorities coordinate?", "multi-government",
                           _s(governments=("central_bank", "fiscal", "pension"), market="oligopoly", num_firms=2),
                           ("central_bank", "fiscal"), "gdp_growth", "Taylor rule, HSV schedule and IMF rule"),
}


class EconGymTask(ScriptedRoles):
    """The environment of a task: ``Society`` with the task's settings, every role that
    does not learn acting by EconGym's rule (``ScriptedRoles``). The rule baseline is
    ``rule_env().rule_actions``.

    Args:
        task: a key of ``TASKS``.
        num_households: overrides the task's household count (10^3 .. 10^6 and beyond).
        learn: overrides the learning roles (a non-empty tuple of role names).
        horizon: years per episode (EconGym's 300).
        rng: as ``Society``'s.
        rule_economy: build the economy of the rule baseline (``Task.rule_society``).
        params: ``SocietyParams`` overrides on top of the task's (e.g. ``{"saez_period": 5}``).
    """

    def __init__(self, task: str = "optimal_tax", num_households: int | None = None, learn=None,
                 horizon: int = 300, rng: str = "hash", rule_economy: bool = False, params: dict | None = None):
        if task not in TASKS:
            raise ValueError(f"task must be one of {sorted(TASKS)}, got {task!r}")
        spec = TASKS[task]
        kwargs = {**spec.society, **(spec.rule_society if rule_economy else {})}
        if num_households is not None:
            kwargs["num_households"] = num_households
        gini = METRICS[spec.metric][0] in ("wealth_gini", "income_gini")
        env = Society(**kwargs, horizon=horizon, rng=rng, params={**spec.params, **dict(params or {})},
                      inequality=gini)
        learners = tuple(spec.learn if learn is None else learn)
        unknown = [r for r in learners if r not in env.roles]
        if not learners:
            raise ValueError("learn must name at least one role (the rule baseline is rule_actions())")
        if unknown:
            raise ValueError(f"learn roles {unknown} are not roles of task {task!r}; roles: {sorted(env.roles)}")
        scripted = tuple(r for r in env.roles if r not in learners)
        super().__init__(env, rule_policies(env, scripted, spec.advance_consumption))
        self.task, self.spec = task, spec
        self._learner_rules = rule_policies(env, learners, spec.advance_consumption)
        self._rebuild = dict(task=task, num_households=num_households, learn=learn, horizon=horizon, rng=rng,
                             params=params)
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

