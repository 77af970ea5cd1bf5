"""IQL (independent Q-learning) on MPE simple_spread through from_jaxmarl.

    python -m jaxagents_baselines.iql [CONFIG] [key=value ...] [--run-dir DIR] [--resume RUN_DIR]

CONFIG is a path or a bundled name in baselines/configs/ (default: iql_mpe_simple_spread).
"""

import sys

from jaxagents_baselines._main import main

if __name__ == "__main__":
    sys.exit(main("iql", "iql_mpe_simple_spread"))
