"""Record EconGym's task files as EconGym's own ``load_config`` merges them.

For every ``cfg/<task>.yaml`` of EconGym (commit d81cd5d) but ``base_config.yaml``,
``utils/config.py:load_config(task)`` is called in EconGym's tree (the task file merged
onto the base config, entities deep-merged by ``entity_name``; ``dbl_government`` and
``tre_government`` are used as they are) and the result, resolved, is written as JSON:
``{"econgym_commit": ..., "tasks": {task: {"Environment": ..., "Trainer": ...}}}``.
``test_econgym_task_configs.py`` compares our tasks with it field by field.

Usage (from the jaxagents repo root; the venv from ``setup_venv.sh``, numpy and
omegaconf suffice):
    VENV/bin/python tests/environments/economy/econgym_reference/record_task_configs.py \\
        --econgym VENV/econgym --out tests/environments/economy/data/econgym_task_configs.json
"""
import argparse
import glob
import json
import os
import sys

ECONGYM_COMMIT = "d81cd5de66db2e00e40eb5fb5dd243741da5525f"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--econgym", required=True, help="EconGym source tree (pinned commit)")
    parser.add_argument("--out", required=True, help="output .json")
    args = parser.parse_args()
    out = os.path.abspath(args.out)
    os.chdir(os.path.abspath(args.econgym))
    sys.path.insert(0, os.getcwd())
    from omegaconf import OmegaConf
    from utils.config import load_config

    tasks = {}
    for path in sorted(glob.glob("cfg/*.yaml")):
        name = os.path.splitext(os.path.basename(path))[0]
        if name == "base_config":
            continue
        cfg = OmegaConf.to_container(load_config(name), resolve=True)
        tasks[name] = {k: cfg[k] for k in ("Environment", "Trainer") if k in cfg}
    with open(out + ".tmp", "w") as f:
        json.dump({"econgym_commit": ECONGYM_COMMIT, "tasks": tasks}, f, indent=1, sort_keys=True)
    os.replace(out + ".tmp", out)
    print(f"wrote {out}: {len(tasks)} tasks")


if __name__ == "__main__":
    main()
