"""Fictitious co-play, both stages, one run directory per stage:

    python -m jaxagents_baselines.fcp [CONFIG] [key=value ...] --run-dir DIR
    python -m jaxagents_baselines.fcp --resume DIR

CONFIG is a path or a bundled name in baselines/configs/ (default:
fcp_overcooked_coordination_ring), a stage-1 config (``learner: fcp``,
``train.partners: null``, a ``population`` of partners). Stage 1 trains the partners
into ``DIR/partners``; stage 2 trains the FCP agent into ``DIR/fcp`` with the same
config, ``population: null`` and ``train.partners=DIR/partners``. A stage whose
``results.json`` exists is done and skipped, so ``--resume`` continues whichever
stage was interrupted (each from its newest checkpoint).
"""

from __future__ import annotations

import argparse
import copy
import os
import sys

from jaxagents_baselines import configs, resolve

DEFAULT = "fcp_overcooked_coordination_ring"


def stage2_config(stage1: dict, partners_dir: str) -> dict:
    """Stage 2's config from stage 1's: one agent against the partners run."""
    cfg = copy.deepcopy(stage1)
    cfg["population"] = None
    cfg["train"] = {**cfg["train"], "partners": os.path.abspath(partners_dir)}
    if cfg.get("name"):
        cfg["name"] = cfg["name"] + "_agent"
    return cfg


def run_stage(runner, config: dict | None, run_dir: str) -> dict:
    """Run, resume or skip one stage (done: ``results.json`` exists)."""
    import json

    done = os.path.join(run_dir, "results.json")
    if os.path.exists(done):
        print(f"{run_dir}: done, skipped")
        with open(done) as f:
            return json.load(f)
    if os.path.isdir(os.path.join(run_dir, "checkpoints")):
        return runner.run(run_dir=run_dir, resume=True)
    return runner.run(config, run_dir=run_dir)


def main(argv: list[str] | None = None) -> int:
    from jaxagents import runner

    p = argparse.ArgumentParser(prog="python -m jaxagents_baselines.fcp",
                                description=f"FCP, both stages; bundled configs: {', '.join(configs('fcp'))}")
    p.add_argument("config", nargs="?", default=DEFAULT, help=f"stage-1 config path or bundled name (default {DEFAULT})")
    p.add_argument("overrides", nargs="*", help="key.path=value overrides of both stages, e.g. train.ppo.total_timesteps=2e5")
    p.add_argument("--run-dir", help="the experiment directory: DIR/partners and DIR/fcp")
    p.add_argument("--resume", metavar="DIR", help="continue an interrupted experiment")
    args = p.parse_args(argv)
    if args.resume:
        base = args.resume
        stage1 = runner.read_run_config(os.path.join(base, "partners"))
    else:
        if "=" in args.config and not os.path.exists(args.config):
            args.overrides.insert(0, args.config)
            args.config = DEFAULT
        try:
            path = resolve(args.config)
        except ValueError as e:
            p.error(str(e))
        stage1 = runner.load_config(path, args.overrides)
        if stage1["learner"] != "fcp" or stage1["train"].get("partners") is not None:
            raise SystemExit(f"{args.config} must be a stage-1 fcp config (learner: fcp, train.partners: null)")
        base = args.run_dir or os.path.join("runs", f"fcp-{stage1['env']['id']}")
    d1, d2 = os.path.join(base, "partners"), os.path.join(base, "fcp")
    run_stage(runner, stage1, d1)
    run_stage(runner, runner.prepare(stage2_config(stage1, d1)), d2)
    print(f"partners: {d1}\nFCP agent: {d2}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
