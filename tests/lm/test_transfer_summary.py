"""experiments/lm_transfer.py: untrained (update 0) against trained (the last evaluated
update) over seeds, from a run's metrics rows."""

import json

import numpy as np
import pytest


def _row(update, leduc, win=None):
    row = {"update": update, "eval/heldout/TextLeducPoker/exploitability": float(np.mean(leduc)),
           "eval/heldout/TextLeducPoker/exploitability@seeds": leduc}
    if win is not None:
        row["eval/heldout/TextConnectFour1/search/win@seeds"] = win
    row["selfplay/TextKuhnPoker/draw@seeds"] = [0.5, 0.5, 0.5]  # not an evaluation
    return row


def test_untrained_and_trained_are_the_first_and_last_evaluated_rows(experiment_script, tmp_path, capsys):
    script = experiment_script("lm_transfer")
    nan = float("nan")
    rows = [_row(0, [3.0, 3.2, 3.4], [0.0, 0.0, 0.5]), _row(1, [nan, nan, nan]), _row(2, [2.0, 2.0, 2.0], [0.5, 0.5, 0.5]),
            _row(3, [nan, nan, nan])]
    out = script.summary(rows)
    leduc = out["eval/heldout/TextLeducPoker/exploitability"]
    assert leduc["update"] == 2 and leduc["untrained"]["seeds"] == [3.0, 3.2, 3.4]
    assert leduc["untrained"]["mean"] == pytest.approx(3.2) and 3.0 <= leduc["untrained"]["low"] <= 3.2
    assert leduc["trained"] == {"seeds": [2.0, 2.0, 2.0], "mean": 2.0, "low": 2.0, "high": 2.0}
    assert out["eval/heldout/TextConnectFour1/search/win"]["trained"]["mean"] == 0.5
    assert all(k.startswith("eval/") for k in out)
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    script.main([str(tmp_path / "run"), "--json", str(tmp_path / "t.json")])
    assert "TextLeducPoker/exploitability" in capsys.readouterr().out
    assert json.loads((tmp_path / "t.json").read_text())["metrics"].keys() == out.keys()
    with pytest.raises(ValueError, match="found 1 evaluated row"):
        script.summary(rows[:2])
