"""SIGTERM stops a run at the next checkpoint boundary, cleanly: the signal is
caught (not fatal), the run raises ``Preempted`` once the running call's
checkpoint is written, and ``--resume`` continues it bit-identically. The CLI's
exit status and a SIGTERM sent from outside are checked with the slow checks, and
two processes that receive it at different moments in
``tests/population/test_multihost_run.py``."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from jaxagents import runner
from jaxagents.preemption import EXIT_PREEMPTED, Preempted, Preemption

TINY = ["learner=ippo", "env.id=stag_hunt", "env.kwargs.horizon=4", "train.num_envs=8", "train.num_steps=4",
        "train.total_timesteps=192", "train.update_epochs=1", "train.num_minibatches=1", "checkpoint_every=2",
        "log.progress=false"]  # 6 updates, 3 segments


def _rows(d):
    return [json.loads(x) for x in (d / "metrics.jsonl").read_text().splitlines()]


def test_sigterm_is_a_request_and_the_handlers_are_restored():
    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    with Preemption(announce=False) as p:
        assert not p.requested
        os.kill(os.getpid(), signal.SIGTERM)  # caught: the test process lives on
        deadline = time.time() + 5
        while not p.requested and time.time() < deadline:  # the watching thread takes it
            time.sleep(0.01)
        assert p.requested_code == signal.SIGTERM
    assert {s: signal.getsignal(s) for s in before} == before
    assert signal.set_wakeup_fd(-1) == -1  # the wakeup fd is given back too


@pytest.mark.slow  # ~15 s: the default suite's 10 minutes; the handler test above stays in it
def test_sigterm_stops_at_the_boundary_and_the_run_resumes(tmp_path, monkeypatch):
    """In-process (the signal reaches pytest's own process, caught); that the resumed
    run equals an uninterrupted one bit for bit is checked with the slow checks below."""
    build = runner.build

    def build_then_signal(*a, **k):  # the signal arrives while the run starts: it stops after the first segment
        out = build(*a, **k)
        os.kill(os.getpid(), signal.SIGTERM)
        return out

    monkeypatch.setattr(runner, "build", build_then_signal)
    stopped = tmp_path / "stopped"
    # the first call is one update (it times an update for checkpoint_seconds): the run stops after it
    with pytest.raises(Preempted, match=r"stopped on SIGTERM after update 1 of 6, its checkpoint written .*--resume"):
        runner.run(runner.load_config(None, TINY), run_dir=str(stopped), quiet=True)
    monkeypatch.setattr(runner, "build", build)
    assert sorted(os.listdir(stopped / "checkpoints")) == ["1"] and not (stopped / "results.json").exists()
    assert [r["update"] for r in _rows(stopped)] == [1]
    runner.run(run_dir=str(stopped), resume=True, quiet=True)
    assert [r["update"] for r in _rows(stopped)] == list(range(1, 7)) and (stopped / "results.json").is_file()


@pytest.mark.heavy
def test_cli_exits_with_its_own_status_on_sigterm(tmp_path):
    """A SIGTERM from outside, as a scheduler sends it: exit status 75 with one line,
    the run resumable and then equal to one never stopped, bit for bit."""
    d = tmp_path / "run"
    args = [*TINY, "train.total_timesteps=3200"]  # 100 updates: the signal comes long before the end
    full = tmp_path / "full"
    runner.run(runner.load_config(None, args), run_dir=str(full), quiet=True)
    proc = subprocess.Popen([sys.executable, "-m", "jaxagents.cli", "train", *args, "--run-dir", str(d), "--quiet"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 300
        while time.time() < deadline and proc.poll() is None and not (d / "checkpoints" / "2").is_dir():
            time.sleep(0.01)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == EXIT_PREEMPTED, err
    assert "SIGTERM received" in err and "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("jaxagents train: stopped on SIGTERM after update") and f"--resume {d}" in last
    stop = int(last.split("after update ")[1].split()[0])
    assert 2 <= stop < 100 and str(stop) in os.listdir(d / "checkpoints")
    r = subprocess.run([sys.executable, "-m", "jaxagents.cli", "train", "--resume", str(d), "--quiet"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert [row["update"] for row in _rows(d)] == list(range(1, 101))
    assert _rows(d) == _rows(full)  # every logged number, bit for bit
