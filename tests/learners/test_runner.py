"""Runs end to end: the CLI writes a run directory; a run killed with SIGKILL while
it saves a checkpoint, whose newest checkpoint and last metrics line are then
damaged, resumes from the newest checkpoint that restores and ends bit-identical to
an uninterrupted run."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import yaml

from jaxagents import rundir, runner
from jaxagents.cli import main

TINY = [
    "train.ppo.num_envs=16",
    "train.ppo.num_steps=4",
    "train.ppo.total_timesteps=1280",  # 20 updates
    "train.ppo.update_epochs=1",
    "train.ppo.num_minibatches=1",
    "train.eval_every=10",
    "train.eval_envs=16",
    "train.eval_steps=4",
    "train.average_decay=0.9",  # the parameter average is checkpointed and resumed too
    "checkpoint_every=2",
    "log.progress=false",
]


def _env(cache):
    # the killed run and its resumption compile the same programs: share a compilation cache
    return {**os.environ, "JAX_COMPILATION_CACHE_DIR": str(cache), "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}


def _cli(args, cwd, cache):
    return subprocess.run([sys.executable, "-m", "jaxagents.cli", *args], cwd=cwd, capture_output=True, text=True, timeout=600, env=_env(cache))


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """A compilation cache shared by this module's CLI runs (they compile the same
    programs: the uninterrupted run fills it, the killed run and its resumption read it)."""
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory, cache):
    d = tmp_path_factory.mktemp("runs") / "full"
    r = _cli(["train", *TINY, "--run-dir", str(d), "--quiet"], cwd=os.getcwd(), cache=cache)
    assert r.returncode == 0, r.stderr
    return d, json.loads((d / "results.json").read_text())


@pytest.mark.slow  # (this module's compiles: the default suite keeps its 10 minutes)
def test_run_directory(uninterrupted):
    d, res = uninterrupted
    for name in ("config.yaml", "metrics.jsonl", "results.json", "curve.png"):
        assert (d / name).is_file(), name
    rows = [json.loads(x) for x in (d / "metrics.jsonl").read_text().splitlines()]
    assert [r["update"] for r in rows] == list(range(0, 21))
    # update 0: the untrained policy's evaluation (uniform play: 0.458), the start of every curve
    assert rows[0]["env_steps"] == 0 and abs(rows[0]["eval/exploitability"] - 0.458) < 0.01
    assert "eval/exploitability" in rows[10] and "eval/exploitability" not in rows[9]
    assert abs(res["start"]["eval/exploitability"] - 0.458) < 0.01
    assert res["updates"] == 20 and res["env_steps"] == 1280
    steps = sorted(int(p) for p in os.listdir(d / "checkpoints") if p.isdigit())
    assert steps[-1] == 20 and len(steps) <= 3  # keep_checkpoints
    assert yaml.safe_load((d / "config.yaml").read_text())["train"]["ppo"]["num_envs"] == 16


# ~30 s (a run killed by SIGKILL, then resumed): with the slow checks
@pytest.mark.heavy
def test_killed_run_resumes_bit_identically(uninterrupted, cache, tmp_path):
    full_dir, _ = uninterrupted
    d = tmp_path / "killed"
    proc = subprocess.Popen(
        [sys.executable, "-m", "jaxagents.cli", "train", *TINY, "--run-dir", str(d), "--quiet"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=_env(cache),
    )
    ck = d / "checkpoints"
    deadline = time.time() + 500
    # kill it while it writes a checkpoint (orbax's temporary directory exists) once
    # it has written two, or 2 s after the second if no save is caught in the act
    two_at = None
    while time.time() < deadline and proc.poll() is None:
        names = os.listdir(ck) if ck.is_dir() else []
        if sum(p.isdigit() for p in names) >= 2:
            two_at = two_at or time.time()
            if any("tmp" in p for p in names) or time.time() - two_at > 2:
                break
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    steps = sorted(int(p) for p in os.listdir(ck) if p.isdigit())
    assert len(steps) >= 2 and steps[-1] < 20, f"the run finished before it could be killed: {steps}"
    # damage the newest complete checkpoint and half-write a metrics line: resuming
    # falls back to the checkpoint before and drops the broken line
    (ck / str(steps[-1]) / "state" / "_METADATA").write_text("")
    with open(d / "metrics.jsonl", "a") as f:
        f.write('{"update": 99, "env_st')
    r = _cli(["train", "--resume", str(d), "--quiet"], cwd=os.getcwd(), cache=cache)
    assert r.returncode == 0, r.stderr
    assert f"checkpoint {ck / str(steps[-1])} does not restore" in r.stderr and "_METADATA" in r.stderr
    assert "Traceback" not in r.stderr and "Event loop" not in r.stderr
    # the killed run's lock is recognised as stale, named and taken over
    assert f"run directory {str(d)!r} was locked by host" in r.stderr and "no longer running" in r.stderr
    assert not (d / ".jaxagents.lock").exists()
    a = [json.loads(x) for x in (full_dir / "metrics.jsonl").read_text().splitlines()]
    b = [json.loads(x) for x in (d / "metrics.jsonl").read_text().splitlines()]
    assert a == b  # every logged number, bit for bit (JSON floats round-trip exactly)
    # and the final parameters
    import jax

    train = runner.build(runner.load_config(None, TINY))
    like = jax.jit(jax.vmap(train.init))(jax.random.split(jax.random.key(0), 1))
    from jaxagents.checkpoint import Checkpointer

    pa, _, _ = Checkpointer(full_dir / "checkpoints").restore(like)
    pb, _, _ = Checkpointer(d / "checkpoints").restore(like)
    jax.tree.map(lambda x, y: np.testing.assert_array_equal(x, y), (pa.params, pa.extra), (pb.params, pb.extra))


@pytest.mark.slow  # (this module's compiles: the default suite keeps its 10 minutes)
def test_eval_command(uninterrupted, capsys):
    d, _ = uninterrupted
    assert main(["eval", str(d)]) == 0
    out = capsys.readouterr().out
    assert "eval/exploitability" in out and "eval/average/exploitability" in out and "update 20" in out


@pytest.mark.slow  # (this module's compiles: the default suite keeps its 10 minutes)
def test_resume_of_a_finished_run_changes_nothing(uninterrupted, capsys):
    d, _ = uninterrupted
    before = {n: (d / n).read_bytes() for n in ("results.json", "metrics.jsonl", "config.yaml")}
    assert main(["train", "--resume", str(d), "--quiet"]) == 0
    assert {n: (d / n).read_bytes() for n in before} == before


@pytest.mark.slow  # (this module's compiles: the default suite keeps its 10 minutes)
@pytest.mark.parametrize(
    "args, message",
    [
        (["train", "train.ppo.lr=-1"], "train section: lr must be"),
        (["train", "nope.yaml"], "neither a file, a bundled config nor a registered environment id"),
        (["train", "learner=dqn"], "learner must be one of"),
        (["train", "train.ppo.bogus=1"], "bogus"),
        (["eval", "/nonexistent"], "not a run directory"),
    ],
)
def test_cli_errors(args, message, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


# ----------------------------------------------------------------------- slow: whole runs


@pytest.mark.slow
def test_divergence_stops_the_run(cache, tmp_path):
    """Adam with lr=1e38 makes the parameters overflow: the run stops with an error naming the
    update and the last good checkpoint, keeps the evidence in metrics.jsonl and
    writes no checkpoint of the diverged state."""
    d = tmp_path / "diverged"
    r = _cli(["train", *TINY, "train.ppo.optimizer=adam", "train.ppo.lr=1e38", "--run-dir", str(d), "--quiet"], cwd=os.getcwd(), cache=cache)
    assert r.returncode == 1, r.stderr
    err = r.stderr.strip().splitlines()[-1]
    assert "diverged" in err and ("at update" in err or "after update" in err), err
    rows = [json.loads(x) for x in (d / "metrics.jsonl").read_text().splitlines()]
    bad = [row for row in rows if row.get("nonfinite")]
    assert bad and all(row[k] is None for row in bad for k in row["nonfinite"])
    steps = sorted(int(p) for p in os.listdir(d / "checkpoints") if p.isdigit())
    assert not steps or steps[-1] < bad[0]["update"]
    assert not (d / "results.json").exists()


@pytest.mark.slow
def test_resume_without_checkpoint_does_not_duplicate_rows(uninterrupted, cache, tmp_path):
    import shutil

    full_dir, _ = uninterrupted
    d = tmp_path / "nockpt"
    shutil.copytree(full_dir, d)
    shutil.rmtree(d / "checkpoints")
    (d / "results.json").unlink()
    r = _cli(["train", "--resume", str(d), "--quiet"], cwd=os.getcwd(), cache=cache)
    assert r.returncode == 0, r.stderr
    assert (d / "metrics.jsonl").read_text() == (full_dir / "metrics.jsonl").read_text()


@pytest.mark.slow
def test_only_process_0_writes_logs(monkeypatch, tmp_path):
    """Multi-host runs share the run directory: a process other than 0 writes no
    config, metrics, plot or results (orbax coordinates the checkpoints)."""
    monkeypatch.setattr(runner, "_primary", lambda: False)
    d = tmp_path / "worker"
    config = runner.load_config(None, TINY)
    rundir.lay_out(str(d), runner.prepare(config), overwrite=False)  # process 0's part, before the others train
    laid_out = (d / "config.yaml").read_bytes()
    runner.run(config, run_dir=str(d), quiet=True)
    assert sorted(os.listdir(d)) == ["checkpoints", "config.yaml"] and (d / "config.yaml").read_bytes() == laid_out


@pytest.mark.slow
def test_default_run_shows_learning(tmp_path, user_env):
    """The README's first command: the embedded default learns (uniform play's
    exploitability 0.458 -> <= 0.05) and says so."""
    d = tmp_path / "default"
    r = subprocess.run([sys.executable, "-m", "jaxagents.cli", "train", "log.progress=false", "--run-dir", str(d)],
                       capture_output=True, text=True, timeout=900, env=user_env)
    assert r.returncode == 0, r.stderr
    res = json.loads((d / "results.json").read_text())
    assert abs(res["start"]["eval/exploitability"] - 0.458) < 0.01
    assert res["final"]["eval/average/exploitability"] <= 0.05 and res["final"]["eval/exploitability"] <= 0.05
    assert "exploitability 0.458" in r.stdout
