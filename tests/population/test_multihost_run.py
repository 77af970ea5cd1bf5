"""A population run over two processes (2 fake CPU devices each, jax.distributed on
127.0.0.1 with gloo), from the CLI with --distributed: only process 0 writes the run's
files, and a run whose processes are all killed resumes (--resume on every process)
bit-identical to the uninterrupted run."""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

ARGS = [
    "learner=ippo", "env.id=stag_hunt", "env.kwargs.horizon=4",
    "train.num_envs=8", "train.num_steps=8", "train.total_timesteps=512", "train.update_epochs=1", "train.num_minibatches=1",
    "population.size=4", "population.ranges={lr: [1.0e-4, 1.0e-2]}", "population.pbt={interval: 2}",
    "checkpoint_every=2", "log.progress=false",
]


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(args, cache):
    port = _port()
    procs = []
    for i in range(2):
        env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2", "JAX_PLATFORMS": "cpu",
               "JAXAGENTS_COORDINATOR": f"127.0.0.1:{port}", "JAXAGENTS_NUM_PROCESSES": "2", "JAXAGENTS_PROCESS_ID": str(i),
               "JAX_COMPILATION_CACHE_DIR": str(cache), "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}
        procs.append(subprocess.Popen([sys.executable, "-m", "jaxagents.cli", "train", *args, "--distributed", "--quiet"],
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    return procs


def _finish(procs, timeout=400):
    try:
        outs = [p.communicate(timeout=timeout) for p in procs]
    finally:
        _kill(procs)
    for p, (_, err) in zip(procs, outs):
        assert p.returncode == 0, err[-3000:]


def _kill(procs):
    for p in procs:  # never leave a process behind
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
            p.wait()


def _jsonl(path):
    return [json.loads(x) for x in path.read_text().splitlines()]


@pytest.mark.heavy
def test_two_process_run_writes_once_and_resumes_bit_identically(tmp_path):
    cache = tmp_path / "cache"
    full = tmp_path / "full"
    _finish(_start([*ARGS, "--run-dir", str(full)], cache))
    for name in ("config.yaml", "metrics.jsonl", "population.jsonl", "results.json", "lineage.png"):
        assert (full / name).is_file(), name
    assert len(_jsonl(full / "population.jsonl")) == 8  # one row per update, written once
    assert not list(full.glob(".*.tmp*"))

    killed = tmp_path / "killed"
    procs = _start([*ARGS, "--run-dir", str(killed)], cache)
    ck = killed / "checkpoints"
    deadline = time.time() + 400
    try:
        while time.time() < deadline and all(p.poll() is None for p in procs):
            if ck.is_dir() and any(p.isdigit() and int(p) >= 2 for p in os.listdir(ck)):
                break
            time.sleep(0.01)
    finally:
        _kill(procs)
    steps = sorted(int(p) for p in os.listdir(ck) if p.isdigit())
    assert steps and steps[-1] < 8, f"the run finished before it could be killed: {steps}"
    _finish(_start(["--resume", str(killed)], cache))
    for name in ("metrics.jsonl", "population.jsonl"):
        assert _jsonl(full / name) == _jsonl(killed / name), name


@pytest.mark.heavy
def test_sigterm_to_one_process_stops_both_at_the_same_checkpoint(tmp_path):
    """A scheduler's SIGTERM reaching one process of two: both stop after the same
    update with that checkpoint written and exit 75; resumed, the run ends equal to
    one never stopped."""
    from jaxagents.preemption import EXIT_PREEMPTED

    cache = tmp_path / "cache"
    args = [*ARGS, "train.total_timesteps=2048"]  # 32 updates
    full = tmp_path / "full"
    _finish(_start([*args, "--run-dir", str(full)], cache))
    stopped = tmp_path / "stopped"
    procs = _start([*args, "--run-dir", str(stopped)], cache)
    try:
        deadline = time.time() + 300
        while time.time() < deadline and all(p.poll() is None for p in procs) and not (stopped / "checkpoints" / "2").is_dir():
            time.sleep(0.01)
        procs[1].send_signal(signal.SIGTERM)
        outs = [p.communicate(timeout=120) for p in procs]
    finally:
        _kill(procs)
    lasts = []
    for p, (_, err) in zip(procs, outs):
        assert p.returncode == EXIT_PREEMPTED, err[-3000:]
        lasts.append(err.strip().splitlines()[-1])
    assert "SIGTERM received" in outs[1][1] and "SIGTERM received" not in outs[0][1]
    stop = {int(x.split("after update ")[1].split()[0]) for x in lasts}
    assert len(stop) == 1 and 2 <= min(stop) < 32, lasts  # the same update on both
    assert "on every process" in lasts[0]
    steps = sorted(int(p) for p in os.listdir(stopped / "checkpoints") if p.isdigit())
    assert steps[-1] == min(stop)
    _finish(_start(["--resume", str(stopped)], cache))
    for name in ("metrics.jsonl", "population.jsonl"):
        assert _jsonl(full / name) == _jsonl(stopped / name), name
