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
from jaxagents import preemption
from jaxagents.preemption import Preemption
preemption.CTRL_C_EXITS = True  # as jaxagents train sets it
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


def test_a_second_signal_ends_the_process_at_once_from_a_thread(tmp_path):
    """SIGTERM and SIGINT, each to its own process (started together)."""
    cases = [(signal.SIGTERM, EXIT_PREEMPTED), (signal.SIGINT, EXIT_INTERRUPTED)]
    runs = [str(tmp_path / f"run{i}") for i in range(len(cases))]
    procs = [subprocess.Popen([sys.executable, "-c", BLOCKED, run], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for run in runs]
    try:
        for p, (signum, _) in zip(procs, cases):
            assert p.stdout.readline().strip() == "ready"
            p.send_signal(signum)
        time.sleep(0.5)
        assert all(p.poll() is None for p in procs)  # the first one is a request: the blocked call goes on
        results = []
        for p, (signum, _) in zip(procs, cases):
            t = time.monotonic()
            p.send_signal(signum)
            _, err = p.communicate(timeout=10)
            results.append((p.returncode, time.monotonic() - t, err))
    finally:
        _kill(procs)
    for run, (_, status), (code, took, err) in zip(runs, cases, results):
        assert code == status, err
        assert took < 5, took
        lines = err.strip().splitlines()
        assert len(lines) == 2 and "again to stop at once" in lines[0], err
        assert lines[1].startswith("jaxagents train: stopped at once on a second ")
        assert os.path.join(run, "checkpoints", "4") in lines[1] and f"`jaxagents train --resume {run}`" in lines[1]


def test_a_second_ctrl_c_in_a_library_call_raises_keyboardinterrupt():
    """``runner.run`` from a notebook or script: the second Ctrl-C must not end the
    process (the kernel); it interrupts the main thread as Python's own handler does."""
    from jaxagents import preemption

    assert not preemption.CTRL_C_EXITS
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        with preemption.Preemption(announce=False) as p:
            os.kill(os.getpid(), signal.SIGINT)
            deadline = time.time() + 5
            while not p.requested and time.time() < deadline:
                time.sleep(0.01)
            os.kill(os.getpid(), signal.SIGINT)
            while time.time() < deadline + 5:
                time.sleep(0.01)
    assert signal.getsignal(signal.SIGINT) is before


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
    # keep_checkpoints=2 counts the checkpoints of checkpoint_every; a timed one lives while it is the newest
    assert clock.to_delete([250, 260, 500, 750, 761], keep=2) == [250, 260]
    assert clock.to_delete([250, 260, 500, 750, 761, 1000], keep=2) == [250, 260, 500, 761]
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


def test_a_file_is_named_as_a_file_not_a_missing_directory(tmp_path):
    from jaxagents import build

    (tmp_path / "notes.txt").write_text("")
    with pytest.raises(ValueError, match="is a file, not a run directory"):
        build.read_run_config(str(tmp_path / "notes.txt"))
    with pytest.raises(ValueError, match=r"is not a run directory \(no such directory\)"):
        build.read_run_config(str(tmp_path / "missing"))


@pytest.mark.slow  # ~20-35 s: a compile
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


# ----------------------------------------------------------------------- whole runs (slow)


def _cli(args, **kw):
    return subprocess.Popen([sys.executable, "-m", "jaxagents.cli", "train", *args, "--quiet"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


@pytest.mark.heavy
def test_where_a_run_is_cut_changes_no_number(tmp_path):
    """One call per update and a checkpoint after each (a budget of 1 ms) against calls
    of checkpoint_every updates: the same rows, bit for bit."""
    from jaxagents import runner

    runner.run(runner.load_config(None, [*TINY, "checkpoint_seconds=0"]), run_dir=str(tmp_path / "count"), quiet=True)
    runner.run(runner.load_config(None, [*TINY, "checkpoint_seconds=0.001"]), run_dir=str(tmp_path / "time"), quiet=True)
    assert _rows(tmp_path / "count") == _rows(tmp_path / "time")
    # a checkpoint after every update, but keep_checkpoints counts those of checkpoint_every: the same ones kept
    assert sorted(os.listdir(tmp_path / "time" / "checkpoints")) == sorted(os.listdir(tmp_path / "count" / "checkpoints"))
    assert sorted(os.listdir(tmp_path / "time" / "checkpoints")) == ["2", "4", "6"]


@pytest.mark.heavy
def test_ctrl_c_is_one_line_status_130_and_resumes_identically(tmp_path):
    from jaxagents import runner

    args = [*TINY, "train.total_timesteps=1280"]  # 40 updates
    full = tmp_path / "full"
    runner.run(runner.load_config(None, args), run_dir=str(full), quiet=True)
    d = tmp_path / "run"
    proc = _cli([*args, "--run-dir", str(d)])
    try:
        deadline = time.time() + 300
        while time.time() < deadline and proc.poll() is None and not (d / "checkpoints" / "2").is_dir():
            time.sleep(0.01)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        _kill([proc])
    assert proc.returncode == EXIT_INTERRUPTED, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 2 and "Ctrl-C (SIGINT) received" in lines[0], err
    assert lines[1].startswith("jaxagents train: stopped on Ctrl-C (SIGINT) after update") and f"--resume {d}`" in lines[1]
    r = subprocess.run([sys.executable, "-m", "jaxagents.cli", "train", "--resume", str(d), "--quiet"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert _rows(d) == _rows(full)  # every logged number, bit for bit


@pytest.mark.slow
def test_a_second_sigterm_inside_a_long_compiled_call_ends_the_run_within_5_s(tmp_path):
    """One call of 20000 updates (no time bound): the second SIGTERM does not wait for
    it; the run directory is resumable."""
    d = tmp_path / "run"
    args = [*TINY, "train.total_timesteps=640000", "checkpoint_every=0", "checkpoint_seconds=0"]  # 20000 updates
    proc = _cli([*args, "--run-dir", str(d)])
    try:
        deadline = time.time() + 300
        while time.time() < deadline and proc.poll() is None and not (d / "config.yaml").is_file():
            time.sleep(0.05)
        time.sleep(10)  # compiling or in the call: either way the signal must not wait
        assert proc.poll() is None, proc.communicate()[1]
        proc.send_signal(signal.SIGTERM)
        time.sleep(1)
        t = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
        took = time.monotonic() - t
    finally:
        _kill([proc])
    assert proc.returncode == EXIT_PREEMPTED and took < 5, (took, err)
    last = err.strip().splitlines()[-1]
    assert last.startswith("jaxagents train: stopped at once on a second SIGTERM; no checkpoint was written yet")
    assert f"--resume {d}`" in last and not (d / "results.json").exists()


@pytest.mark.heavy  # ~1.5 minutes
def test_a_sigkill_after_a_preemption_notice_loses_no_update(tmp_path):
    """The preemption target as stated: checkpoint_seconds 20 and a SIGKILL 30 s after the
    SIGTERM. A run whose count-bounded checkpoints would come far too late
    (checkpoint_every 20000) gets SIGTERM in the middle of a time budget, ends by itself
    before the SIGKILL would come, and its newest checkpoint holds its last metrics row:
    nothing a SIGKILL could take was left unsaved. (Scaled down, the notice's fixed costs
    -- a checkpoint's write, the process's exit -- do not scale: 2 s and 3 s failed once
    on a loaded machine.)"""
    d = tmp_path / "run"
    args = [*TINY, "train.total_timesteps=32000000", "checkpoint_every=20000", "checkpoint_seconds=20"]  # 10^6 updates
    proc = _cli([*args, "--run-dir", str(d)])
    ck = d / "checkpoints"
    try:
        deadline = time.time() + 300
        while time.time() < deadline and proc.poll() is None and not (ck.is_dir() and any(
                x.isdigit() for x in os.listdir(ck))):
            time.sleep(0.05)
        time.sleep(12)  # in the middle of a budget since the first timed checkpoint
        assert proc.poll() is None, proc.communicate()[1]
        proc.send_signal(signal.SIGTERM)
        t = time.monotonic()
        try:
            _, err = proc.communicate(timeout=30)  # the notice; then it would be SIGKILLed
        except subprocess.TimeoutExpired:
            proc.kill()
            pytest.fail("still running 30 s after SIGTERM: a SIGKILL would have lost the updates since the checkpoint")
        took = time.monotonic() - t
    finally:
        _kill([proc])
    assert proc.returncode == EXIT_PREEMPTED, err
    last = err.strip().splitlines()[-1]
    stopped = int(last.split("after update ")[1].split()[0])
    newest = max(int(x) for x in os.listdir(ck) if x.isdigit())
    assert stopped == newest == _rows(d)[-1]["update"] and newest < 20000, (last, newest)
    print(f"stopped {took:.1f} s after SIGTERM, at update {stopped}")


# ----------------------------------------------------------------------- two processes


POP = ["learner=ippo", "env.id=stag_hunt", "env.kwargs.horizon=4", "train.num_envs=8", "train.num_steps=8",
       "train.update_epochs=1", "train.num_minibatches=1", "population.size=4", "log.progress=false"]


def _two(args, run_dir, tmp_path, extra_env=({}, {}), peer_timeout="5"):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for i in range(2):
        env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2", "JAX_PLATFORMS": "cpu",
               "JAXAGENTS_COORDINATOR": f"127.0.0.1:{port}", "JAXAGENTS_NUM_PROCESSES": "2",
               "JAXAGENTS_PROCESS_ID": str(i), "JAXAGENTS_PEER_TIMEOUT": peer_timeout,
               "JAX_COMPILATION_CACHE_DIR": str(tmp_path / "cache"), "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
               **extra_env[i]}
        procs.append(_cli([*args, "--distributed", "--run-dir", str(run_dir)], env=env))
    return procs


def _wait_for_checkpoint(procs, ck, at_least: int = 10) -> None:
    """Until a checkpoint of update >= ``at_least`` is written (or a process ended, or 200 s)."""
    deadline = time.time() + 200
    while time.time() < deadline and all(p.poll() is None for p in procs):
        if ck.is_dir() and any(x.isdigit() and int(x) >= at_least for x in os.listdir(ck)):
            return
        time.sleep(0.05)


def _kill_after_checkpoint(procs, ck, victim: int, survivor: int) -> tuple[str, float]:
    """kill -9 of process ``victim`` once checkpoint 10 is written; the survivor's stderr
    and the seconds it took to end."""
    try:
        _wait_for_checkpoint(procs, ck)
        procs[victim].kill()
        t = time.monotonic()
        _, err = procs[survivor].communicate(timeout=60)
        return err, time.monotonic() - t
    finally:
        _kill(procs)


@pytest.mark.slow  # ~15-35 s: two processes join
def test_processes_started_with_different_counts_refuse_with_one_line(tmp_path):
    """Process 0 told 2 processes, process 1 told 3: both refuse before anything is written."""
    d = tmp_path / "run"
    procs = _two([*POP, "train.total_timesteps=512"], d, tmp_path, ({}, {"JAXAGENTS_NUM_PROCESSES": "3"}))
    try:
        outs = [p.communicate(timeout=120) for p in procs]
    finally:
        _kill(procs)
    for p, (_, err) in zip(procs, outs):
        assert p.returncode == 2, err[-2000:]
        assert err.strip().splitlines()[-1] == (
            "jaxagents train: error: the processes were not started alike: process 1 has JAXAGENTS_NUM_PROCESSES=3, "
            "process 0 has 2: start every process with the same command, settings and code")
    assert not d.exists()


@pytest.mark.heavy
def test_a_lost_peer_stops_the_survivor_with_one_line_and_the_run_resumes(tmp_path):
    """kill -9 of process 1 after a checkpoint: process 0 exits 69 within the peer
    timeout (5 s here) plus a beat, with one line naming process 1, the checkpoint and
    --resume; both resumed, the run finishes as the uninterrupted run does."""
    d = tmp_path / "run"
    args = [*POP, "train.total_timesteps=6400", "checkpoint_every=10"]  # 100 updates
    procs = _two(args, d, tmp_path)
    ck = d / "checkpoints"
    err, took = _kill_after_checkpoint(procs, ck, victim=1, survivor=0)
    assert procs[0].returncode == peers.EXIT_PEER_LOST, err[-2000:]
    assert took < 5 + 5, took
    last = err.strip().splitlines()[-1]
    assert last.startswith("jaxagents train: lost process 1 of 2 (no sign of life for 5 s") and "Traceback" not in err
    assert f"--resume {d}` with the same command on every process" in last
    kept = int(last.split("the last checkpoint is ")[1].split("(update ")[1].split(")")[0])
    assert (ck / str(kept)).is_dir()
    procs = _two(["--resume", str(d)], d, tmp_path)
    try:
        outs = [p.communicate(timeout=300) for p in procs]
    finally:
        _kill(procs)
    for p, (_, err) in zip(procs, outs):
        assert p.returncode == 0, err[-2000:]
    assert [r["update"] for r in _rows(d)] == list(range(1, 101))
    full = tmp_path / "full"  # the same run uninterrupted: every logged number, bit for bit
    procs = _two(args, full, tmp_path)
    try:
        outs = [p.communicate(timeout=300) for p in procs]
    finally:
        _kill(procs)
    assert [p.returncode for p in procs] == [0, 0], [err[-2000:] for _, err in outs]
    assert _rows(d) == _rows(full)


@pytest.mark.slow
def test_the_loss_of_process_0_stops_the_survivor_with_one_line(tmp_path):
    """kill -9 of process 0 (its supervisor; the trainer under it goes too) after a
    checkpoint: the coordination service goes with it and JAX aborts process 1's trainer;
    process 1 still ends with one line of ours, status 69, the checkpoint named."""
    d = tmp_path / "run"
    procs = _two([*POP, "train.total_timesteps=64000", "checkpoint_every=10"], d, tmp_path)  # 1000 updates
    ck = d / "checkpoints"
    err, took = _kill_after_checkpoint(procs, ck, victim=0, survivor=1)
    assert procs[1].returncode == peers.EXIT_PEER_LOST and took < 5 + 10, (took, err[-3000:])
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("jaxagents train: lost process 0"), err[-3000:]
    assert f"--resume {d}` with the same command on every process" in lines[0]
    kept = int(lines[0].split("(update ")[1].split(")")[0])
    assert kept >= 10 and (ck / str(kept)).is_dir()
    report = lines[0].split("JAX's own report: ")[1].rstrip(")") if "JAX's own report: " in lines[0] else None
    if report:  # JAX's abort (else our heartbeat thread spoke first)
        os.unlink(report)


@pytest.mark.heavy
def test_a_removed_run_directory_stops_both_processes_with_one_line(tmp_path):
    """Removed while two processes train: both stop after the same update with status
    74 and one line, and the directory is not made again."""
    d = tmp_path / "run"
    procs = _two([*POP, "train.total_timesteps=64000", "checkpoint_every=10"], d, tmp_path)  # 1000 updates
    ck = d / "checkpoints"
    try:
        _wait_for_checkpoint(procs, ck)
        shutil.rmtree(d, ignore_errors=True)
        outs = [p.communicate(timeout=120) for p in procs]
    finally:
        _kill(procs)
    # found at a decision: both stop after the same update; found by a failed write on one
    # process (removed in the middle of a checkpoint): that one, and the other as a lost peer
    gone = f"jaxagents train: run directory {str(d)!r} was removed during the run: the run stopped after update "
    lasts = [err.strip().splitlines()[-1] for _, err in outs]
    codes = [p.returncode for p in procs]
    assert 74 in codes and set(codes) <= {74, peers.EXIT_PEER_LOST}, (codes, lasts)
    for code, last in zip(codes, lasts):
        assert last.startswith(gone if code == 74 else "jaxagents train: lost process"), last
    if codes == [74, 74]:
        assert len({int(x.split("after update ")[1].split()[0]) for x in lasts}) == 1
    assert not d.exists()
