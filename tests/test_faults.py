"""Faults during a run: signals that mean "now", time-bounded calls, a run directory
that vanishes, processes started differently and a lost peer. Each case ends with one
line and a documented exit status (docs/pod.md, "Exit statuses").

The cheap checks run in the default suite: the signal thread in a small subprocess, the
clock, the directory watch, the comparison of launch facts, and one real in-process run
whose directory is removed. Whole runs from the CLI, on one process and on two over
127.0.0.1, are slow checks, each bounded by subprocess timeouts and killing what it
started."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from jaxagents import rundir, segments
from jaxagents.population import peers
from jaxagents.preemption import EXIT_INTERRUPTED, EXIT_PREEMPTED

TINY = ["learner=ippo", "env.id=stag_hunt", "env.kwargs.horizon=4", "train.num_envs=8", "train.num_steps=4",
        "train.total_timesteps=192", "train.update_epochs=1", "train.num_minibatches=1", "checkpoint_every=2",
        "log.progress=false"]  # 6 updates

# the main thread blocked in a C call that never returns (as in a compiled segment), a checkpoint at update 4
BLOCKED = """
import os, sys
from jaxagents.preemption import Preemption
r, w = os.pipe()
with Preemption(run_dir=sys.argv[1]) as p:
    p.checkpointed(4)
    print("ready", flush=True)
    os.read(r, 1)
"""


def _kill(procs):
    for p in procs:  # never leave a process behind
        if p.poll() is None:
            p.kill()
            p.wait()


def _rows(d):
    return [json.loads(x) for x in (d / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("signum, status", [(signal.SIGTERM, EXIT_PREEMPTED), (signal.SIGINT, EXIT_INTERRUPTED)])
def test_a_second_signal_ends_the_process_at_once_from_a_thread(tmp_path, signum, status):
    run = str(tmp_path / "run")
    proc = subprocess.Popen([sys.executable, "-c", BLOCKED, run], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        proc.send_signal(signum)
        time.sleep(0.5)
        assert proc.poll() is None  # the first one is a request: the blocked call goes on
        t = time.monotonic()
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=10)
        took = time.monotonic() - t
    finally:
        _kill([proc])
    assert proc.returncode == status, err
    assert took < 5, took
    lines = err.strip().splitlines()
    assert len(lines) == 2 and "again to stop at once" in lines[0], err
    assert lines[1].startswith("jaxagents train: stopped at once on a second ")
    assert os.path.join(run, "checkpoints", "4") in lines[1] and f"`jaxagents train --resume {run}`" in lines[1]


def test_the_clock_cuts_by_count_and_by_time(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(segments.time, "monotonic", lambda: now[0])
    by_count = segments.Clock(total=10, every=4, seconds=0)
    assert [by_count.fits(d, fresh=True) for d in (0, 3, 4, 8)] == [4, 1, 4, 2]
    clock = segments.Clock(total=1000, every=250, seconds=20)
    assert clock.max_length == 250
    assert clock.fits(0, fresh=True) == 1  # the first call measures an update
    clock.measured(1, 2.0)  # 2 s an update: 20 s hold 8 with the margin
    assert clock.fits(1, fresh=True) == 8
    now[0] += 17.0  # 3 s left of the budget: one update fits
    assert clock.fits(9, fresh=False) == 1
    now[0] += 2.0
    d = segments.decide(clock, 10, 0, 0)  # nothing fits: checkpoint now, then a fresh budget
    assert d.checkpoint and d.length == 8 and not d.signal
    clock.measured(1, 0.001)
    assert clock.fits(10, fresh=True) == 240  # never past a multiple of checkpoint_every
    assert segments.decide(clock, 250, 0, 0).checkpoint
    stop = segments.decide(clock, 11, signal.SIGINT, 0)
    assert stop.checkpoint and stop.signal == signal.SIGINT


def test_the_watch_names_what_happened_to_the_run_directory(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    (d / "config.yaml").write_text("seed: 0\n")
    (d / "checkpoints").mkdir()
    w = rundir.Watch(str(d))
    assert w.problem(checkpointed=True) == 0
    shutil.rmtree(d / "checkpoints")
    assert w.problem(checkpointed=True) == rundir.NO_CHECKPOINTS
    (d / "config.yaml").unlink()
    assert w.problem() == rundir.EMPTIED
    shutil.rmtree(d)
    assert w.problem() == rundir.GONE
    d.mkdir()  # another directory under the same name
    (d / "config.yaml").write_text("seed: 0\n")
    assert w.problem() == rundir.REPLACED
    line = str(w.error(rundir.GONE, 6, 4))
    assert "was removed during the run" in line and "after update 6" in line and "is lost" in line
    assert "cannot be resumed" in line and "\n" not in line
    assert "continue with `jaxagents train --resume" in str(w.error(rundir.UNWRITABLE, 6, 4))


def test_launch_facts_are_compared_with_process_0s():
    base = {"JAXAGENTS_NUM_PROCESSES": 2, "code": "abc", "config": {"seed": 0, "train": {"lr": 0.1}}}
    assert peers.compare([base, json.loads(json.dumps(base))]) is None
    other = json.loads(json.dumps(base))
    other["JAXAGENTS_NUM_PROCESSES"] = 3
    assert peers.compare([base, base, other]) == (
        "the processes were not started alike: process 2 has JAXAGENTS_NUM_PROCESSES=3, process 0 has 2: start every "
        "process with the same command, settings and code")
    other = json.loads(json.dumps(base))
    other["config"]["train"]["lr"] = 0.2
    assert "process 1 has config key train.lr=0.2, process 0 has 0.1" in peers.compare([base, other])
    assert peers.first_difference({"a": 1}, {"a": 1, "b": 2}) == ("b", "(unset)", 2)
    assert len(peers.code_digest()) == 16


def test_a_removed_run_directory_stops_the_run_and_is_not_recreated(tmp_path, monkeypatch):
    """In-process: the directory is removed after the first call; the run stops at its
    next write with RunDirGone, and nothing is written there again."""
    from jaxagents import runner

    run = tmp_path / "run"
    call = segments.call
    calls = []

    def call_then_remove(*a, **k):
        out = call(*a, **k)
        calls.append(1)
        if len(calls) == 2:
            shutil.rmtree(run)
        return out

    monkeypatch.setattr(segments, "call", call_then_remove)
    with pytest.raises(rundir.RunDirGone, match=r"was removed during the run: the run stopped after update \d+ "
                                                r"without writing into it again; .* is lost"):
        runner.run(runner.load_config(None, TINY), run_dir=str(run), quiet=True)
    assert not run.exists()
