"""The bad-input catalogue: what a new user types wrong, and the one-line answer.

Each row is a command (or a call) and what its error must name -- the argument,
what is allowed -- or the behaviour that must hold (nothing written, nothing lost).
Nothing here compiles a training program: configs are checked before the learner
is built, and the learner is built before anything is compiled.
"""

import json
import os

import numpy as np
import pytest
import yaml

import jaxagents
from jaxagents import config as configs
from jaxagents import runner, tracking
from jaxagents.checkpoint import Checkpointer
from jaxagents.cli import main


def _cli_error(args, capsys) -> str:
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


# (command-line arguments after `jaxagents`, substrings the one-line error must contain)
CLI_CASES = [
    # unknown keys in every section, with the allowed keys and a suggestion
    (["train", "train.ppo.lrr=0.1"], ["train.ppo.lrr", "did you mean train.ppo.lr?", "allowed in train.ppo"]),
    (["train", "train.ppo.network.hiden=[8]"], ["train.ppo.network.hiden", "train.ppo.network.hidden"]),
    (["train", "train.evl_every=5"], ["train.evl_every", "train.eval_every"]),
    (["train", "env.paramz.x=1"], ["env.paramz", "env.params"]),
    (["train", "log.tensorbord=true"], ["log.tensorbord", "log.tensorboard"]),
    (["train", "bogus=1"], ["unknown config key bogus", "num_seeds"]),
    (["train", "learner=ippo", "train.eval_every=5"], ["train.eval_every", "allowed in train"]),
    # wrong types name the key and the type
    (["train", "train.eval_every=2.5"], ["train.eval_every must be an int", "2.5"]),
    (["train", "train.pool_size=2.5"], ["train.pool_size must be an int"]),
    (["train", "train.ppo.lr=abc"], ["train.ppo.lr must be a finite number", "'abc'"]),
    (["train", "train.ppo.anneal_lr=maybe"], ["train.ppo.anneal_lr must be True or False"]),
    (["train", "train.ppo.network.hidden=64"], ["train.ppo.network.hidden must be a list"]),
    (["train", "train.ppo=3"], ["train.ppo must be a mapping"]),
    (["train", "seed.x=1"], ["seed must be an int"]),
    (["train", "num_seeds=0"], ["num_seeds must be", "got 0"]),
    (["train", "num_seeds=1.5"], ["num_seeds must be", "got 1.5"]),
    (["train", "keep_checkpoints=0"], ["keep_checkpoints must be", "got 0"]),
    (["train", "checkpoint_every=-1"], ["checkpoint_every must be", "got -1"]),
    (["train", "learner=dqn"], ["learner must be one of"]),
    (["train", "env.id=3"], ["env.id must be an environment id"]),
    (["train", "log.wandb_project=3"], ["log.wandb_project"]),
    # non-finite numbers
    (["train", "train.ppo.lr=.inf"], ["train.ppo.lr must be a finite number", "inf"]),
    (["train", "train.ppo.lr=inf"], ["train.ppo.lr must be a finite number"]),
    (["train", "train.ppo.ent_coef=nan"], ["train.ppo.ent_coef must be a finite number", "nan"]),
    # the environment and the learner's construction, still before any directory
    (["train", "env.id=kuhn_pokr"], ["kuhn_poker"]),
    (["train", "env.id=prisoners_dilemma", "env.params.horizon=2.5"], ["env.params.horizon must be an int", "2.5"]),
    (["train", "env.id=prisoners_dilemma", "env.params.horizn=5"], ["env.params.horizn", "env.params.horizon"]),
    (["train", "env.kwargs.nope=1"], ["nope"]),
    (["train", "train.ppo.advantage=bogus"], ["advantage must be one of"]),
    # files and directories
    (["train", "nope.yaml"], ["neither a file, a bundled config nor a registered environment id"]),
    (["train", "--resume", "/nonexistent/run"], ["not a run directory"]),
    (["eval", "/nonexistent/run"], ["not a run directory"]),
    (["train", "override-without-equals"], ["neither a file, a bundled config nor a registered environment id"]),
    # options that do not apply
    (["bench", "--all", "--env-kwarg", "horizon=3"], ["--env-kwarg configures one ENV_ID, not --all"]),
]


