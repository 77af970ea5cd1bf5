"""Our 28 EconGym tasks against EconGym's own task files, field by field.

``data/econgym_task_configs.json`` holds every ``cfg/<task>.yaml`` of EconGym (commit
d81cd5d) as its ``utils/config.py:load_config`` merges it (recorded in EconGym's tree by
``econgym_reference/record_task_configs.py``). Each task's fields -- which roles exist,
their types and parameters, who learns (PPO/DDPG/SAC there), what the others are
(rules, the Saez or US federal government, behaviour-cloned households), the market,
the bank, the taxes, the episode length -- are read from that file and from the
economy our task builds (``tasks.econgym_view``), and must be equal. Our own variants
(``*_ours``) are checked to differ from EconGym's task only where they say.
"""

from __future__ import annotations

import json
import os

import pytest

from jaxagents_environments.economy.econgym.tasks import ECONGYM_TASKS, OUR_VARIANTS, TASKS, econgym_view

DATA = os.path.join(os.path.dirname(__file__), "data", "econgym_task_configs.json")
RL = ("ppo", "ddpg", "sac", "maddpg")
GOV_PARAMS = ("tau", "xi", "tau_a", "xi_a", "Gt_prob", "retire_age", "contribution_rate", "pension_growth_rate",
              "base_interest_rate", "reserve_ratio", "real_gdp", "real_debt_rate", "real_population")
HH_PARAMS = ("households_n", "CRRA", "IFE", "h_max", "e_p", "e_q", "rho_e", "sigma_e", "super_e", "stock_alpha",
             "at_min")
# Where no field can differ: a field EconGym's code reads from the task file and ours
# has no counterpart for is listed here with the reason, and nowhere else.
NOT_COMPARED = {
    "bank.reserve_ratio": "EconGym's bank overwrites it with the main government's before first use",
    "government.central_bank.gov_task": "the central bank's reward is its inflation-and-growth score",
}

# The one field we cannot follow: EconGym's monopolist in its monopoly task is a
# language model (``agents/llm``); ours acts by EconGym's rule firm.
KNOWN = {"monopoly": ["market.alg: ours 'rule', EconGym's 'llm'"]}


def _alg(name):
    return "learn" if name in RL else {"rule_based": "rule"}.get(name, name)


def econgym_fields(cfg: dict) -> dict:
    """EconGym's merged task file as ``{field: value}`` (``tasks.econgym_view``'s fields)."""
    env, trainer = cfg["Environment"], cfg["Trainer"]
    core = env["env_core"]
    out = {"episode_length": int(core["episode_length"])}
    for k in ("consumption_tax_rate", "estate_tax_rate", "estate_tax_exemption"):
        out[k] = float(core[k])
    govs = []
    for ent in env["Entities"]:
        name, args = ent["entity_name"], ent["entity_args"]
        p = args["params"]
        kind = p["type"]
        if name == "households":
            out["households.type"] = kind
            out["households.alg"] = _alg(trainer["house_alg"])
            for k in HH_PARAMS:
                out[f"households.{k}"] = int(p[k]) if k == "households_n" else float(p[k])
            out["households.birth_rate"] = float(args["OLG"]["birth_rate"])
            out["households.initial_working_age"] = float(args["OLG"]["initial_working_age"])
            out["households.BUI"] = float(p.get("BUI", 0.0))
            out["households.range"] = [float(v) for v in p["real_action_min"] + p["real_action_max"]]
        elif name == "government":
            govs.append(kind)
            k = f"government.{kind}"
            out[f"{k}.alg"] = _alg(trainer.get(f"{kind}_gov_alg", trainer["gov_alg"]))
            for g in GOV_PARAMS:
                out[f"{k}.{g}"] = float(p[g])
            if kind != "central_bank":
                out[f"{k}.gov_task"] = p["gov_task"]
            sub = args[kind]
            out[f"{k}.range"] = [float(v) for v in sub["real_action_min"] + sub["real_action_max"]]
        elif name == "market":
            out["market.type"] = kind
            out["market.firm_n"] = int(args[kind]["firm_n"])
            for ours, theirs in (("alpha", "alpha"), ("Z", "Z"), ("sigma_z", "sigma_z"), ("epsilon", "epsilon")):
                out[f"market.{ours}"] = float(p[theirs])
            if kind != "perfect":
                out["market.alg"] = _alg(trainer["firm_alg"])
        elif name == "bank":
            out["bank.type"] = kind
            for k in ("base_interest_rate", "lending_rate", "deposit_rate", "depreciation_rate"):
                out[f"bank.{k}"] = float(p[k])
            if kind == "commercial":
                out["bank.alg"] = _alg(trainer["bank_alg"])
                out["bank.range"] = [float(v) for v in p["real_action_min"] + p["real_action_max"]]
    out["government.types"] = govs
    return out


@pytest.fixture(scope="module")
def files():
    with open(DATA) as f:
        return json.load(f)["tasks"]


def _differences(ours: dict, theirs: dict) -> list[str]:
    out = []
    for k in sorted(set(ours) | set(theirs)):
        if k in NOT_COMPARED:
            continue
        a, b = ours.get(k, "<absent>"), theirs.get(k, "<absent>")
        if isinstance(a, float) and isinstance(b, float):
            same = abs(a - b) <= 1e-6 * max(abs(a), abs(b), 1e-12)
        elif isinstance(a, list) and isinstance(b, list) and all(isinstance(x, float) for x in a + b):
            same = len(a) == len(b) and all(abs(x - y) <= 1e-6 * max(abs(x), abs(y), 1e-12) for x, y in zip(a, b))
        else:
            same = a == b
        if not same:
            out.append(f"{k}: ours {a!r}, EconGym's {b!r}")
    return out


def test_every_econgym_task_file_is_a_task(files):
    assert set(files) == set(ECONGYM_TASKS), "the recording and our catalogue must name the same 28 tasks"
    assert len(files) == 28


@pytest.mark.parametrize("task", sorted(ECONGYM_TASKS))
def test_task_equals_econgyms_task_file(files, task):
    diffs = _differences(econgym_view(task), econgym_fields(files[task]))
    assert diffs == KNOWN.get(task, []), f"{task}: " + "; ".join(diffs)


@pytest.mark.parametrize("variant", sorted(OUR_VARIANTS))
def test_our_variants_say_what_they_change(files, variant):
    base = variant.removesuffix("_ours")
    assert base in ECONGYM_TASKS and TASKS[variant].ours, variant
    spec, theirs = TASKS[variant], TASKS[base]
    assert (spec.learn, spec.society, spec.params) != (theirs.learn, theirs.society, theirs.params), \
        f"{variant} is EconGym's {base}"
