"""The ``jaxagents`` command: ``list``, ``bench``, ``bench-lm``, ``crossplay``, ``train`` and ``eval``
(the last two in ``jaxagents.cli_train``). Errors print one line to stderr and exit
with status 2."""

from __future__ import annotations

import argparse
import ast
import os
import shlex
import sys

from jaxagents.core import registry
from jaxagents.outputs import check_writable


class CLIError(Exception):
    """A user error: reported as one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one line on stderr (no usage dump), status 2."""

    def error(self, message):
        sys.stderr.write(f"{self.prog}: error: {message} (see {self.prog} --help)\n")
        raise SystemExit(2)


def _parse_kwargs(pairs: list[str] | None, flag: str = "--env-kwarg") -> dict:
    """``["horizon=5", "layout=cramped_room"]`` -> ``{"horizon": 5, "layout": "cramped_room"}``
    (values parsed as Python literals when they are, ``true``/``false`` in any case as
    booleans, else kept as strings: ``flag=false`` must not reach a constructor as a
    truthy string)."""
    out = {}
    for pair in pairs or []:
        if "=" not in pair:
            raise CLIError(f"{flag} expects key=value, got {pair!r}")
        k, v = pair.split("=", 1)
        if v.lower() in ("true", "false"):
            out[k] = v.lower() == "true"
            continue
        try:
            out[k] = ast.literal_eval(v)
        except (ValueError, SyntaxError):
            out[k] = v
    return out


# --------------------------------------------------------------------------- list
def cmd_list(args) -> int:
    """``jaxagents list``: print every registered id, its roles and its description; returns 0."""
    rows = []
    for env_id in registry.list_envs():
        s = registry.spec(env_id)
        try:
            env = registry.make(env_id)
            roles = ", ".join(f"{k} x{r.num_agents}" for k, r in env.roles.items())
        except Exception as e:  # an env whose optional dependency is missing still lists
            roles = f"(cannot construct: {type(e).__name__}: {e})"
        rows.append((env_id, roles, s.description))
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    print(f"{'id':<{w0}}  {'roles':<{w1}}  description")
    for env_id, roles, desc in rows:
        print(f"{env_id:<{w0}}  {roles:<{w1}}  {desc}")
    return 0


def cmd_list_tasks(args) -> int:
    """``jaxagents list-tasks [ENV_ID]``: the named tasks an environment offers (its class's
    ``tasks()`` classmethod: ``{name: one-line question}``), one per line; without an id,
    those of every registered environment that offers tasks. Returns 0, or 2 when the
    given environment offers none."""
    ids = [args.env_id] if args.env_id else registry.list_envs()
    found = False
    for env_id in ids:
        cls = registry.load_entry_point(registry.spec(env_id).entry_point)
        tasks = getattr(cls, "tasks", None)
        if tasks is None:
            continue
        found = True
        table = tasks()
        width = max(map(len, table))
        print(f"{env_id}: {len(table)} tasks (`jaxagents train` with env kwargs task=NAME)")
        for name, line in table.items():
            print(f"  {name:<{width}}  {line}")
    if not found:
        which = f"{args.env_id!r} offers" if args.env_id else "no registered environment offers"
        print(f"{which} no named tasks (an environment offers them with a tasks() classmethod)", file=sys.stderr)
        return 2
    return 0


