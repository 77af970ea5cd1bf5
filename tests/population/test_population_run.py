"""Population runs end to end from the CLI: a PBT population of Kuhn self-play
learners (fitness: minus the exact exploitability) writes its lineage, schedules and
members table; killed with SIGKILL and resumed it ends bit-identical to the
uninterrupted run (d); `jaxagents eval` evaluates every member or the best."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from jaxagents import runner, runs
from jaxagents.cli import main

TINY = [
    "train.ppo.num_envs=16",
    "train.ppo.num_steps=4",
    "train.ppo.total_timesteps=768",  # 12 updates
    "train.ppo.update_epochs=1",
    "train.ppo.num_minibatches=1",
    "train.eval_every=2",
    "train.eval_envs=8",
    "train.eval_steps=4",
    "population.size=4",
    "population.ranges={lr: [0.01, 1.0]}",
    "population.pbt={interval: 4, hparams: [lr]}",
    "checkpoint_every=2",
    "log.progress=false",
]


def _env(cache):
    return {**os.environ, "JAX_COMPILATION_CACHE_DIR": str(cache), "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}


def _cli(args, cache):
    return subprocess.run([sys.executable, "-m", "jaxagents.cli", *args], capture_output=True, text=True, timeout=600, env=_env(cache))


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def full(tmp_path_factory, cache):
    d = tmp_path_factory.mktemp("runs") / "full"
    r = _cli(["train", *TINY, "--run-dir", str(d)], cache)
    assert r.returncode == 0, r.stderr
    return d, r.stdout


def _jsonl(path):
    return [json.loads(x) for x in path.read_text().splitlines()]


@pytest.mark.heavy
def test_population_run_directory(full):
    d, stdout = full
    for name in ("population.jsonl", "members.json", "hparams.png", "lineage.png", "curve.png", "results.json"):
        assert (d / name).is_file(), name
    rows = _jsonl(d / "metrics.jsonl")
    assert "fitness/best" in rows[2] and rows[2]["fitness/best"] >= rows[2]["fitness/median"]
    assert rows[2]["update"] == 2 and rows[2]["fitness/best"] == pytest.approx(max(_jsonl(d / "population.jsonl")[1]["fitness"][0]))
    assert rows[2]["fitness/best"] < 0  # minus an exploitability
    pop = _jsonl(d / "population.jsonl")
    assert [r["update"] for r in pop] == list(range(1, 13))
    ready = [r for r in pop if r["ready"]]
    assert [r["update"] for r in ready] == [4, 8, 12]
    assert any(p != i for r in ready for i, p in enumerate(r["parent"][0]))  # someone copied someone
    assert "population of 4 (PBT)" in stdout and "<- best" in stdout
    members = json.loads((d / "members.json").read_text())
    assert len(members["members"]) == 4 and 0 <= members["best"] < 4
    (placed,) = _jsonl(d / "placement.jsonl")  # one line per start: where the members ran
    assert placed["members"] == 4 and placed["pop"] * placed["data"] == placed["devices_used"] <= placed["devices_present"]


@pytest.mark.heavy
def test_killed_population_run_resumes_bit_identically(full, cache, tmp_path):
    full_dir, _ = full
    d = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-m", "jaxagents.cli", "train", *TINY, "--run-dir", str(d), "--quiet"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=_env(cache))
    ck = d / "checkpoints"
    deadline = time.time() + 500
    try:
        while time.time() < deadline and proc.poll() is None:
            if ck.is_dir() and sum(p.isdigit() for p in os.listdir(ck)) >= 2:
                break
            time.sleep(0.005)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    steps = sorted(int(p) for p in os.listdir(ck) if p.isdigit())
    assert len(steps) >= 2 and steps[-1] < 12, f"the run finished before it could be killed: {steps}"
    r = _cli(["train", "--resume", str(d), "--quiet"], cache)
    assert r.returncode == 0, r.stderr
    for name in ("metrics.jsonl", "population.jsonl"):
        assert _jsonl(full_dir / name) == _jsonl(d / name), name  # every number, bit for bit
    import jax

    from jaxagents.checkpoint import Checkpointer

    trainer = runner.build(runner.load_config(None, TINY))
    like = jax.jit(jax.vmap(trainer.init))(jax.random.split(jax.random.key(0), 1))
    a, _, _ = Checkpointer(full_dir / "checkpoints").restore(like)
    b, _, _ = Checkpointer(d / "checkpoints").restore(like)
    jax.tree.map(lambda x, y: np.testing.assert_array_equal(x, y), (a.members.params, a.hparams, a.parents),
                 (b.members.params, b.hparams, b.parents))


@pytest.mark.heavy
def test_eval_every_member_or_the_best(full, capsys):
    d, _ = full
    assert main(["eval", str(d)]) == 0
    out = capsys.readouterr().out
    assert "eval/exploitability" in out and "members:" in out
    assert main(["eval", str(d), "--member", "best"]) == 0
    assert "member best" in capsys.readouterr().out
    res = runs.evaluate(str(d), quiet=True, member="2")
    assert res["members"]["member"] == [2]


class _Device:
    platform, process_index = "cpu", 0


def test_placement_names_idle_devices_and_the_sizes_that_use_them_all():
    from jaxagents.population.config import PopulationConfig, placement

    six = placement(PopulationConfig(size=6), 3, [_Device()] * 4)
    assert six["line"] == "population of 6 members on 3 of 4 cpu device(s): mesh pop=3 x data=1, 2 member(s) per device"
    assert "population.size=6 leaves 1 of 4 devices idle" in six["warning"] and "4, 8, 12" in six["warning"]
    assert "population.mesh.pop=3" in six["warning"]
    seven = placement(PopulationConfig(size=7), 1, [_Device()] * 4)  # a prime size: one device
    assert "leaves 3 of 4 devices idle" in seven["warning"]
    assert placement(PopulationConfig(size=8), 4, [_Device()] * 4)["warning"] is None
    asked = placement(PopulationConfig(size=6, mesh={"pop": 3}), 3, [_Device()] * 4)  # chosen explicitly: no warning
    assert asked["warning"] is None and asked["devices_used"] == 3
    data = placement(PopulationConfig(size=2, mesh={"data": 2}), 2, [_Device()] * 4)
    assert data["warning"] is None and data["members_per_device"] == 1 and data["devices_used"] == 4


@pytest.mark.parametrize("override, message", [
    ("population.size=0", "population.size must be a positive int, got 0"),
    ("population.pbt={fraction: 0.9}", "population.pbt.fraction must be a finite number in (0, 0.5]"),
    ("population.pbt={intervall: 3}", "did you mean population.pbt.interval"),
    ("population.sise=4", "did you mean population.size"),
    ("population.mesh={pop: 0}", "population.mesh.pop must be None or a positive int"),
])
def test_population_config_errors_are_one_line(override, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[").replace("]", r"\]")):
        runner.load_config(None, ["learner=ippo", "env.id=stag_hunt", override])