@pytest.mark.parametrize("args, needles", CLI_CASES, ids=[" ".join(a) for a, _ in CLI_CASES])
def test_cli_bad_input(args, needles, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # a default run directory would appear under runs/
    err = _cli_error(args, capsys)
    for n in needles:
        assert n in err, (n, err)
    assert not (tmp_path / "runs").exists(), "a failed command left a run directory behind"


# every usual number notation, in overrides and in YAML files
NUMBERS = [
    ("3e-4", 3e-4), ("1E6", 1e6), ("1e+3", 1e3), (".5", 0.5), ("-.5", -0.5), ("+1.5e3", 1500.0), ("0.001", 0.001),
    ("1_000", 1000), ("1_000.5", 1000.5), ("10", 10), ("0x10", 16), ("-3", -3),
]


@pytest.mark.parametrize("text, value", NUMBERS)
def test_number_notations(text, value, tmp_path):
    assert configs.parse_value(text) == value and type(configs.parse_value(text)) is type(value)
    f = tmp_path / "c.yaml"
    f.write_text(f"train:\n  ppo:\n    ent_coef: {text}\n")
    got = runner.load_config(str(f))["train"]["ppo"]["ent_coef"] if value >= 0 else None
    if got is not None:
        assert got == float(value)


def test_readme_override_example():
    cfg = runner.load_config(os.path.join(os.path.dirname(__file__), "..", "baselines", "configs", "selfplay_leduc.yaml"),
                             ["num_seeds=4", "train.ppo.lr=3e-4"])
    assert cfg["train"]["ppo"]["lr"] == 3e-4 and cfg["num_seeds"] == 4


def test_integers_in_float_notation_and_special_values():
    cfg = runner.load_config(None, ["train.ppo.total_timesteps=1.6384e7", "train.ppo.ent_coef_final=null", "log.progress=no"])
    assert cfg["train"]["ppo"]["total_timesteps"] == 16_384_000 and isinstance(cfg["train"]["ppo"]["total_timesteps"], int)
    assert cfg["train"]["ppo"]["ent_coef_final"] is None and cfg["log"]["progress"] is False


def test_other_learner_over_the_default():
    """learner=ippo over the embedded default: the default's self-play train section
    does not apply; the learner's own defaults do, and the learner builds."""
    cfg = runner.load_config(None, ["learner=ippo", "train.num_envs=8"])
    assert cfg["train"] == {"num_envs": 8}
    assert runner.build(cfg).num_updates >= 1


def test_partial_config_is_completed():
    cfg = runner.prepare({"num_seeds": 2})  # every key optional, as runner.run documents
    assert cfg["num_seeds"] == 2 and cfg["checkpoint_every"] == runner.DEFAULT["checkpoint_every"]
    assert cfg["train"] == runner.DEFAULT["train"]


def test_malformed_yaml(tmp_path, capsys):
    f = tmp_path / "bad.yaml"
    f.write_text("train:\n  ppo: {lr: 0.1\n")
    err = _cli_error(["train", str(f)], capsys)
    assert "bad.yaml" in err and "not valid YAML" in err and "line" in err
    f.write_text("- 1\n- 2\n")
    assert "must be a YAML mapping" in _cli_error(["train", str(f)], capsys)


def _fake_run(d, keep=None):
    d.mkdir(parents=True)
    (d / "config.yaml").write_text(yaml.safe_dump(runner.prepare(None)))
    (d / "metrics.jsonl").write_text('{"update": 1, "env_steps": 16}\n')
    return {p.name: p.read_bytes() for p in d.iterdir() if p.is_file()}


def test_existing_run_is_refused_and_untouched(tmp_path, capsys):
    d = tmp_path / "run"
    before = _fake_run(d)
    err = _cli_error(["train", "--run-dir", str(d)], capsys)
    assert "--resume" in err and "--overwrite" in err
    err = _cli_error(["train", "--run-dir", str(d), "train.ppo.lrr=0.1"], capsys)  # a typo into a run
    assert "train.ppo.lrr" in err
    assert {p.name: p.read_bytes() for p in d.iterdir() if p.is_file()} == before


def test_run_dir_problems(tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    assert "is a file" in _cli_error(["train", "--run-dir", str(f)], capsys)
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    assert "is not empty" in _cli_error(["train", "--run-dir", str(other)], capsys)
    assert "only a run directory" in _cli_error(["train", "--run-dir", str(other), "--overwrite"], capsys)
    assert (other / "notes.txt").read_text() == "mine"
    run = tmp_path / "run"
    _fake_run(run)
    assert "drop --run-dir" in _cli_error(["train", "--resume", str(run), "--run-dir", str(other)], capsys)
    assert "give one of them" in _cli_error(["train", "--resume", str(run), "--overwrite"], capsys)
    assert "takes no CONFIG" in _cli_error(["train", "--resume", str(run), "seed=1"], capsys)


_READ_ONLY = """
import sys
from jaxagents.cli import main
run = sys.argv[1]
main(["train", "--resume", run])
main(["train", "--run-dir", run + "/sub"])
"""


def test_read_only_run_dir(tmp_path):
    """A run directory this user cannot write is refused in one line, before anything
    is written. As root (CI) the commands run without capabilities (``setpriv``): root
    then obeys the permission bits like any user, instead of writing anyway."""
    import shutil
    import subprocess
    import sys

    run = tmp_path / "run"
    _fake_run(run)
    before = sorted(os.listdir(run))
    prefix = []
    if os.geteuid() == 0:
        assert shutil.which("setpriv"), "setpriv (util-linux) runs the check without root's capabilities"
        prefix = ["setpriv", "--inh-caps=-all", "--bounding-set=-all"]
    os.chmod(run, 0o555)
    try:
        r = subprocess.run([*prefix, sys.executable, "-c", _READ_ONLY, str(run)], capture_output=True, text=True, timeout=120)
    finally:
        os.chmod(run, 0o755)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 2, r.stderr
    assert "cannot resume" in lines[0] and "not writable" in lines[0], lines[0]
    assert "cannot write run directory" in lines[1] and "not writable" in lines[1], lines[1]
    assert sorted(os.listdir(run)) == before


def test_eval_without_checkpoints(tmp_path, capsys):
    run = tmp_path / "run"
    _fake_run(run)
    assert "no checkpoint yet" in _cli_error(["eval", str(run)], capsys)
    assert not (run / "checkpoints").exists()


def test_make_none():
    with pytest.raises(TypeError, match="env_id must be a string"):
        jaxagents.make(None)


def test_vecenv_numpy_ints():
    env = jaxagents.make("kuhn_poker")
    assert jaxagents.VecEnv(env, num_envs=np.int64(4)).num_envs == 4
    with pytest.raises(ValueError, match="num_envs"):
        jaxagents.VecEnv(env, num_envs=2.5)


def test_float_where_int_param_is_meant():
    env = jaxagents.make("prisoners_dilemma")
    with pytest.raises(ValueError, match=r"params\.horizon must be an integer"):
        env.validate_params(env.default_params().replace(horizon=2.5))
    env.validate_params(env.default_params().replace(horizon=7))


# ----------------------------------------------------------------------- metrics and checkpoints


def test_half_written_metrics_line(tmp_path):
    p = tmp_path / "metrics.jsonl"
    p.write_text('{"update": 1, "env_steps": 4}\n{"update": 2, "env_steps": 8}\n{"update": 3, "env_')
    assert [r["update"] for r in tracking.read_rows(str(p))] == [1, 2]
    tracking.JsonlSink(str(p)).truncate_after(1)
    assert p.read_text() == '{"update": 1, "env_steps": 4}\n'


def test_nonfinite_losses_are_kept_and_marked():
    nan = float("nan")
    metrics = {
        "update": np.array([[1, 2]]), "env_steps": np.array([[4, 8]]),
        "policy_loss/agents": np.array([[0.5, nan]]), "grad_norm/agents": np.array([[1.0, np.inf]]),
        "eval/exploitability": np.array([[nan, 0.3]]), "episode_return/p0": np.array([[nan, nan]]),
    }
    rows = tracking.rows_from_metrics(metrics, 1)
    assert "eval/exploitability" not in rows[0] and "episode_return/p0" not in rows[1]  # not measured
    assert rows[1]["policy_loss/agents"] is None and rows[1]["grad_norm/agents"] is None
    assert rows[1]["nonfinite"] == ["policy_loss/agents", "grad_norm/agents"] and "nonfinite" not in rows[0]
    json.loads(json.dumps(rows[1], allow_nan=False))  # strict JSON
    assert "update 2" in runner._divergence(rows, {"w": np.ones(3)})
    assert "parameters" in runner._divergence(rows[:1], {"w": np.array([1.0, nan])})
    assert runner._divergence(rows[:1], {"w": np.ones(3)}) is None


def test_curve_panels(tmp_path):
    rows = [
        {"update": 0, "env_steps": 0, "eval/exploitability": 0.46, "eval/random/return/seat0": -0.5, "eval/random/win/seat0": 0.4},
        {"update": 1, "env_steps": 10, "episode_return/p0": -0.1, "policy_loss/agents": 0.1},
        {"update": 2, "env_steps": 20, "eval/exploitability": 0.02, "eval/exploitability@seeds": [0.01, 0.03],
         "eval/random/return/seat0": 0.3, "eval/random/win/seat0": 0.6, "episode_return/p0": 0.1},
    ]
    assert tracking.plot_curves(rows, str(tmp_path / "c.png")) and (tmp_path / "c.png").stat().st_size > 0
    assert {tracking.panel_of(k) for k in rows[0] if k.startswith("eval/")} == {
        "exploitability", "return (evaluation)", "win / loss rate (evaluation)"}
    assert tracking.panel_of("policy_loss/agents") is None


def _checkpoints(tmp_path, steps=(1, 2, 3)):
    d = tmp_path / "checkpoints"
    ck = Checkpointer(d, max_to_keep=None)
    for s in steps:
        ck.save(s, {"w": np.full(3, float(s), np.float32)}, {"c": 1})
    ck.close()
    return d


@pytest.mark.parametrize("damage", ["truncated data file", "missing manifest", "empty _METADATA"])
def test_corrupted_checkpoint_falls_back(tmp_path, damage):
    d = _checkpoints(tmp_path)
    state_dir = d / "3" / "state"
    if damage == "truncated data file":
        for f in state_dir.rglob("*"):
            if f.is_file() and f.parent.name == "d":
                f.write_bytes(f.read_bytes()[:5])
    elif damage == "missing manifest":
        for f in state_dir.rglob("manifest.ocdbt"):
            f.unlink()
    else:
        (state_dir / "_METADATA").write_text("")
    ck = Checkpointer(d)
    state, step, skipped = ck.restore_newest({"w": np.zeros(3, np.float32)})
    assert step == 2 and np.all(np.asarray(state["w"]) == 2.0)
    assert len(skipped) == 1 and str(d / "3") in skipped[0]
    assert not (d / "3").exists() and (tmp_path / "checkpoints.corrupt" / "3").is_dir()
    ck.save(3, {"w": np.full(3, 9.0, np.float32)}, {})  # the next save of step 3 is not skipped
    assert ck.latest_step() == 3
    ck.close()


def test_no_checkpoint_restores(tmp_path):
    d = _checkpoints(tmp_path, steps=(1, 2))
    for s in (1, 2):
        (d / str(s) / "state" / "_METADATA").write_text("")
    ck = Checkpointer(d)
    with pytest.raises(ValueError, match="no checkpoint of .* restores") as e:
        ck.restore_newest({"w": np.zeros(3, np.float32)})
    assert "_METADATA" in str(e.value) and str(d / "2") in str(e.value)
    ck.close()


@pytest.mark.skipif(any(__import__("importlib.util").util.find_spec(m) for m in ("tensorboardX", "torch")),
                    reason="a TensorBoard writer is installed")
def test_missing_log_package_before_any_directory(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert "pip install tensorboardX" in _cli_error(["train", "log.tensorboard=true"], capsys)
    assert not (tmp_path / "runs").exists()


def test_overwrite_starts_clean(tmp_path):
    d = tmp_path / "run"
    _fake_run(d)
    (d / "checkpoints").mkdir()
    (d / "curve.png").write_bytes(b"old")
    cfg = runner.prepare({"seed": 3})
    runner.check_new_run_dir(str(d), overwrite=True)
    runner.lay_out(str(d), cfg, overwrite=True)
    assert sorted(os.listdir(d)) == ["config.yaml"]
    assert yaml.safe_load((d / "config.yaml").read_text())["seed"] == 3


def test_atomic_write_leaves_no_temporary_file(tmp_path):
    p = tmp_path / "results.json"
    tracking.atomic_write(str(p), "{}")
    tracking.atomic_write(str(p), b"{\"a\": 1}")
    assert os.listdir(tmp_path) == ["results.json"] and json.loads(p.read_text()) == {"a": 1}


# ----------------------------------------------------------------------- one owner per run directory

# a run of a few seconds: 4 updates, a checkpoint every 2
RACE = ["train.ppo.num_envs=8", "train.ppo.num_steps=4", "train.ppo.total_timesteps=128", "train.eval_every=2",
        "train.eval_envs=8", "train.eval_steps=4", "checkpoint_every=2", "--quiet"]

# each process imports what a run imports first (not what is measured), then waits for
# the start signal, so that both reach the run directory within milliseconds of each other
_RACER = """
import os, sys, time
import jax
from jaxagents.cli import main
from jaxagents import runner
from jaxagents.learners.policy_gradient import selfplay
jax.devices()
go, out = sys.argv[1], sys.argv[2]
open(out + ".ready", "w").close()
while not os.path.exists(go):
    time.sleep(0.001)
t0 = time.perf_counter()
code = main(sys.argv[3:])
with open(out, "w") as f:
    f.write(f"{code} {time.perf_counter() - t0}")
sys.exit(code)
"""


@pytest.mark.heavy  # two real training runs' imports and compiles: ~35 s on 2 cores
def test_two_runs_racing_for_one_directory(tmp_path):
    """Two real processes start the same moment into one new run directory: one runs,
    the other is refused at once, naming the holder (host, pid), and the survivor's
    directory holds its run alone (its config, each update's row once, no lock left)."""
    import subprocess
    import sys
    import time

    d, go = tmp_path / "run", tmp_path / "go"
    procs = []
    for seed in (1, 2):
        args = [sys.executable, "-c", _RACER, str(go), str(tmp_path / f"out{seed}"),
                "train", *RACE, f"seed={seed}", "--run-dir", str(d)]
        procs.append(subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
    try:
        deadline = time.time() + 120
        while not all((tmp_path / f"out{seed}.ready").exists() for seed in (1, 2)) and time.time() < deadline:
            assert all(p.poll() is None for p in procs), [p.communicate()[1] for p in procs]
            time.sleep(0.05)
        go.write_text("")
        errs = [p.communicate(timeout=300)[1] for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    codes = [p.returncode for p in procs]
    assert sorted(codes) == [0, 2], (codes, errs)
    win, lose = (0, 1) if codes[0] == 0 else (1, 0)
    err = errs[lose].strip()
    assert len(err.splitlines()) == 1, err
    assert "is in use by another run" in err and f"pid {procs[win].pid}," in err and "host " in err, err
    code, elapsed = (tmp_path / f"out{lose + 1}").read_text().split()
    print(f"refused after {float(elapsed):.3f} s")
    assert int(code) == 2 and float(elapsed) < 1.0, f"refused after {elapsed} s"  # at once, not after its run
    assert yaml.safe_load((d / "config.yaml").read_text())["seed"] == win + 1
    rows = tracking.read_rows(str(d / "metrics.jsonl"))
    assert [r["update"] for r in rows] == [0, 1, 2, 3, 4]
    assert sorted(os.listdir(d)) == ["checkpoints", "config.yaml", "curve.png", "metrics.jsonl", "results.json"]
    assert sorted(os.listdir(d / "checkpoints")) == ["2", "4"]


def test_a_locked_run_directory_is_refused_at_once(tmp_path, capsys):
    """A directory held by a live run: a new run and a resume are refused in one line
    naming the holder (host, pid), nothing is written; releasing removes the lock (and
    the directory the lock made)."""
    import socket

    from jaxagents.rundir import LOCK, RunDirInUse, RunLock

    d = tmp_path / "new"
    lock = RunLock.acquire(str(d))
    try:
        err = _cli_error(["train", "--run-dir", str(d)], capsys)
        assert "is in use by another run" in err and f"host {socket.gethostname()}, pid {os.getpid()}," in err, err
        assert os.listdir(d) == [LOCK]
        with pytest.raises(RunDirInUse, match="in use"):
            RunLock.acquire(str(d))  # a second open file of the same process is refused too
    finally:
        lock.release()
    assert not d.exists()
    run = tmp_path / "run"
    before = _fake_run(run)
    with RunLock.acquire(str(run)):
        err = _cli_error(["train", "--resume", str(run)], capsys)
        assert "is in use by another run" in err and f"pid {os.getpid()}," in err, err
        assert _cli_error(["train", "--run-dir", str(run), "--overwrite"], capsys).count("in use") == 1
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()} == before and run.is_dir()


_HOLD_AND_DIE = """
import os, sys
from jaxagents.rundir import RunLock
RunLock.acquire(sys.argv[1])
os._exit(0)  # killed while running: the lock file stays behind
"""


def test_stale_lock_of_a_dead_run_is_named_and_taken_over(tmp_path):
    import socket
    import subprocess
    import sys

    from jaxagents.rundir import LOCK, RunLock

    d = tmp_path / "run"
    child = subprocess.run([sys.executable, "-c", _HOLD_AND_DIE, str(d)], capture_output=True, text=True, timeout=120)
    assert child.returncode == 0 and (d / LOCK).exists(), child.stderr
    pid = (d / LOCK).read_text().split("pid=")[1].split()[0]
    lock = RunLock.acquire(str(d))
    try:
        msg = lock.stale_message()
        assert f"locked by host {socket.gethostname()}, pid {pid} " in msg and "no longer running" in msg, msg
        assert f"pid={os.getpid()} " in (d / LOCK).read_text()
    finally:
        lock.release()
    assert d.is_dir() and not (d / LOCK).exists()  # the lock did not make this directory: it stays


_LOCK_RACER = """
import os, sys, time
from jaxagents.rundir import RunDirInUse, RunLock
go = sys.argv[2]
open(sys.argv[3], "w").close()
while not os.path.exists(go):
    time.sleep(0.001)
try:
    with RunLock.acquire(sys.argv[1]):
        time.sleep(1.0)
    print("ran")
except RunDirInUse as e:
    print("refused", e)
"""


def test_two_processes_racing_for_a_lock(tmp_path):
    """Two real processes take the lock of one new directory the same moment: one holds
    it, the other is refused (the training race itself: the slow test above)."""
    import subprocess
    import sys
    import time

    d, go = tmp_path / "run", tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", _LOCK_RACER, str(d), str(go), str(tmp_path / f"ready{i}")],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(2)]
    try:
        deadline = time.time() + 120
        while not all((tmp_path / f"ready{i}").exists() for i in range(2)) and time.time() < deadline:
            time.sleep(0.02)
        go.write_text("")
        outs = [p.communicate(timeout=120) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    first = sorted(o.split()[0] if o else e for o, e in outs)
    assert first == ["ran", "refused"], outs
    # no lock is left; the directory is gone unless the refused process made it (it won
    # the mkdir, lost the lock) -- then it stays, empty, as a folder the user could have made
    assert not d.exists() or not any(d.iterdir())


def test_member_on_a_single_run_is_refused_before_restoring(tmp_path, capsys):
    run = tmp_path / "run"
    _fake_run(run)  # no checkpoint: restoring first would fail with "no checkpoint yet"
    err = _cli_error(["eval", str(run), "--member", "1"], capsys)
    assert "--member 1 applies to a population run only" in err and "drop --member" in err, err
    err = _cli_error(["crossplay", str(run), "--members", "best", "--out", str(tmp_path / "x.png")], capsys)
    assert "--members best applies to population runs only" in err, err
    assert not (tmp_path / "x.png").exists()


def test_member_out_of_range_is_refused_before_restoring(tmp_path, capsys):
    run = tmp_path / "pop"
    run.mkdir()
    cfg = runner.prepare({"learner": "ippo", "env": {"id": "stag_hunt"}, "population": {"size": 4}})
    (run / "config.yaml").write_text(yaml.safe_dump(cfg))  # no checkpoint: restoring first would fail otherwise
    for member in ("99", "4", "-1", "worst"):
        err = _cli_error(["eval", str(run), "--member", member], capsys)
        assert f"--member must be all, best or a member index 0..3 of {str(run)!r}, got {member!r}" in err, err


def test_public_reset_and_step_refuse_what_validate_params_refuses():
    import jax
    import jax.numpy as jnp

    env = jaxagents.make("prisoners_dilemma")
    bad = env.default_params().replace(horizon=2.5)
    with pytest.raises(ValueError, match=r"params\.horizon must be an integer"):
        env.reset(jax.random.key(0), bad)
    state, _ = env.reset(jax.random.key(0))
    acts = {r: jnp.zeros(1, jnp.int32) for r in env.roles}
    with pytest.raises(ValueError, match=r"params\.horizon must be an integer"):
        env.step(jax.random.key(0), state, acts, bad)
    with pytest.raises(ValueError, match=r"params\.horizon must be an integer"):
        jaxagents.VecEnv(env, 2).reset(jax.random.key(0), bad)
    with pytest.raises(ValueError, match="horizon"):  # the environment's own range check, as validate_params
        env.reset(jax.random.key(0), env.default_params().replace(horizon=0))
    # traced params are not checked (nothing on the compiled path)
    jax.jit(env.step)(jax.random.key(0), state, acts, env.default_params())


@pytest.mark.slow  # eager steps of every continuous env, ~15 s
def test_nonfinite_continuous_actions_are_refused_outside_jit():
    import jax
    import jax.numpy as jnp

    env = jaxagents.make("robots_navigation", action_mode="continuous", num_robots=2)
    state, _ = env.reset(jax.random.key(0))
    acts = {"robot": jnp.zeros((2, 2)).at[1, 0].set(jnp.nan)}
    with pytest.raises(ValueError, match=r"actions\['robot'\] must be finite, got nan at index \(1, 0\)"):
        env.step(jax.random.key(1), state, acts)
    vec = jaxagents.VecEnv(env, 2)
    vs, _ = vec.reset(jax.random.key(0))
    with pytest.raises(ValueError, match="must be finite, got inf"):
        vec.step(jax.random.key(1), vs, {"robot": jnp.full((2, 2, 2), jnp.inf)})
    env.step(jax.random.key(1), state, {"robot": jnp.zeros((2, 2))})  # finite: fine
    jax.jit(env.step)(jax.random.key(1), state, acts)  # under jit: not checked (documented in Env.step)


@pytest.mark.slow  # (10-20 s: a fresh interpreter imports every environment; the default suite keeps its 10 minutes)
def test_output_cut_short_is_quiet(tmp_path):
    """``jaxagents list | head``: the reader goes away; no "Broken pipe" noise."""
    import subprocess
    import sys

    p = subprocess.Popen([sys.executable, "-m", "jaxagents.cli", "list"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()  # before the command writes anything
    err = p.stderr.read().decode()
    assert p.wait(timeout=120) == 141 and err == "", err


_FULL_DISK = """
import resource, signal, sys
import numpy as np
from jaxagents.checkpoint import Checkpointer
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG) instead of killing us
ck = Checkpointer(sys.argv[1], max_to_keep=None)
ck.save(1, {"w": np.ones(4, np.float32)}, {"c": 1})
resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
try:
    ck.save(2, {"w": np.random.default_rng(0).normal(size=(256, 1024)).astype(np.float32)}, {"c": 1})
except OSError as e:
    print(e.filename, "|", e.strerror)
"""


def test_a_checkpoint_that_cannot_be_written_is_one_line(tmp_path):
    """A save that the file system refuses (here a file-size limit: EFBIG, as a full
    disk gives ENOSPC) is an OSError naming the checkpoint, without orbax's tracebacks;
    its temporary directory is removed and the older checkpoint restores."""
    import subprocess
    import sys

    d = tmp_path / "checkpoints"
    r = subprocess.run([sys.executable, "-c", _FULL_DISK, str(d)], capture_output=True, text=True, timeout=180)
    assert r.stdout.strip() == f"{d / '2'} | File too large", (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and "ERROR" not in r.stderr, r.stderr
    assert sorted(os.listdir(d)) == ["1"]
    ck = Checkpointer(d)
    state, step, skipped = ck.restore_newest({"w": np.zeros(4, np.float32)})
    assert step == 1 and not skipped and np.all(np.asarray(state["w"]) == 1)
    ck.close()
    e = runner._write_failed(OSError(28, "No space left on device", str(d / "2")), "the checkpoint of update 2",
                             str(d / "2"), str(tmp_path), 1)
    msg = str(e)
    assert "\n" not in msg and f"cannot write the checkpoint of update 2 ({d / '2'}): No space left on device" in msg
    assert "up to update 1 are intact" in msg and f"jaxagents train --resume {tmp_path}" in msg


def test_a_batch_too_large_for_memory_is_refused_before_compiling(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(runner, "_available_memory", lambda: (2**30, "test memory"))
    err = _cli_error(["train", "train.ppo.num_envs=16777216", "train.ppo.total_timesteps=268435456"], capsys)
    assert "the train state alone needs" in err and "more than the 1.0 GiB of test memory" in err, err
    assert "lower num_envs" in err
    assert not (tmp_path / "runs").exists()


def test_experiment_scripts_check_their_outputs_first(tmp_path, capsys):
    import argparse
    import glob

    from jaxagents.outputs import OUTPUT_DIRS, OUTPUT_FILES, check_outputs

    f = tmp_path / "file"
    f.write_text("x")
    for ns, needle in (
        (argparse.Namespace(out=str(tmp_path / "missing" / "x.json")), "does not exist"),
        (argparse.Namespace(json=str(f / "x.json")), f"{f} is a file, not a folder"),
        (argparse.Namespace(plot=str(tmp_path)), "is a folder, not a file"),
        (argparse.Namespace(runs_dir=str(f)), "is a file, not a folder"),
        (argparse.Namespace(runs_dir=str(f / "runs")), f"{f} is a file, not a folder"),
    ):
        with pytest.raises(SystemExit) as e:
            check_outputs(ns, prog="script.py")
        err = capsys.readouterr().err.strip()
        assert e.value.code == 2 and len(err.splitlines()) == 1 and needle in err, err
    ok = argparse.Namespace(out=str(tmp_path / "x.json"), runs_dir=str(tmp_path / "a" / "b"))
    assert check_outputs(ok) is ok
    # every experiment script that takes an output path checks it right after parsing
    options = tuple(f'"--{n.replace("_", "-")}"' for n in OUTPUT_FILES + OUTPUT_DIRS)
    root = os.path.join(os.path.dirname(__file__), "..", "experiments")
    for path in glob.glob(os.path.join(root, "*.py")):
        text = open(path).read()
        if any(f"add_argument({o}" in text for o in options):
            assert "check_outputs" in text, path