# --------------------------------------------------------------------------- bench
def cmd_bench(args) -> int:
    """``jaxagents bench``: measure one environment (``ENV_ID``) or every registered one
    (``--all``), optionally against a JaxMARL or pgx counterpart, and print the table
    (and the auto-reset overheads); ``--json``/``--plot`` write the results.

    Option combinations and output paths are checked before anything compiles
    (``CLIError``); returns 0.
    """
    from jaxagents import bench

    if args.repeats is None:
        args.repeats = 3
    # --all is the smoke/main-job run over every registered env: small sizes unless asked
    # otherwise, because compile time (one program per env and size) dominates it.
    if args.num_envs is None:
        args.num_envs = [1, 64, 1024] if args.all else [1, 64, 1024, 4096]
    if args.steps is None:
        args.steps = 200 if args.all else 1000
    if args.env_id is None and not args.all:
        raise CLIError("bench needs an ENV_ID or --all")
    if args.env_id is not None and args.all:
        raise CLIError("give either an ENV_ID or --all, not both")
    if args.compare_jaxmarl and args.all:
        raise CLIError("--compare-jaxmarl compares one ENV_ID, not --all")
    if args.compare_pgx and args.all:
        raise CLIError("--compare-pgx compares one ENV_ID, not --all")
    if args.compare_pgx and args.compare_jaxmarl:
        raise CLIError("give either --compare-jaxmarl or --compare-pgx, not both")
    if args.action_rng != "threefry" and (args.compare_jaxmarl or args.compare_pgx):
        raise CLIError("--action-rng applies to a single library's run; comparisons draw both sides with threefry")
    if args.env_kwarg and args.all:
        raise CLIError("--env-kwarg configures one ENV_ID, not --all (every environment runs with its defaults)")
    if args.jaxmarl_kwarg and not args.compare_jaxmarl:
        raise CLIError("--jaxmarl-kwarg only applies with --compare-jaxmarl (a jaxmarl:ID env takes --env-kwarg)")
    for option, path in (("--json", args.json), ("--plot", args.plot)):
        check_writable(option, path)  # before measuring, not after
    command = "jaxagents " + " ".join(shlex.quote(a) for a in args.argv)
    env_kwargs = _parse_kwargs(args.env_kwarg)
    jaxmarl_kwargs = _parse_kwargs(args.jaxmarl_kwarg)
    ids = registry.list_envs() if args.all else [args.env_id]
    for env_id in ids:
        if not env_id.startswith((bench.JAXMARL_PREFIX, bench.PGX_PREFIX)):
            registry.spec(env_id)  # unknown ids fail before anything compiles

    def progress(row):
        print(f"  measured {row.library} {row.env} mode={row.mode} num_envs={row.num_envs}: "
              f"{row.best_env_steps_per_s:,.0f} env-steps/s (compile {row.compile_s:.1f}s)", file=sys.stderr)

    common = dict(num_envs=args.num_envs, steps=args.steps, repeats=args.repeats, mode=args.mode, progress=progress)
    if args.compare_jaxmarl or args.compare_pgx:
        if args.compare_jaxmarl:
            result = bench.compare(args.env_id, args.compare_jaxmarl, env_kwargs=env_kwargs,
                                   jaxmarl_kwargs=jaxmarl_kwargs, **common)
        else:
            result = bench.compare_pgx(args.env_id, args.compare_pgx, env_kwargs=env_kwargs, **common)
        result.ours.command = command
        merged = result.merged()
        merged.command = command
        print(merged.table())
        print("\n" + result.ratio_title())
        print(result.ratio_table())
    else:
        results = [bench.benchmark(i, env_kwargs=env_kwargs if not args.all else None, action_rng=args.action_rng,
                                   **common) for i in ids]
        result = merged = bench.BenchResult.merge(results, command=command)
        print(merged.table())
    if merged.overheads():
        print("\nauto-reset cost against a bare step (no reset)")
        print(merged.overhead_table())
    if args.json:
        result.to_json(args.json)
        print(f"wrote {args.json}", file=sys.stderr)
    if args.plot:
        merged.plot(args.plot)
        print(f"wrote {args.plot}", file=sys.stderr)
    return 0


