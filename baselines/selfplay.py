"""Self-play on Kuhn poker, Leduc hold'em, tic-tac-toe and negotiation.

    python -m jaxagents_baselines.selfplay [CONFIG] [key=value ...] [--run-dir DIR] [--resume RUN_DIR]

CONFIG is a path or a bundled name in baselines/configs/ (default: selfplay_kuhn).
"""

import sys

from jaxagents_baselines._main import main

if __name__ == "__main__":
    sys.exit(main("selfplay", "selfplay_kuhn"))
