"""Record EconGym's numpy economic society for fixed actions, as parity test data.

Runs in the separate venv made by ``setup_venv.sh`` (numpy, pandas, gymnasium, omegaconf),
never in the jaxagents environment. EconGym's modules are imported from the tree given by
``--econgym`` and called unchanged; the only instrumentation is instance-level wrappers
that copy values out (action clipping, the market step entry, the OLG death draw, the
newborn draw, the estate tax) and then call the original method.

Usage (from the jaxagents repo root):
    VENV/bin/python tests/environments/economy/econgym_reference/record_econgym.py \
        --econgym VENV/econgym --out tests/environments/economy/data/econgym_reference.npz

Key scheme of the npz (every array float64, shapes as EconGym keeps them):
    meta                                  JSON string (scenarios, steps, commit, command, ...)
    {sc}/config/{entity}.{name}           numeric config values actually used
    {sc}/init/{role}.obs                  observations returned by env.reset()
    {sc}/init/society.ini_*_gini          the Ginis reset() computes
    {sc}/0/pre/{entity}.{attr}            state right after env.reset() = before step 0;
                                          before step t >= 1 it is {sc}/{t-1}/post (checked
                                          identical by the recorder, so not stored twice)
    {sc}/{t}/act/{role}.passed            action array as passed to env.step
    {sc}/{t}/act/{role}.clipped           output of EconomicSociety.check_agent_action
    {sc}/{t}/mid/{entity}.{attr}          after get_actions, before market.step
    {sc}/{t}/prede/households.{attr}      OLG, t>0: after age += 1, before deaths/births
    {sc}/{t}/demog/{name}                 OLG, t>0: deaths, newborns, estate tax
    {sc}/{t}/post/{entity}.{attr}         state after step t
    {sc}/{t}/post/{role}.reward, {role}.obs   rewards and observations env.step returned
Entities / roles: households, market, bank, society, government.{tax|pension|central_bank};
split a key's last component with rsplit(".", 1) into entity and attribute. Missing attributes are not written
(e.g. income_tax before the first step); None actions (perfect market, non_profit bank)
have no act keys.
"""
import argparse
import json
import os
import sys

import numpy as np

ECONGYM_COMMIT = "d81cd5de66db2e00e40eb5fb5dd243741da5525f"
N_STEPS = 8
HOUSEHOLDS_N = 40

# ----------------------------------------------------------------------------------
# Scenarios: an overlay written like one of EconGym's cfg/<task>.yaml files, merged
# onto cfg/base_config.yaml the way utils/config.py:load_config merges a task file
# (dbl_government: load_config('dbl_government'), which skips base_config, then the
# overlay merged onto that the same way).
# ----------------------------------------------------------------------------------


def _ent(name, params=None, **sections):
    args = {"params": dict(params or {})}
    args.update(sections)
    return {"entity_name": name, "entity_args": args}


def _overlay(env_core=None, gov=None, hh=None, market=None, bank=None, gov_sections=None,
             hh_sections=None, market_sections=None):
    entities = []
    if gov is not None:
        entities.append(_ent("government", gov, **(gov_sections or {})))
    if hh is not None:
        entities.append(_ent("households", hh, **(hh_sections or {})))
    if market is not None:
        entities.append(_ent("market", market, **(market_sections or {})))
    if bank is not None:
        entities.append(_ent("bank", bank))
    core = {"episode_length": N_STEPS}
    core.update(env_core or {})
    return {"Environment": {"env_core": core, "Entities": entities}}


