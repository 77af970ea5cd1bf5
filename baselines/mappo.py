"""MAPPO on Overcooked and, through from_jaxmarl, on MPE simple_spread and SMAX 3m.

    python -m jaxagents_baselines.mappo [CONFIG] [key=value ...] [--run-dir DIR] [--resume RUN_DIR]

CONFIG is a path or a bundled name in baselines/configs/ (default: mappo_mpe_simple_spread).
"""

import sys

from jaxagents_baselines._main import main

if __name__ == "__main__":
    sys.exit(main("mappo", "mappo_mpe_simple_spread"))
