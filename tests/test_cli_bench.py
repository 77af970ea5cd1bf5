"""The throughput harness and the `jaxagents` command (tiny sizes; speeds are never asserted)."""

import json

import pytest

from jaxagents import bench
from jaxagents.cli import main


@pytest.fixture(scope="module")
def result():
    return bench.benchmark("prisoners_dilemma", num_envs=(1, 4), steps=10, repeats=1, mode="all")


def test_benchmark_rows_are_consistent(result):
    assert [(r.mode, r.num_envs) for r in result.rows] == [
        (m, n) for m in ("vec", "autoreset", "bare") for n in (1, 4)
    ]
    for r in result.rows:
        assert r.num_agents == 2 and r.steps == 10 and r.compile_s > 0
        assert r.best_env_steps_per_s >= r.median_env_steps_per_s > 0
        assert r.best_agent_steps_per_s == pytest.approx(2 * r.best_env_steps_per_s)
    assert len(result.overheads()) == 4  # vec and autoreset, for each size
    assert "cost vs bare" in result.overhead_table()
    assert "fewer than 3 timed runs" in result.table()


def test_result_files(result, tmp_path):
    result.to_json(tmp_path / "r.json")
    data = json.loads((tmp_path / "r.json").read_text())
    assert len(data["rows"]) == 6 and data["machine"]["jax"]
    result.plot(tmp_path / "r.png")
    assert (tmp_path / "r.png").stat().st_size > 1000


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(num_envs=0), "num_envs"),
        (dict(num_envs=(1, -2)), "num_envs"),
        (dict(steps=0), "steps"),
        (dict(repeats=0), "repeats"),
        (dict(mode="fast"), "mode"),
    ],
)
def test_benchmark_argument_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        bench.benchmark("prisoners_dilemma", **{"num_envs": 1, "steps": 1, "repeats": 1, **kwargs})


def test_cli_list(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "tic_tac_toe" in out and "first x1, second x1" in out


def test_cli_bench_writes_files(capsys, tmp_path):
    code = main(["bench", "stag_hunt", "--num-envs", "2", "--steps", "5", "--repeats", "1",
                 "--env-kwarg", "horizon=3", "--json", str(tmp_path / "b.json"), "--plot", str(tmp_path / "b.png")])
    assert code == 0
    out = capsys.readouterr().out
    assert "stag_hunt" in out and "command: jaxagents bench stag_hunt" in out
    assert json.loads((tmp_path / "b.json").read_text())["rows"][0]["num_envs"] == 2


@pytest.mark.parametrize(
    "argv, match",
    [
        (["bench", "tictactoe"], "Did you mean: tic_tac_toe"),
        (["bench"], "needs an ENV_ID or --all"),
        (["bench", "stag_hunt", "--num-envs", "0"], "num_envs"),
        (["bench", "stag_hunt", "--env-kwarg", "horizn=3", "--num-envs", "1"], "unknown keyword argument 'horizn'"),
        (["bench", "stag_hunt", "--env-kwarg", "horizon"], "key=value"),
        (["bench", "--all", "--compare-pgx", "kuhn_poker"], "--compare-pgx compares one ENV_ID"),
        (["bench", "kuhn_poker", "--compare-pgx", "kuhn_poker", "--compare-jaxmarl", "hanabi"], "not both"),
        (["bench", "overcooked", "--jaxmarl-kwarg", "layout=cramped_room"], "only applies with --compare-jaxmarl"),
        # checked before measuring: one line, no progress lines before it
        (["bench", "stag_hunt", "--json", "no_such_folder/b.json"], "--json no_such_folder/b.json: folder"),
        (["bench", "stag_hunt", "--plot", "no_such_folder/b.png"], "--plot no_such_folder/b.png: folder"),
        (["bench", "stag_hunt", "--json", "."], "--json .: is a folder"),
        # the language learner's config fields: checked before anything compiles
        (["bench-lm", "learner", "--games", "4", "--learner-kwarg", "nope=1"], "not fields of LanguageSelfPlayConfig"),
        (["bench-lm", "learner", "--games", "4", "--learner-kwarg", "kl_ref_snapshots=2"], "set kl_coef > 0"),
        (["bench-lm", "learner", "--learner-kwarg", "kl_coef"], "--learner-kwarg expects key=value"),
    ],
)
def test_cli_errors_exit_2_with_one_line(capsys, argv, match):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert match in err and "Traceback" not in err and len(err.splitlines()) == 1


@pytest.mark.slow  # (8 s: the default suite keeps its 10 minutes)
def test_compare_with_jaxmarl():
    pytest.importorskip("jaxmarl")
    from jaxagents.compat import from_jaxmarl
    import jaxmarl

    ours = from_jaxmarl(jaxmarl.make("MPE_simple_spread_v3"))
    res = bench.compare(ours, "MPE_simple_spread_v3", num_envs=(2,), steps=5, repeats=1)
    (ratio,) = res.ratios()
    assert ratio["num_envs"] == 2 and ratio["best_env_ratio"] > 0
    assert {r.library for r in res.merged().rows} == {"jaxagents", "jaxmarl"}
    assert "ratio jaxagents / JaxMARL" in res.table()


@pytest.mark.slow  # (6-12 s: the default suite keeps its 10 minutes; tests/test_bench.py and tests/compat run JaxMARL's side and the adapter)
def test_cli_bench_jaxmarl_adapter(capsys):
    pytest.importorskip("jaxmarl")
    assert main(["bench", "jaxmarl:MPE_simple_spread_v3", "--num-envs", "2", "--steps", "3", "--repeats", "1"]) == 0
    assert "jaxmarl:MPE_simple_spread_v3" in capsys.readouterr().out


@pytest.mark.slow  # (7-14 s: the default suite keeps its 10 minutes; tests/test_bench.py runs pgx's side)
def test_cli_bench_compare_pgx(capsys, tmp_path):
    pytest.importorskip("pgx")
    out_json = tmp_path / "c.json"
    argv = ["bench", "kuhn_poker", "--compare-pgx", "kuhn_poker", "--num-envs", "2", "--steps", "4",
            "--repeats", "1", "--json", str(out_json)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "ratio jaxagents / pgx" in out and "pgx 2." in out
    data = json.loads(out_json.read_text())
    assert [(r["library"], r["num_envs"]) for r in data["rows"]] == [("jaxagents", 2), ("pgx", 2)]
    (ratio,) = data["ratios"]
    assert ratio["theirs_library"] == "pgx" and ratio["theirs_env"] == "kuhn_poker" and ratio["best_env_ratio"] > 0
    assert all(r["episodes"] >= 2 for r in data["rows"])  # both sides finished and reset hands


def test_env_kwargs_are_literals_and_true_false_are_booleans():
    """``--env-kwarg flag=false`` must reach a constructor as ``False``, not as the truthy
    string ``"false"``; numbers and tuples are literals, other words stay strings."""
    from jaxagents.cli import _parse_kwargs

    got = _parse_kwargs(["a=false", "b=True", "c=3", "d=(1, 2)", "e=olg", "f=FALSE"])
    assert got == {"a": False, "b": True, "c": 3, "d": (1, 2), "e": "olg", "f": False}
    assert got["a"] is False and got["b"] is True
