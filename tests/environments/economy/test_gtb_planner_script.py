"""experiments/gtb_planner.py: the arms' configs, the intervals, the final
curriculum params used for scoring, and (slow) the whole pipeline at a tiny size."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from jaxagents.build import build_learner
from jaxagents.config import read_yaml


@pytest.fixture(scope="module")
def gp(experiment_script):
    return experiment_script("gtb_planner")


def test_arm_configs_and_final_params(gp):
    base = read_yaml(gp.CONFIG)
    fixed = gp.arm_config(base, [2] * 7)
    assert fixed["env"]["params"]["schedule"] == [2] * 7 and fixed["train"]["role_start_update"]["planner"] > 10**6
    learned = gp.arm_config(base, [-1] * 7)
    assert learned["train"]["role_start_update"] == {"planner": 40}  # the config's phase 2
    assert "params" not in base["env"]  # the base config is not modified
    learner = build_learner(fixed)
    p = gp.with_schedule(learner, [1, 2, 3, 4, 5, 6, 7])
    # scored where the curriculum ends: full labour cost, the tax cap fully annealed
    assert float(p.rate_max) == 1.0 and float(p.energy_weight) == 1.0
    assert np.asarray(p.schedule).tolist() == [1, 2, 3, 4, 5, 6, 7]
    assert float(learner.env_params.rate_max) == 1.0 and int(learner.env_params.horizon) == 200


def test_interval_and_levels(gp):
    r = gp.interval([1.0, 2.0, 3.0])
    assert r["mean"] == 2.0 and abs(r["ci95"] - 4.30 * 1.0 / np.sqrt(3)) < 1e-9
    assert gp.levels_of([0.0, 0.12, 0.37, 1.2], 21) == [0, 2, 7, 20]


@pytest.mark.heavy
def test_pipeline_at_a_tiny_size(tmp_path):
    out = tmp_path / "gp.json"
    script = os.path.join(os.path.dirname(__file__), "..", "..", "..", "experiments", "gtb_planner.py")
    cmd = [sys.executable, script, "--eval-episodes", "2", "--search-episodes", "2", "--search-rounds", "1",
           "--search-size", "4", "--saez-iterations", "1", "--arms", "Saez", "--flat", "2", "--out", str(out),
           "num_seeds=2", "train.num_envs=2", "train.num_steps=20", "train.total_timesteps=80",
           "env.kwargs.horizon=20", "env.kwargs.tax_period=5", "train.role_start_update.planner=1",
           "train.env_schedule.rate_max.start=0", "train.env_schedule.rate_max.end=1",
           "train.env_schedule.energy_weight.end=1"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads(out.read_text())
    assert list(res["arms"]) == ["Saez", "flat 10%"]
    arm = res["arms"]["flat 10%"]
    assert arm["schedule"] == [2] * 7 and len(arm["swf"]["per_seed"]) == 2
    assert np.isfinite(arm["swf"]["mean"]) and 0.05 < arm["mean_marginal_rate"] <= 0.1 + 1e-6  # 10% but for periods with losses
    assert len(res["search"]["flat_scores"]) == 21 and len(res["search"]["best"]) == 7
    assert res["search"]["elasticity"] >= 0 and res["arms"]["Saez"]["schedule"] == res["search"]["saez"]
    assert "flat 10%" in r.stdout and "swf" in r.stdout