SCENARIOS = {
    "ramsey_tax": dict(
        seed=101,
        overlay=_overlay(gov={"type": "tax", "tax_type": "ai_agent"},
                         hh={"type": "ramsey", "households_n": HOUSEHOLDS_N},
                         market={"type": "perfect"}, bank={"type": "non_profit"})),
    "olg_pension": dict(
        seed=102,
        overlay=_overlay(
            env_core={"consumption_tax_rate": 0.05, "estate_tax_rate": 0.2,
                      "estate_tax_exemption": 1e5},
            gov={"type": "pension"},
            # birth_rate 0.05: int(40 * 0.011) == 0, so EconGym's default rate gives no
            # births at 40 households; 0.05 gives int(N * 0.05) = 1..2 newborns a step.
            hh={"type": "OLG", "households_n": HOUSEHOLDS_N},
            hh_sections={"OLG": {"birth_rate": 0.05, "initial_working_age": 24}},
            market={"type": "perfect"}, bank={"type": "non_profit"})),
    "ramsey_cb_commercial": dict(
        seed=103,
        overlay=_overlay(gov={"type": "central_bank"},
                         hh={"type": "ramsey", "households_n": HOUSEHOLDS_N},
                         market={"type": "perfect"}, bank={"type": "commercial"})),
    "ramsey_tax_monopoly": dict(
        seed=104,
        overlay=_overlay(gov={"type": "tax", "tax_type": "ai_agent"},
                         hh={"type": "ramsey", "households_n": HOUSEHOLDS_N},
                         market={"type": "monopoly"}, market_sections={"monopoly": {"firm_n": 1}},
                         bank={"type": "non_profit"})),
    "ramsey_tax_oligopoly": dict(
        seed=105,
        overlay=_overlay(gov={"type": "tax", "tax_type": "ai_agent"},
                         hh={"type": "ramsey", "households_n": HOUSEHOLDS_N},
                         market={"type": "oligopoly"}, market_sections={"oligopoly": {"firm_n": 2}},
                         bank={"type": "commercial"})),
    "olg_tax_monopolistic": dict(
        seed=106,
        # EconGym's default OLG birth_rate 0.011: no births at 40 households, so deaths
        # take the "no newborns: spread the inheritance over survivors" branch.
        overlay=_overlay(gov={"type": "tax", "tax_type": "ai_agent"},
                         hh={"type": "OLG", "households_n": HOUSEHOLDS_N},
                         market={"type": "monopolistic_competition"},
                         market_sections={"monopolistic_competition": {"firm_n": 5}},
                         bank={"type": "non_profit"})),
    "ramsey_risk_invest": dict(
        seed=107,
        overlay=_overlay(gov={"type": "tax", "tax_type": "ai_agent"},
                         hh={"type": "ramsey_risk_invest", "households_n": HOUSEHOLDS_N},
                         market={"type": "perfect"}, bank={"type": "non_profit"})),
    "dbl_government": dict(
        seed=108, task="dbl_government",
        overlay=_overlay(hh={"households_n": HOUSEHOLDS_N})),
}


def build_config(spec):
    """Merged config, the way EconGym's utils/config.py:load_config merges a task file."""
    from omegaconf import OmegaConf
    from utils.config import deep_merge_entities, load_config

    if "task" in spec:
        base_cfg = load_config(spec["task"])
    else:
        base_cfg = OmegaConf.load("cfg/base_config.yaml")
    scene_cfg = OmegaConf.create(spec["overlay"])
    cfg = OmegaConf.merge(base_cfg, scene_cfg)
    base_entities = OmegaConf.to_container(base_cfg.Environment.Entities, resolve=True)
    override_entities = OmegaConf.to_container(scene_cfg.Environment.Entities, resolve=True)
    cfg.Environment.Entities = OmegaConf.create(deep_merge_entities(base_entities, override_entities))
    if "task" not in spec:
        cfg.Environment.env_core.problem_scene = spec["name"]
    return cfg


# ----------------------------------------------------------------------------------
# What is recorded
# ----------------------------------------------------------------------------------
# State (pre at t=0, post at every t). pre(t) for t >= 1 is not stored: nothing runs
# between env.step returning (post(t-1) snapshot) and the next call, and the recorder
# checks the two snapshots are identical before dropping the copy.
HOUSEHOLD_STATE = [
    "households_n", "at", "at_next", "savings", "e", "e_array", "age", "working_years",
    "accumulated_pension_account", "stock_holdings", "stock_price", "risky_income", "income",
    "ht", "income_tax", "asset_tax", "post_income", "post_asset", "pension", "consumption",
    "final_consumption", "estate_tax", "old_n", "is_old",
]
MARKET_STATE = ["Kt", "Kt_next", "Zt", "price", "WageRate", "Lt", "firm_labor_j", "Yt_j",
                "MarketClear_WageRate", "MarketClear_InterestRate"]
GOV_STATE = ["Bt", "Bt_next", "GDP", "per_household_gdp", "pension_fund", "Gt_prob_j",
             "gov_spending", "tax_array", "growth_rate"]
# Policy attributes a government type sets from its action; the others stay at their
# config (params) values for the whole run and are only in {sc}/config.
GOV_POLICY = {"tax": ["tau", "xi", "tau_a", "xi_a", "Gt_prob"],
              "pension": ["retire_age", "contribution_rate", "current_net_households_pension"],
              "central_bank": ["base_interest_rate", "reserve_ratio"]}
