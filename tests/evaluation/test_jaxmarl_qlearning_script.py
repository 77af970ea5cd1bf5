"""experiments/jaxmarl_qlearning.py: the reward wrappers of its SMAX path (JaxMARL's
reward scale, the win indicator), the report's win-rate columns, and (slow) a tiny SMAX 3m run
of our side that checks the win rate against the returns of the same greedy episodes."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxagents_environments.games.matrix import MatrixGame


@pytest.fixture(scope="module")
def jq(experiment_script):
    return experiment_script("jaxmarl_qlearning")


def test_reward_map_and_win_indicator(jq):
    payoff = np.array([[[0.5, 1.5], [1.0, 0.0]], [[0.5, 1.5], [1.0, 0.0]]], np.float32)
    env = MatrixGame(payoff=payoff)
    key = jax.random.key(0)
    s0, _ = env.reset(key)
    scaled, won = jq.reward_map(env, lambda r: 10.0 * r), jq.reward_map(env, jq.smax_won)
    for a, b, r in ((0, 0, 0.5), (0, 1, 1.5), (1, 0, 1.0), (1, 1, 0.0)):
        acts = {"row": jnp.array([a]), "column": jnp.array([b])}
        _, ts = env.step(key, s0, acts)
        _, ts10 = scaled.step(key, s0, acts)
        _, tsw = won.step(key, s0, acts)
        for role in env.roles:
            np.testing.assert_allclose(ts.reward[role], [r])
            np.testing.assert_allclose(ts10.reward[role], [10.0 * r])
            np.testing.assert_allclose(tsw.reward[role], [float(r >= 1.0)])  # the bonus step: reward >= 1
            assert tsw.obs[role].shape == ts.obs[role].shape


def test_report_win_columns(jq, tmp_path):
    wins_per_side = {"ours": [[0.0, 0.0], [0.5, 0.7], [1.0, 0.8]], "jaxmarl": [[0.0, 0.0], [0.2, 0.4], [0.6, 0.4]]}
    for side, wins in wins_per_side.items():
        r = dict(task="vdn_smax", side=side, seeds=2, total_env_steps=100, env_steps=[0, 50, 100],
                 test_return=[[0.1, 0.2], [1.2, 1.5], [2.0, 1.7]], test_win=wins, cpu_s=10.0, run_s=20.0,
                 compile_s=1.0, env_steps_per_s=10.0)
        (tmp_path / f"{side}.json").write_text(json.dumps(r))
    out = tmp_path / "summary.json"
    jq.report([str(tmp_path / "*.json")], None, str(out))
    rows = {row["side"]: row for row in json.loads(out.read_text())["rows"]}
    assert rows["ours"]["final_win"] == pytest.approx(0.9)
    assert rows["ours"]["win_ci95"] == pytest.approx(12.71 * np.std([1.0, 0.8], ddof=1) / np.sqrt(2))
    assert rows["jaxmarl"]["win_curve_mean"] == pytest.approx(np.mean([0.2, 0.4, 0.6, 0.4]))
    assert rows["jaxmarl"]["env_steps_per_cpu_s"] == pytest.approx(20.0)


@pytest.mark.heavy
def test_smax_ours_tiny_run(jq, tmp_path):
    pytest.importorskip("jaxmarl")
    jq.args = jq.parser().parse_args(["--task", "vdn_smax", "--side", "ours", "--steps", "4096", "--seeds", "1",
                               "--test-interval", "0.5", "--test-envs", "4", "--override", "train.learning_starts=2048",
                               "--override", "train.num_gradient_steps=1", "--override", "train.batch_size=2"])
    res = jq.run_ours("vdn_smax")
    assert res["num_updates"] == 2 and res["env_steps"] == [0, 2048, 4096]
    ret, win = np.asarray(res["test_return"]), np.asarray(res["test_win"])
    assert ret.shape == win.shape == (3, 1)
    assert np.all((win >= 0) & (win <= 1))
    # a won battle returns 2 (all enemy health, 1, plus the bonus, 1), a lost or unfinished one at most 1
    assert np.all(ret >= 2 * win - 1e-4) and np.all(ret <= 1 + win + 1e-4)
    assert any("buffer_size=4096" in o for o in res["overrides"])
