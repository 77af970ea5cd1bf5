"""``jaxagents train`` and ``jaxagents eval`` (registered into the parser of
``jaxagents.cli``)."""

from __future__ import annotations

import importlib
import os
import sys

from jaxagents import supervisor


def cmd_train(args) -> int:
    """``jaxagents train``: start a run from a config and overrides, or continue one with
    ``--resume`` (``--distributed``: join the other processes first).

    Returns 0 when the run finishes, 1 when training diverged, 74 (``EXIT_RUN_DIR``)
    when the run directory was removed, replaced or made unwritable during the run,
    ``EXIT_PREEMPTED`` (75) or ``EXIT_INTERRUPTED`` (130) when the run was stopped by
    SIGTERM or Ctrl-C after writing its checkpoint (resumable); a lost peer ends the
    process with 69 (``jaxagents.population.peers``; the loss of process 0,
    ``jaxagents.supervisor``). The table is in docs/pod.md.
    Bad arguments raise ``ValueError`` (``cli.main`` prints it, status 2), as does
    running out of memory, with advice.
    """
    from jaxagents import preemption

    if args.distributed and not supervisor.supervised():  # the training runs in a child (jaxagents.supervisor)
        index = os.environ.get("JAXAGENTS_PROCESS_ID") or os.environ.get("SLURM_PROCID")
        return supervisor.run(args.argv, args.resume or args.run_dir,
                              f"process {index}" if index else "this process")
    # a second Ctrl-C ends the command at once (a library caller gets KeyboardInterrupt);
    # restored after, for a process that goes on (a test, a script calling cli.main)
    before, preemption.CTRL_C_EXITS = preemption.CTRL_C_EXITS, True
    try:
        return _train(args)
    except KeyboardInterrupt:  # Ctrl-C before the run watches signals (imports, the join, reading the config)
        print("jaxagents train: interrupted (Ctrl-C) before training started; nothing of the run was written",
              file=sys.stderr)
        return 130
    finally:
        preemption.CTRL_C_EXITS = before


EXIT_RUN_DIR = 74  # EX_IOERR


def _train(args) -> int:
    """``cmd_train`` without its Ctrl-C guard."""
    if args.distributed:  # before anything touches a device (see jaxagents.population.distributed)
        from jaxagents.population import distributed

        # a bad launch raises a one-line ValueError, which cli.main prints after "error:" (exit 2);
        # a join that times out ends the process from initialize's watchdog, also with one line and 2
        distributed.initialize()
    from jaxagents import runner

    try:
        if args.resume:
            if args.config or args.overrides:
                raise ValueError("--resume RUN_DIR takes no CONFIG or overrides (the run's config.yaml is used)")
            if args.overwrite:
                raise ValueError("--resume continues a run and --overwrite deletes it: give one of them")
            if args.run_dir and os.path.abspath(args.run_dir) != os.path.abspath(args.resume):
                raise ValueError(f"--resume {args.resume} already names the run directory: drop --run-dir {args.run_dir}")
            if not os.path.isfile(os.path.join(args.resume, "config.yaml")):
                raise ValueError(f"--resume: {args.resume!r} is not a run directory (no config.yaml)")
            runner.run(run_dir=args.resume, resume=True, quiet=args.quiet)
            return 0
        config, overrides = args.config, list(args.overrides)
        if config is not None and "=" in config and not os.path.exists(config):
            config, overrides = None, [config] + overrides  # only overrides of the embedded default
        if config is not None:
            # a file, a bundled config's name or an environment id; the configs' package is named by a string,
            # as the registry names environments (jaxagents imports nothing of the baselines)
            config = importlib.import_module("jaxagents_baselines").resolve(config)
        cfg = runner.load_config(config, overrides)
        runner.run(cfg, run_dir=args.run_dir, quiet=args.quiet, overwrite=args.overwrite)
        return 0
    except runner.TrainingDiverged as e:
        print(f"jaxagents train: {e}", file=sys.stderr)
        return 1
    except runner.Preempted as e:  # a distinct status: a scheduler may requeue the job with --resume
        print(f"jaxagents train: {e}", file=sys.stderr)
        return e.status
    except runner.RunDirGone as e:
        print(f"jaxagents train: {e}", file=sys.stderr)
        return EXIT_RUN_DIR
    except Exception as e:  # an allocation the memory check could not foresee (the rollout, a compile)
        text = str(e)
        if args.distributed:
            from jaxagents.population import distributed

            line = str(e) if isinstance(e, distributed.ProcessesApart) else distributed.explain_gloo_timeout(text)
            if line is not None:  # the run cannot go on; skip JAX's shutdown barrier (5 minutes waiting for the others)
                print(f"jaxagents train: {line}", file=sys.stderr, flush=True)
                os._exit(1)
        if "RESOURCE_EXHAUSTED" not in text:
            raise
        first = " ".join(text.split("\n")[0].split())
        raise ValueError(f"out of memory ({first}): lower num_envs (or num_seeds, population.size); "
                         f"a run that had started is resumable with --resume") from None