BANK_STATE = ["current_account", "lending_rate", "deposit_rate", "reserve_ratio",
              "base_interest_rate", "profit"]
SOCIETY_STATE = ["last_price_index", "price_index", "inflation_rate",
                 "wealth_gini", "income_gini", "real_deals", "done"]
# After get_actions, before market.step: what get_action computes that is not a plain
# copy of the clipped action (e is redrawn; bank rates may be clipped around the base rate).
HOUSEHOLD_MID = ["e", "e_array", "h_ij_ratio", "c_ij_ratio"]
GOV_MID = ["Gt_prob_j"]
BANK_MID = ["lending_rate", "deposit_rate"]
# OLG, t > 0: households after `age += 1`, before deaths are removed / newborns appended.
HOUSEHOLD_PREDE = [
    "households_n", "age", "at", "e", "at_next", "income", "e_array",
    "accumulated_pension_account", "working_years", "stock_holdings", "ht", "consumption",
    "final_consumption", "income_tax", "asset_tax", "pension", "post_income", "post_asset",
    "risky_income", "savings", "is_old", "old_n",
]


def f64(value):
    return np.array(value, dtype=np.float64)


def snapshot_entity(out, prefix, entity_name, obj, attrs):
    for attr in attrs:
        value = getattr(obj, attr, None)
        if attr in ("h_ij_ratio", "c_ij_ratio") and np.ndim(value) == 0:
            continue  # firm_n == 1: EconGym sets the plain scalar 1
        if value is not None:
            out[f"{prefix}/{entity_name}.{attr}"] = f64(value)
    return out


def snapshot_state(prefix, env, mid=False):
    out = {}
    snapshot_entity(out, prefix, "households", env.households, HOUSEHOLD_MID if mid else HOUSEHOLD_STATE)
    if not mid:
        snapshot_entity(out, prefix, "market", env.market, MARKET_STATE)
    for gov_type, gov in env.government.items():
        attrs = GOV_MID if mid else GOV_STATE + GOV_POLICY[gov_type]
        snapshot_entity(out, prefix, f"government.{gov_type}", gov, attrs)
    snapshot_entity(out, prefix, "bank", env.bank, BANK_MID if mid else BANK_STATE)
    if not mid:
        snapshot_entity(out, prefix, "society", env, SOCIETY_STATE)
    return out


def same_snapshot(a, prefix_a, b, prefix_b):
    """Identical keys (after the prefix) and bitwise-equal values (NaN == NaN)."""
    ra = {k[len(prefix_a):]: v for k, v in a.items()}
    rb = {k[len(prefix_b):]: v for k, v in b.items()}
    if ra.keys() != rb.keys():
        return False
    return all(ra[k].shape == rb[k].shape and np.array_equal(ra[k], rb[k], equal_nan=True) for k in ra)


class Recorder:
    def __init__(self):
        self.data = {}

    def put(self, key, value):
        if key in self.data:
            raise KeyError(f"duplicate key {key}")
        self.data[key] = f64(value)

    def put_all(self, mapping):
        for key, value in mapping.items():
            self.put(key, value)

    def roles(self, prefix, kind, per_role):
        """per_role: {'households': x, 'government': {type: x}, 'market': x, 'bank': x}."""
        for role, value in per_role.items():
            if isinstance(value, dict):
                for sub, sub_value in value.items():
                    if sub_value is not None:
                        self.put(f"{prefix}/{role}.{sub}.{kind}", sub_value)
            elif value is not None:
                self.put(f"{prefix}/{role}.{kind}", value)


