"""experiments/time_to_threshold.py: the episode-weighted window mean, the
first env step at the threshold, and the command line on synthetic curves."""

import json
import math

import numpy as np
import pytest


@pytest.fixture(scope="module")
def ttt(experiment_script):
    return experiment_script("time_to_threshold")


def test_window_mean_weights_episodes_and_skips_empty_updates(ttt):
    steps = np.array([10.0, 20, 30, 40])
    ret = np.array([100.0, np.nan, 0.0, 300.0])
    eps = np.array([1.0, 0, 3, 1])
    wm = ttt.window_mean(steps, ret, eps, window=20)
    # (s-20, s]: {10}, {10, 20}, {20, 30}, {30, 40}
    np.testing.assert_allclose(wm, [100.0, 100.0, 0.0, 75.0])
    assert ttt.first_reach(steps, wm, 100.0, 20) == 20.0  # 10 reaches it too, but before a full window
    assert ttt.first_reach(steps, wm, 50.0, 40) == 40.0
    assert math.isnan(ttt.first_reach(steps, wm, 101.0, 20))


def test_command_line_table(ttt, tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    with open(run / "metrics.jsonl", "w") as f:
        for u in range(1, 11):
            f.write(json.dumps({"update": u, "env_steps": 1000 * u, "episode_return/cook": 20.0 * u, "episodes": 2.0}) + "\n")
    curve = tmp_path / "c.json"
    curve.write_text(json.dumps({"env_step": [1000 * u for u in range(1, 11)], "return": [10.0 * u for u in range(1, 11)]}))
    out = tmp_path / "t.json"
    assert ttt.main(["--run", f"a={run}", "--curve", f"b={curve}", "--rate", "a=500", "--threshold", "150",
                     "--window", "2000", "--json", str(out)]) == 0
    table = json.loads(out.read_text())["table"]
    assert table["a"]["env_steps_to_threshold"] == 8000.0  # window mean (140 + 160) / 2 = 150 at 8,000
    assert table["a"]["seconds_to_threshold"] == 16.0
    assert math.isnan(table["b"]["env_steps_to_threshold"]) and table["b"]["seconds_to_threshold"] is None
    assert "never" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        ttt.main(["--curve", f"b={curve}", "--rate", "zz=1", "--threshold", "1"])
