"""Harness and CLI checks that tests/test_cli_bench.py does not cover: JaxMARL on its
own, usage errors in one line, help without a subcommand. Tiny sizes; speeds are
never asserted."""

import jax
import pytest

import jaxagents
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


def test_train_overrides_may_follow_options(capsys):
    from jaxagents.cli import build_parser, parse_args

    args = parse_args(build_parser(), ["train", "c.yaml", "a=1", "--run-dir", "d", "--quiet", "b.c=2"])
    assert (args.config, args.overrides, args.run_dir, args.quiet) == ("c.yaml", ["a=1", "b.c=2"], "d", True)
    assert main(["train", "c.yaml", "--quiet", "--frobnicate"]) == 2
    assert "unrecognized arguments: --frobnicate" in capsys.readouterr().err


# --------------------------------------------------------------------------- pgx
def test_pgx_sampler_draws_legal_actions_and_auto_resets():
    pgx = pytest.importorskip("pgx")
    import jax
    import jax.numpy as jnp

    env, n = pgx.make("tic_tac_toe"), 16
    sample, step = bench._pgx_parts(env, n)

    @jax.jit
    def rollout(key):
        state = jax.vmap(env.init)(jax.random.split(key, n))

        def body(state, k):
            k_act, k_step = jax.random.split(k)
            a = sample(k_act, state, None)
            legal = state.legal_action_mask[jnp.arange(n), a]
            state, _, _, done = step(k_step, state, None, a, None)
            return state, (legal, done, state.terminated)

        return jax.lax.scan(body, state, jax.random.split(key, 12))[1]

    legal, done, terminated = rollout(jax.random.key(0))
    assert legal.all()  # masks respected: an illegal move would end the game at once
    # games last 5-9 moves: every env finished one within 12 steps, none finished at step 1-4
    assert done.sum() >= n and done[:4].sum() == 0 and terminated.sum() == done.sum()


def test_benchmark_pgx_prefix_and_errors():
    pytest.importorskip("pgx")
    with pytest.raises(ValueError, match="Did you mean: leduc_holdem"):
        bench.benchmark_pgx("leduc_holdme", num_envs=1, steps=1, repeats=1)
    with pytest.raises(ValueError, match="mode, params, env_kwargs and action_rng do not apply"):
        bench.benchmark("pgx:kuhn_poker", num_envs=1, steps=1, repeats=1, mode="all")
    with pytest.raises(ValueError, match="unknown pgx environment id 'tictactoe'"):
        bench.compare_pgx("tic_tac_toe", "tictactoe", num_envs=1, steps=1, repeats=1)
    res = bench.benchmark("pgx:kuhn_poker", num_envs=(2,), steps=6, repeats=1)
    (row,) = res.rows
    assert (row.library, row.env, row.mode, row.num_agents, row.num_envs) == ("pgx", "kuhn_poker", "pgx", 2, 2)
    # a Kuhn hand lasts 2 or 3 moves: each env finishes 2 or 3 hands in 6 steps
    assert 4 <= row.episodes <= 6
    assert res.machine["pgx"] and "pgx " in res.table()


def _flops(program):
    run, args = program
    return jax.jit(run).lower(*args).compile().cost_analysis()["flops"]


@pytest.mark.slow  # 8-14 s each: the default suite keeps its 10 minutes
@pytest.mark.parametrize("backend", ["jaxmarl", "jaxagents"])
def test_timed_programs_keep_every_output(backend):
    """Nothing a step computes is dead code in the timed program: its compiled flops are
    those of the same program returning every step's observations and info (which
    nothing can drop). When the JaxMARL side's observations were discarded (before
    2026-11-28), XLA removed their computation, 19% of MPE's step (18,089 against
    22,217 flops), and this failed (the last assert makes that case again). Flops, not
    equality of programs: XLA may duplicate a cheap value into two fusions."""
    from jaxagents.bench.jaxmarl import _jaxmarl_program
    from jaxagents.bench.ours import _jaxagents_program

    key = jax.random.key(0)
    if backend == "jaxmarl":
        pytest.importorskip("jaxmarl")
        from jaxagents.compat.jaxmarl import make_jaxmarl

        env = make_jaxmarl("MPE_simple_spread_v3")
        program = lambda emit: _jaxmarl_program(env, 4, 3, key, emit)  # noqa: E731
    else:
        env = jaxagents.make("robots_navigation")
        program = lambda emit: _jaxagents_program(env, "vec", 4, 3, key, env.default_params(), emit=emit)  # noqa: E731
    timed, full = _flops(program(False)), _flops(program(True))
    assert timed >= 0.99 * full, (timed, full)
    if backend == "jaxmarl":  # the check can fail: the same step with its observations dropped
        run, (k, state, aux, params) = program(False)
        dropped = jax.jit(lambda k, s: run(k, s, aux, params)[1])  # only the state: obs and info are dead
        assert dropped.lower(k, state).compile().cost_analysis()["flops"] < 0.99 * full
