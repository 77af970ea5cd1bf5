"""QMIX on SMAX 3m and MPE simple_spread through from_jaxmarl.

    python -m jaxagents_baselines.qmix [CONFIG] [key=value ...] [--run-dir DIR] [--resume RUN_DIR]

CONFIG is a path or a bundled name in baselines/configs/ (default: qmix_smax_3m).
"""

import sys

from jaxagents_baselines._main import main

if __name__ == "__main__":
    sys.exit(main("qmix", "qmix_smax_3m"))