# --------------------------------------------------------------------------- bench-lm
def cmd_bench_lm(args) -> int:
    """``jaxagents bench-lm``: tokens/s of generation (``generate``) or game-steps/s of
    language-model self-play on a text game (``selfplay``); ``--json`` writes the rows."""
    import json

    from jaxagents.bench import lm
    from jaxagents.bench.protocol import machine_info

    check_writable("--json", args.json)
    for name, values in (("--batch", args.batch), ("--games", args.games)):
        if values is not None and any(v < 1 for v in values):
            raise CLIError(f"{name} takes positive integers, got {values}")
    if args.model not in lm.MODEL_SHAPES and not os.path.isdir(args.model):
        raise CLIError(f"--model must be one of {', '.join(lm.MODEL_SHAPES)} or a checkpoint folder, got {args.model!r}")

    def progress(row):
        d = row.as_dict()
        print(f"  {row.what} {row.model} x{row.batch}: {d['tokens_per_s']:,.0f} tokens/s, "
              f"{d['game_steps_per_s']:,.1f} game-steps/s (compile {row.compile_s:.1f}s)", file=sys.stderr)

    common = dict(model=args.model, new_tokens=args.new_tokens, repeats=args.repeats, dtype=args.dtype,
                  progress=progress)
    if args.mode == "generate":
        rows = lm.benchmark_generation(batch_sizes=tuple(args.batch), prompt_len=args.prompt_len or 64, **common)
    elif args.mode == "learner":
        if args.model != "tiny" and not os.path.isdir(args.model):
            raise CLIError(f"bench-lm learner: --model must be tiny (the learner's model from scratch) or a checkpoint "
                           f"folder, got {args.model!r}")
        registry.spec(args.game)
        rows = lm.benchmark_learner(args.game, num_games=tuple(args.games), max_turns=args.turns,
                                    prompt_len=args.prompt_len or 320, constrained=args.constrained,
                                    env_kwargs=_parse_kwargs(args.env_kwarg),
                                    learner_kwargs=_parse_kwargs(args.learner_kwarg, "--learner-kwarg"), **common)
    else:
        registry.spec(args.game)
        rows = lm.benchmark_selfplay(args.game, num_games=tuple(args.games), max_turns=args.turns,
                                     prompt_len=args.prompt_len or 1024, tokenizer=args.tokenizer,
                                     constrained=args.constrained, **common)
    print(f"{'what':<28} {'model':<14} {'batch':>6} {'tokens/s':>12} {'game-steps/s':>13} {'compile s':>10}")
    for row in rows:
        d = row.as_dict()
        print(f"{row.what:<28} {row.model:<14} {row.batch:>6} {d['tokens_per_s']:>12,.0f} "
              f"{d['game_steps_per_s']:>13,.1f} {row.compile_s:>10.1f}")
    if args.json:
        from jaxagents.tracking import atomic_write

        command = "jaxagents " + " ".join(shlex.quote(a) for a in args.argv)
        atomic_write(args.json, json.dumps({"command": command, "machine": machine_info(),
                                                 "rows": [r.as_dict() for r in rows]}, indent=1))
        print(f"wrote {args.json}", file=sys.stderr)
    return 0