def cmd_eval(args) -> int:
    """``jaxagents eval``: evaluate the latest checkpoint of ``args.run_dir`` (``--member``
    for a population run); returns 0. Raises ``ValueError`` for a folder that is not a
    run directory."""
    from jaxagents import runs

    if not os.path.isfile(os.path.join(args.run_dir, "config.yaml")):
        raise ValueError(f"{args.run_dir!r} is not a run directory (no config.yaml)")
    runs.evaluate(args.run_dir, seed=args.seed, member=args.member)
    return 0


def add_commands(sub) -> None:
    """Add the ``train`` and ``eval`` subcommands to ``sub``, the subparsers of ``jaxagents``."""
    st = sub.add_parser(
        "train",
        help="train from a YAML config (default: a short Kuhn poker self-play run)",
        description="Train a learner. CONFIG is a YAML file, the name of a bundled config (baselines/configs/, "
        "e.g. ippo_overcooked_cramped_room) or a registered environment id (`jaxagents list`; e.g. lbf runs "
        "the bundled config that trains it); without it the embedded "
        "default runs (Kuhn poker self-play with RAE, 1-2 minutes on 2 CPU cores). Overrides are "
        "dotted key=value pairs, e.g. train.ppo.lr=3e-4 num_seeds=4.",
    )
    st.add_argument("config", nargs="?", help="YAML config file, a bundled config's name, or an environment id")
    st.add_argument("overrides", nargs="*", help="key.path=value overrides")
    st.add_argument("--run-dir", help="where to write the run (default runs/<learner>-<env>-<time>)")
    st.add_argument("--resume", metavar="RUN_DIR", help="continue a killed run from its last checkpoint")
    st.add_argument("--overwrite", action="store_true", help="delete the run already in --run-dir and start again")
    st.add_argument("--quiet", action="store_true", help="no progress bar or results table")
    st.add_argument("--distributed", action="store_true",
                    help="one of several processes (hosts of a pod, nodes of a cluster): calls jax.distributed.initialize, "
                    "from JAXAGENTS_COORDINATOR / JAXAGENTS_NUM_PROCESSES / JAXAGENTS_PROCESS_ID or the cluster's own "
                    "detection; every process runs the same command with the same --run-dir, and all must join within "
                    "JAXAGENTS_INIT_TIMEOUT seconds (default 30)")
    st.set_defaults(func=cmd_train)

    se = sub.add_parser("eval", help="evaluate the latest checkpoint of a run")
    se.add_argument("run_dir", help="a run directory written by `jaxagents train`")
    se.add_argument("--seed", type=int, default=1, help="evaluation seed (default 1)")
    se.add_argument("--member", default=None,
                    help="a population run only: all (default), best, or a member index")
    se.set_defaults(func=cmd_eval)
