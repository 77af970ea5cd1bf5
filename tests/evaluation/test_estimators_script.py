"""experiments/estimators.py: the exact tic-tac-toe self-play measure on the uniform
policy, and the command line (the curves it draws: tests/evaluation/test_curves.py)."""

import json

import jax.numpy as jnp
import numpy as np
import pytest


@pytest.fixture(scope="module")
def est(experiment_script):
    return experiment_script("estimators")


def write_run(tmp_path, name, rows):
    d = tmp_path / name
    d.mkdir()
    with open(d / "metrics.jsonl", "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    return str(d)


def test_selfplay_exact_uniform(est):
    """The uniform policy against itself: X wins 58.5%, O 28.8%, draws 12.7% (the
    classical random-play figures); per-move advantage moments are consistent."""
    uniform = lambda obs: jnp.zeros((obs.shape[0], 9))  # noqa: E731
    out = {k: float(v) for k, v in est.selfplay_exact({"first": uniform, "second": uniform}).items()}
    assert out["x_win"] == pytest.approx(0.5849, abs=5e-4)
    assert out["o_win"] == pytest.approx(0.2881, abs=5e-4)
    assert out["draw"] == pytest.approx(0.1270, abs=5e-4)
    assert out["x_win"] + out["o_win"] + out["draw"] == pytest.approx(1.0, abs=1e-5)
    # X moves first: one more move than O in games of odd length
    assert 5.0 >= out["moves/seat0"] > out["moves/seat1"] >= 2.0
    for s in range(2):
        assert abs(out[f"adv_mean/seat{s}"]) <= out[f"adv_rms/seat{s}"] <= 1.0
        assert 0.0 < out[f"entropy/seat{s}"] < np.log(9)
    assert out["adv_mean/seat0"] > 0 > out["adv_mean/seat1"]


def test_cli_rejects_mismatched_labels(est, tmp_path):
    run = write_run(tmp_path, "a", [{"update": 1, "env_steps": 100, "eval/x@seeds": [1.0, 2.0], "eval/x": 1.5}])
    with pytest.raises(SystemExit, match="labels"):
        est.main([run, "--labels", "a,b"])
