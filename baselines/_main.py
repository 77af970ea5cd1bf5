"""Shared entry point of the baseline scripts: a config (a path, or a name in
``baselines/configs/``) plus ``key=value`` overrides -> ``jaxagents.runner.run``."""

from __future__ import annotations

import argparse
import os
import sys

CONFIG_DIR = os.path.join(os.path.dirname(__file__), "configs")


def configs(learner: str | None = None) -> list[str]:
    """Names of the bundled configs (optionally only one learner's)."""
    names = sorted(f[:-5] for f in os.listdir(CONFIG_DIR) if f.endswith(".yaml"))
    return [n for n in names if learner is None or n.startswith(learner + "_")]


def resolve(config: str) -> str:
    """A path, or the name of a bundled config (with or without ``.yaml``)."""
    if os.path.isfile(config):
        return config
    path = os.path.join(CONFIG_DIR, config if config.endswith(".yaml") else config + ".yaml")
    if os.path.isfile(path):
        return path
    raise SystemExit(f"config {config!r} not found; bundled: {', '.join(configs())}")


def main(learner: str, default: str, argv: list[str] | None = None) -> int:
    from jaxagents import runner

    p = argparse.ArgumentParser(prog=f"python -m jaxagents_baselines.{learner}", description=f"{learner} baselines; bundled configs: {', '.join(configs(learner))}")
    p.add_argument("config", nargs="?", default=default, help=f"config path or bundled name (default {default})")
    p.add_argument("overrides", nargs="*", help="key.path=value overrides, e.g. train.lr=1e-3 num_seeds=4")
    p.add_argument("--run-dir")
    p.add_argument("--resume", metavar="RUN_DIR")
    args = p.parse_args(argv)
    if args.resume:
        runner.run(run_dir=args.resume, resume=True)
        return 0
    if "=" in args.config and not os.path.exists(args.config):
        args.overrides.insert(0, args.config)
        args.config = default
    cfg = runner.load_config(resolve(args.config), args.overrides)
    if cfg["learner"] != learner:
        raise SystemExit(f"{args.config} is a {cfg['learner']} config; use python -m jaxagents_baselines.{cfg['learner']}")
    runner.run(cfg, run_dir=args.run_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