# ----------------------------------------------------------------------------------
# Fixed action draws (own Generators; EconGym's np.random stream is left alone)
# ----------------------------------------------------------------------------------
class ActionDrawer:
    def __init__(self, seed):
        self.rng = {role: np.random.default_rng([seed, i])
                    for i, role in enumerate(["households", "government", "market", "bank"])}

    def households(self, env, t):
        h, firm_n = env.households, env.market.firm_n
        n = h.households_n
        rng = self.rng["households"]
        cols = [rng.uniform(-0.1, 0.7, n),   # savings share (real range [-0.5, 1])
                rng.uniform(0.3, 1.1, n)]    # labour share of h_max (> 1 is clipped to 1)
        if "risk_invest" in h.type:
            cols.append(rng.uniform(0.0, 0.5, n))  # risky investment share
        if firm_n > 1:
            cols.append(rng.uniform(0.0, 1.0, n))  # firm index value, firm = int(v * firm_n)
            for _ in range(firm_n):
                cols.append(rng.uniform(0.0, 1.0, n))  # consumption split weights
        return np.stack(cols, axis=1)

    def government(self, env, t):
        firm_n = env.market.firm_n
        rng = self.rng["government"]
        out = {}
        for gov_type, gov in env.government.items():
            if gov_type == "tax":
                a = [rng.uniform(0.15, 0.35), rng.uniform(0.0, 0.06), rng.uniform(0.0, 0.02),
                     rng.uniform(0.0, 0.005), rng.uniform(0.1, 0.3)]
                if gov.action_dim > gov.policy_action_len:
                    a += list(rng.uniform(0.0, 1.0, firm_n))
            elif gov_type == "pension":
                retire_age = rng.uniform(62.0, 68.0)
                if t % 2 == 0:  # integer ages hit the annuity table, others its default (56)
                    retire_age = float(np.round(retire_age))
                a = [retire_age, rng.uniform(0.05, 0.2)]
            elif gov_type == "central_bank":
                a = [rng.uniform(0.0, 0.06), rng.uniform(0.05, 0.15)]
            else:
                raise ValueError(gov_type)
            out[gov_type] = np.array(a, dtype=np.float64)
        return out

    def market(self, env, t, hh_action):
        m = env.market
        if m.action_dim == 0:
            return None
        rng = self.rng["market"]
        firm_n = m.firm_n
        price = rng.uniform(0.8, 1.2, firm_n)
        # Estimate of the market-clearing wage for these household actions: the firm's
        # labour from the drawn hours and the current (pre-redraw) abilities.
        h = env.households
        hours = np.clip(hh_action[:, 1], 0.0, 1.0) * h.h_max
        if firm_n > 1:
            firm = np.clip((hh_action[:, -firm_n - 1] * firm_n).astype(int), 0, firm_n - 1)
        else:
            firm = np.zeros(len(hours), dtype=int)
        labour = np.bincount(firm, weights=hours * h.e.ravel(), minlength=firm_n)
        labour = np.where(labour > 0, labour, max(labour.sum(), 1.0) / firm_n)
        capital = np.clip(m.Kt_next.ravel(), 1e-8, None)
        wage_clear = price * m.Zt.ravel() * (1 - m.alpha) * (capital / labour) ** m.alpha
        wage = wage_clear * rng.uniform(0.8, 1.2, firm_n)
        return np.stack([price, wage], axis=1)

    def bank(self, env, t):
        if env.bank.action_dim == 0:
            return None
        rng = self.rng["bank"]
        return np.array([rng.uniform(0.03, 0.08), rng.uniform(0.0, 0.03)])


