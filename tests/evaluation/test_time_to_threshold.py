"""experiments/time_to_threshold.py: the command line on synthetic curves (the window
mean and first step at the threshold: tests/evaluation/test_curves.py)."""

import json
import math

import pytest


@pytest.fixture(scope="module")
def ttt(experiment_script):
    return experiment_script("time_to_threshold")


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
