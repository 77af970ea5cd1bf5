"""PQN (with VDN for teams) on Overcooked and MPE.

    python -m jaxagents_baselines.pqn [CONFIG] [key=value ...] [--run-dir DIR] [--resume RUN_DIR]

CONFIG is a path or a bundled name in baselines/configs/ (default: pqn_vdn_overcooked_cramped_room).
"""

import sys

from jaxagents_baselines._main import main

if __name__ == "__main__":
    sys.exit(main("pqn", "pqn_vdn_overcooked_cramped_room"))