# ----------------------------------------------------------------------------------
# Recording one scenario
# ----------------------------------------------------------------------------------
def numeric_config(cfg):
    """{entity.key: value} for every numeric scalar/list in env_core, params, active type."""
    from omegaconf import OmegaConf

    out = {}

    def add(prefix, mapping):
        for key, value in mapping.items():
            if isinstance(value, bool) or value is None:
                continue
            if isinstance(value, (int, float)):
                out[f"{prefix}.{key}"] = float(value)
            elif isinstance(value, list) and value and all(
                    isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
                out[f"{prefix}.{key}"] = [float(v) for v in value]

    env_cfg = OmegaConf.to_container(cfg.Environment, resolve=True)
    add("env_core", env_cfg["env_core"])
    for ent in env_cfg["Entities"]:
        name = ent["entity_name"]
        args = ent["entity_args"]
        kind = args["params"]["type"]
        if name == "government":
            name = f"government.{kind}"
        add(name, args["params"])
        if kind in args:
            add(name, {f"{kind}.{k}": v for k, v in args[kind].items()
                       if not isinstance(v, dict) and k != "initial_action"})
        if "OLG" in args and "OLG" in kind:
            add(name, {f"OLG.{k}": v for k, v in args["OLG"].items()})
    return out, env_cfg


def record_scenario(name, spec, rec):
    from env.env_core import EconomicSociety

    spec = dict(spec, name=name)
    cfg = build_config(spec)
    nums, env_cfg = numeric_config(cfg)
    rec.put(f"{name}/config/seed", spec["seed"])
    for key, value in nums.items():
        rec.put(f"{name}/config/{key}", value)

    np.random.seed(spec["seed"])
    env = EconomicSociety(cfg["Environment"])
    obs = env.reset()
    hh = env.households

    rec.put(f"{name}/config/households.effective_real_action_min", hh.real_action_min)
    rec.put(f"{name}/config/households.effective_real_action_max", hh.real_action_max)
    rec.put(f"{name}/config/households.effective_action_dim", hh.action_dim)
    rec.put(f"{name}/config/market.effective_firm_n", env.market.firm_n)
    rec.put(f"{name}/config/households.e_0", hh.e_0)
    rec.put(f"{name}/config/households.e_array_0", hh.e_array_0)
    for gov_type, gov in env.government.items():
        rec.put(f"{name}/config/government.{gov_type}.effective_action_dim", gov.action_dim)
        rec.put(f"{name}/config/government.{gov_type}.effective_real_action_min", gov.real_action_min)
        rec.put(f"{name}/config/government.{gov_type}.effective_real_action_max", gov.real_action_max)

    rec.roles(f"{name}/init", "obs", obs)
    # The state right after reset() is {name}/0/pre (nothing runs in between).
    rec.put(f"{name}/init/society.ini_wealth_gini", env.ini_wealth_gini)
    rec.put(f"{name}/init/society.ini_income_gini", env.ini_income_gini)

    # ---- instance-level wrappers: copy values out, then call the original ----------
    step_ctx = {}

    orig_action_wrapper = env.action_wrapper

    def action_wrapper(action_dict):
        out = orig_action_wrapper(action_dict)
        step_ctx["clipped"] = out
        return out

    env.action_wrapper = action_wrapper

    orig_market_step = env.market.step

    def market_step(society):
        rec.put_all(snapshot_state(f"{name}/{step_ctx['t']}/mid", society, mid=True))
        return orig_market_step(society)

    env.market.step = market_step

    orig_deaths = hh.sample_deaths_by_probability

    def sample_deaths(age_array, max_age=102):
        t = step_ctx["t"]
        rec.put_all(snapshot_entity({}, f"{name}/{t}/prede", "households", hh, HOUSEHOLD_PREDE))
        die_total, idx = orig_deaths(age_array=age_array, max_age=max_age)
        demog = step_ctx.setdefault("demog", {})
        demog["households_n_before"] = hh.households_n
        demog["born_n"] = int(hh.households_n * hh.entity_args["OLG"].birth_rate)
        demog["die_total"] = die_total
        demog["die_idx"] = np.asarray(idx, dtype=np.float64)
        demog["death_prob"] = hh.calculate_death_probability(np.asarray(age_array).flatten())
        return die_total, idx

    orig_newborn = hh.select_newborn_data

    def select_newborn(born_n):
        e_array, pension_acc = orig_newborn(born_n)
        demog = step_ctx.setdefault("demog", {})
        demog["newborn_e_array"] = e_array  # EconGym assigns the second output (zeros) to `ht`
        return e_array, pension_acc

    orig_estate = hh.compute_estate_tax

    def estate(die_n, society):
        total_inherited, estate_tax = orig_estate(die_n, society)
        demog = step_ctx.setdefault("demog", {})
        demog["total_wealth_deceased"] = total_inherited
        demog["estate_tax"] = estate_tax
        demog["deceased_stock_value"] = np.sum(hh.stock_holdings[demog["die_idx"].astype(int)]
                                               * hh.stock_price)
        return total_inherited, estate_tax

    if "OLG" in hh.type:
        hh.sample_deaths_by_probability = sample_deaths
        hh.select_newborn_data = select_newborn
        hh.compute_estate_tax = estate

    drawer = ActionDrawer(spec["seed"])
    steps_done, terminated_early, error = 0, False, None
    last_post = None
    for t in range(N_STEPS):
        step_ctx.clear()
        step_ctx["t"] = t
        pre = snapshot_state(f"{name}/{t}/pre", env)
        if t == 0:
            rec.put_all(pre)
        elif not same_snapshot(pre, f"{name}/{t}/pre/", last_post, f"{name}/{t - 1}/post/"):
            raise AssertionError(f"{name}: pre({t}) differs from post({t - 1})")

        hh_action = drawer.households(env, t)
        actions = {
            "households": hh_action,
            "government": drawer.government(env, t),
            "market": drawer.market(env, t, hh_action),
            "bank": drawer.bank(env, t),
        }
        rec.roles(f"{name}/{t}/act", "passed", actions)
        try:
            next_obs, rewards, done = env.step(actions, t)
        except Exception as exc:  # recorded up to the failing step
            error = f"step {t}: {type(exc).__name__}: {exc}"
            terminated_early = True
            break
        rec.roles(f"{name}/{t}/act", "clipped", step_ctx["clipped"])
        last_post = snapshot_state(f"{name}/{t}/post", env)
        rec.put_all(last_post)
        rec.roles(f"{name}/{t}/post", "obs", next_obs)
        rec.roles(f"{name}/{t}/post", "reward", rewards)
        demog = step_ctx.get("demog")
        if demog is not None:
            born_n = demog["born_n"]
            if born_n > 0:  # the newborn rows are the last born_n rows of the post arrays
                demog["newborn_e"] = hh.e[-born_n:]  # drawn from the data's EDUC column
            for key, value in demog.items():
                rec.put(f"{name}/{t}/demog/{key}", value)
        steps_done = t + 1
        if done:
            if t + 1 < N_STEPS:
                terminated_early = True
            break

    info = {
        "seed": spec["seed"],
        "households_type": hh.type,
        "government_types": list(env.government.keys()),
        "main_government": next(iter(env.government)),
        "market_type": env.market.type,
        "firm_n": int(env.market.firm_n),
        "bank_type": env.bank.type,
        "steps_recorded": steps_done,
        "terminated_early": terminated_early,
        "error": error,
        "final_done": bool(env.done),
        "households_n_final": int(hh.households_n),
        "config": env_cfg,
    }
    return info


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--econgym", required=True, help="EconGym source tree (pinned commit)")
    parser.add_argument("--out", required=True, help="output .npz")
    parser.add_argument("--scenarios", nargs="*", default=None, help="subset (default: all)")
    args = parser.parse_args()

    out = os.path.abspath(args.out)
    econgym = os.path.abspath(args.econgym)
    # Households read agents/data/... relative to the working directory.
    os.chdir(econgym)
    sys.path.insert(0, econgym)

    rec = Recorder()
    names = args.scenarios or list(SCENARIOS)
    infos = {}
    for name in names:
        infos[name] = record_scenario(name, SCENARIOS[name], rec)
        i = infos[name]
        print(f"{name:24s} steps={i['steps_recorded']} terminated_early={i['terminated_early']} "
              f"done={i['final_done']} N_final={i['households_n_final']}"
              + (f" error={i['error']}" if i["error"] else ""))

    import gymnasium
    import omegaconf
    import pandas
    meta = {
        "econgym_commit": ECONGYM_COMMIT,
        "n_steps": N_STEPS,
        "households_n": HOUSEHOLDS_N,
        "scenarios": names,
        "scenario_info": infos,
        "versions": {"python": sys.version.split()[0], "numpy": np.__version__,
                     "pandas": pandas.__version__, "gymnasium": gymnasium.__version__,
                     "omegaconf": omegaconf.__version__},
        "key_scheme": "{scenario}/{t}/{pre|act|mid|prede|demog|post}/{entity}.{attr}; "
                      "{scenario}/init/...; {scenario}/config/...",
        "notes": [
            "pre is stored for t == 0 only (it is the state right after reset()); the state "
            "before step t >= 1 is {scenario}/{t-1}/post (the recorder checks they are identical).",
            "done at the last step is True because env_core.episode_length is set to n_steps.",
            "prede and demog exist for OLG scenarios at t >= 1 (EconGym skips demography at t == 0).",
            "newborn rows are the last born_n rows of the post household arrays.",
            "h_ij_ratio / c_ij_ratio are only written when firm_n > 1 (EconGym uses the scalar 1).",
        ],
        "regenerate": [
            "ECONGYM_GIT=<EconGym git dir, optional> tests/environments/economy/econgym_reference/"
            "setup_venv.sh /tmp/econgym_venv",
            "/tmp/econgym_venv/bin/python tests/environments/economy/econgym_reference/"
            "record_econgym.py --econgym /tmp/econgym_venv/econgym "
            "--out tests/environments/economy/data/econgym_reference.npz",
        ],
    }
    arrays = dict(rec.data)
    arrays["meta"] = np.array(json.dumps(meta))
    os.makedirs(os.path.dirname(out), exist_ok=True)
    np.savez_compressed(out, **arrays)
    print(f"wrote {out}: {len(arrays)} arrays, {os.path.getsize(out) / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
