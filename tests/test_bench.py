"""Harness and CLI checks that tests/test_cli_bench.py does not cover: JaxMARL on its
own, usage errors in one line, help without a subcommand. Tiny sizes; speeds are
never asserted."""

import pytest

from jaxagents import bench
from jaxagents.cli import main


def test_benchmark_jaxmarl_smoke():
    pytest.importorskip("jaxmarl")
    res = bench.benchmark_jaxmarl("MPE_simple_spread_v3", num_envs=(2,), steps=5, repeats=1)
    (row,) = res.rows
    assert (row.library, row.mode, row.num_agents, row.num_envs, row.steps) == ("jaxmarl", "jaxmarl", 3, 2, 5)
    assert row.compile_s > 0 and row.best_env_steps_per_s > 0
    assert row.best_agent_steps_per_s == pytest.approx(3 * row.best_env_steps_per_s)
    assert res.machine["jaxmarl"]


def test_benchmark_jaxmarl_unknown_id():
    pytest.importorskip("jaxmarl")
    with pytest.raises(ValueError, match="Did you mean: MPE_simple_spread_v3"):
        bench.benchmark_jaxmarl("MPE_simple_sprad_v3", num_envs=1, steps=1, repeats=1)


def test_benchmark_env_or_id_type():
    with pytest.raises(TypeError, match="env_or_id"):
        bench.benchmark(42, num_envs=1, steps=1, repeats=1)


def test_cli_without_subcommand_prints_help(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    assert "list" in out and "bench" in out


@pytest.mark.parametrize(
    "argv, match",
    [
        (["bench", "stag_hunt", "--num-envs", "x"], "invalid int value"),
        (["frobnicate"], "invalid choice"),
        (["bench", "stag_hunt", "--mode", "fast", "--num-envs", "1"], "mode must be one of"),
    ],
)
def test_cli_usage_errors_are_one_line(capsys, argv, match):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert match in err and "Traceback" not in err and len(err.splitlines()) == 1