# --------------------------------------------------------------------------- crossplay
def cmd_crossplay(args) -> int:
    """``jaxagents crossplay``: play the final policies of ``args.run_dirs`` against each
    other, print the matrix with its IQM summaries and bootstrap intervals, and write
    the heatmap ``--out`` with ``.json`` and ``.csv`` next to it; returns 0. Warns on
    stderr when episodes did not finish within ``--steps``."""
    import json

    import jax
    import numpy as np

    from jaxagents.evaluation import crossplay as cp
    from jaxagents.runs import load_policies
    from jaxagents.tracking import atomic_write

    out = args.out
    stem = out[: -len(os.path.splitext(out)[1])] if os.path.splitext(out)[1] else out
    for option, path in (("--out", out), ("--out", stem + ".json"), ("--out", stem + ".csv")):
        check_writable(option, path)
    for d in args.run_dirs:
        if not os.path.isfile(os.path.join(d, "config.yaml")):
            raise CLIError(f"{d!r} is not a run directory (no config.yaml)")
    pol = load_policies(args.run_dirs, args.members)  # checks the environments first
    team = {"team": True, "row": False, "auto": pol.learner != "selfplay"}[args.score]
    res = cp.crossplay(pol.agents, pol.env, pol.params, jax.random.key(args.seed), env_params=pol.env_params,
                       episodes=args.episodes, num_steps=args.steps, seeds=args.seeds, team=team, names=pol.names,
                       batch_size=args.batch_size)
    K = len(pol.names)
    what = "team return" if team else "row policy's return (row in one seat, column in the others)"
    print(f"cross-play of {K} policies, {args.seeds} seed(s) x {args.episodes} episodes per cell and seat: {what}")
    w = max(len(n) for n in pol.names)
    print(" " * (w + 2) + " ".join(f"{i:>9}" for i in range(K)))
    for i, (name, row) in enumerate(zip(pol.names, res.matrix)):
        print(f"{name:<{w}} {i:>1} " + " ".join(f"{v:>9.4g}" for v in row))
    for k, d in res.summary().items():
        print(f"{k.replace('_', '-'):<10}  IQM {d['iqm']}   mean {d['mean']}   (95% stratified bootstrap over seeds)")
    if K > 1:
        from jaxagents.evaluation.intervals import stratified_bootstrap_ci

        field = res.versus_field()
        print("against the others (mean over the K - 1 column policies, 95% bootstrap over seeds):")
        for i, name in enumerate(pol.names):
            print(f"  {name:<{w}}  {stratified_bootstrap_ci(field[:, i], np.mean)}")
    short = res.finished < args.episodes
    if np.any(short):
        print(f"warning: {int(np.sum(args.episodes - res.finished[short]))} episodes did not finish within --steps "
              f"{args.steps}; raise --steps", file=sys.stderr)
    cp.heatmap(res, out)
    atomic_write(stem + ".json", json.dumps(res.to_dict(), indent=1))
    atomic_write(stem + ".csv", res.to_csv())
    print(f"wrote {out}, {stem}.json, {stem}.csv", file=sys.stderr)
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The ``jaxagents`` argument parser with every subcommand (``train``/``eval`` from ``cli_train``)."""
    p = _Parser(prog="jaxagents", description="JAX-native multi-agent RL: environments and tools.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    sp = sub.add_parser("list", help="registered environments, their roles and descriptions")
    sp.set_defaults(func=cmd_list)

    st = sub.add_parser("list-tasks", help="the named research tasks an environment offers (e.g. econgym_task)")
    st.add_argument("env_id", nargs="?", help="a registered id (default: every environment that offers tasks)")
    st.set_defaults(func=cmd_list_tasks)

    sb = sub.add_parser(
        "bench",
        help="measure env-steps/s and agent-steps/s (DESIGN.md protocol)",
        description="jit(lax.scan) of batched steps with auto-reset and random legal actions; compile time "
        "reported separately; one warm-up; best and median of the timed runs.",
    )
    sb.add_argument("env_id", nargs="?",
                    help="a registered id (see `jaxagents list`), jaxmarl:ID for a JaxMARL env through from_jaxmarl, "
                    "or pgx:ID for a pgx env with its own step and pgx.experimental.auto_reset")
    sb.add_argument("--all", action="store_true", help="benchmark every registered environment")
    sb.add_argument("--num-envs", type=int, nargs="+", default=None, metavar="N",
                    help="batch sizes (default 1 64 1024 4096; with --all 1 64 1024)")
    sb.add_argument("--steps", type=int, default=None, metavar="T",
                    help="scan length per timed run (default 1000; with --all 200)")
    sb.add_argument("--repeats", type=int, default=None, help="timed runs after the warm-up (default 3)")
    sb.add_argument("--mode", default="vec", help="vec (default), autoreset, bare, or all")
    sb.add_argument("--action-rng", default="threefry", choices=("threefry", "hash"),
                    help="how the random actions are drawn: threefry (default) or hash (cheaper with 10^5+ agents)")
    sb.add_argument("--json", metavar="FILE", help="write the results as JSON")
    sb.add_argument("--plot", metavar="FILE", help="write env-steps/s vs num_envs as an image")
    sb.add_argument("--compare-jaxmarl", metavar="JAXMARL_ID", help="also measure this JaxMARL env, same protocol")
    sb.add_argument("--compare-pgx", metavar="PGX_ID",
                    help="also measure this pgx env (e.g. leduc_holdem), same protocol")
    sb.add_argument("--env-kwarg", action="append", metavar="KEY=VALUE", help="constructor argument (repeatable)")
    sb.add_argument("--jaxmarl-kwarg", action="append", metavar="KEY=VALUE",
                    help="jaxmarl.make argument, e.g. layout=cramped_room (repeatable)")
    sb.set_defaults(func=cmd_bench)
    sl = sub.add_parser(
        "bench-lm",
        help="language-model throughput: generated tokens/s, or self-play game-steps/s on a text game",
        description="One compiled program per size (generation, or whole self-play turns: prompt, generate, "
        "parse, step); compile time reported separately; one warm-up; best of the timed runs.",
    )
    sl.add_argument("mode", choices=("generate", "selfplay", "learner"),
                    help="generate: tokens/s of generation; selfplay: game-steps/s of self-play turns; learner: one "
                    "update of the lm_selfplay learner (rollout, advantages, gradient step)")
    sl.add_argument("--env-kwarg", action="append", metavar="KEY=VALUE", help="text game constructor argument (learner)")
    sl.add_argument("--learner-kwarg", action="append", metavar="KEY=VALUE",
                    help="a LanguageSelfPlayConfig field of the learner (learner; repeatable): kl_coef=0.5, grad_chunks=16")
    sl.add_argument("--model", default="tiny", help="a shape (tiny, qwen2.5-0.5b: random weights) or a checkpoint folder")
    sl.add_argument("--tokenizer", metavar="FOLDER", help="folder with tokenizer.json (selfplay with a model named by shape)")
    sl.add_argument("--game", default="text_kuhn_poker", help="a registered text game (selfplay)")
    sl.add_argument("--batch", type=int, nargs="+", default=[1, 64, 1024], metavar="B", help="sequences (generate)")
    sl.add_argument("--games", type=int, nargs="+", default=[1, 64, 1024], metavar="G", help="games (selfplay)")
    sl.add_argument("--turns", type=int, default=8, help="turns of every game per run (selfplay; auto-reset)")
    sl.add_argument("--prompt-len", type=int, default=None, metavar="L",
                    help="prompt tokens (generate: 64; selfplay: the prompt width, 1024)")
    sl.add_argument("--new-tokens", type=int, default=16, metavar="N", help="tokens generated per reply")
    sl.add_argument("--constrained", action="store_true", help="replies constrained to the legal moves (selfplay)")
    sl.add_argument("--dtype", default="float32", choices=("float32", "bfloat16"))
    sl.add_argument("--repeats", type=int, default=3, help="timed runs after the warm-up")
    sl.add_argument("--json", metavar="FILE", help="write the rows and the machine as JSON")
    sl.set_defaults(func=cmd_bench_lm)

    sx = sub.add_parser(
        "crossplay",
        help="cross-play matrix of the final policies of run directories (or every population member)",
        description="Every policy against (or with) every other, every seat assignment, in one compiled program; "
        "prints the matrix with IQM and bootstrap intervals of self-play (diagonal) and cross-play (off-diagonal), "
        "writes a heatmap and the matrix as JSON and CSV next to it.",
    )
    sx.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run directories written by `jaxagents train`")
    sx.add_argument("--members", default="all", choices=("all", "best"),
                    help="population runs: every member (default) or each seed's best")
    sx.add_argument("--episodes", type=int, default=64, metavar="N", help="episodes per cell, seat and seed (default 64)")
    sx.add_argument("--seeds", type=int, default=5, metavar="S", help="evaluation seeds (default 5)")
    sx.add_argument("--steps", type=int, default=128, metavar="T",
                    help="steps each cell plays; an episode must finish within them (default 128)")
    sx.add_argument("--score", default="auto", choices=("auto", "team", "row"),
                    help="team return (cooperative), the row policy's return (competitive), or auto: "
                    "row for self-play runs, team otherwise")
    sx.add_argument("--seed", type=int, default=0, help="evaluation key (default 0)")
    sx.add_argument("--batch-size", type=int, default=None, metavar="B", help="cells run side by side (default all)")
    sx.add_argument("--out", default="crossplay.png", metavar="FILE.png",
                    help="heatmap image; FILE.json and FILE.csv are written next to it (default crossplay.png)")
    sx.set_defaults(func=cmd_crossplay)
    from jaxagents.cli_train import add_commands

    add_commands(sub)  # train, eval
    return p


def parse_args(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """``parser.parse_args`` that also takes ``train``'s ``key=value`` overrides after
    options (``jaxagents train CONFIG --run-dir D --quiet a=1``): argparse alone stops
    filling a positional list once an option has come between its items."""
    args, extra = parser.parse_known_args(argv)
    if extra and getattr(args, "command", None) == "train" and all("=" in e and not e.startswith("-") for e in extra):
        args.overrides = list(args.overrides or []) + extra
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def _output_closed() -> int:
    """The reader of stdout went away (``jaxagents list | head``): stop quietly, as a
    command killed by SIGPIPE does (status 141), without Python's "Broken pipe" noise
    from the flush at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
    return 141


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``jaxagents`` command: parse ``argv`` (default ``sys.argv[1:]``)
    and run the subcommand. Returns the exit status: the command's own, 2 for a usage
    or user error (one line on stderr), 141 when stdout's reader went away; no command
    prints the help and returns 0."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:
        args = parse_args(parser, argv)
        sys.stdout.flush()
    except SystemExit as e:  # --help (0) or a usage error (2, already printed in one line)
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            return _output_closed()
        return e.code if isinstance(e.code, int) else 2
    except BrokenPipeError:
        return _output_closed()
    args.argv = argv
    if getattr(args, "func", None) is None:
        try:
            parser.print_help()
            sys.stdout.flush()
        except BrokenPipeError:
            return _output_closed()
        return 0
    try:
        code = args.func(args)
        sys.stdout.flush()  # here, not at exit, so that a closed pipe is caught below
        return code
    except BrokenPipeError:
        return _output_closed()
    except (CLIError, ValueError, TypeError, ImportError, OSError) as e:
        message = " ".join(str(e).split())  # one line, whatever the exception carried
        if isinstance(e, OSError) and e.filename and e.strerror:  # e.g. PermissionError on a read-only run
            message = f"{e.strerror}: {e.filename}"
        print(f"jaxagents {args.command}: error: {message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
