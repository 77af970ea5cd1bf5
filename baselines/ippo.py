"""IPPO on Overcooked (five layouts).

    python -m jaxagents_baselines.ippo [CONFIG] [key=value ...] [--run-dir DIR] [--resume RUN_DIR]

CONFIG is a path or a bundled name in baselines/configs/ (default: ippo_overcooked_cramped_room).
"""

import sys

from jaxagents_baselines._main import main

if __name__ == "__main__":
    sys.exit(main("ippo", "ippo_overcooked_cramped_room"))
