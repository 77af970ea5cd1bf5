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
    (["train", "nope.yaml"], ["is not a file"]),
    (["train", "--resume", "/nonexistent/run"], ["not a run directory"]),
    (["eval", "/nonexistent/run"], ["not a run directory"]),
    (["train", "override-without-equals"], ["is not a file"]),
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


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes to read-only directories")
def test_read_only_run_dir(tmp_path, capsys):
    run = tmp_path / "run"
    _fake_run(run)
    os.chmod(run, 0o555)
    try:
        assert "not writable" in _cli_error(["train", "--resume", str(run)], capsys)
        assert "not writable" in _cli_error(["train", "--run-dir", str(run / "sub")], capsys)
    finally:
        os.chmod(run, 0o755)


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
