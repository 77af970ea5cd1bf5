#!/usr/bin/env bash
# Create the separate virtual environment that runs the AI Economist's Foundation
# (ai-economist 1.7.1), the reference the `gtb` parity data is recorded from.
#
# Why a separate venv: the package pins versions that do not install on Python 3.11
# next to JAX, so it is installed without its dependencies and given a small set of
# versions known to work. Nothing here touches the jaxagents environment.
#
# Usage:   tests/environments/economy/gtb_reference/setup_venv.sh VENV_DIR
# Then:    VENV_DIR/bin/python tests/environments/economy/gtb_reference/record_foundation.py \
#              --out tests/environments/economy/data/gtb_foundation.npz
#
# Idempotent: an existing venv that already has ai-economist 1.7.1 is reused (the pip
# commands are re-run and are no-ops). A non-empty directory that is not a venv is refused.
set -euo pipefail

if [ "$#" -ne 1 ]; then
    echo "usage: $0 VENV_DIR" >&2
    exit 2
fi
venv="$1"

if [ -d "$venv" ] && [ -n "$(ls -A "$venv" 2>/dev/null)" ]; then
    if [ ! -f "$venv/pyvenv.cfg" ] || [ ! -x "$venv/bin/python" ]; then
        echo "refusing: $venv is a non-empty directory that is not a virtual environment" >&2
        exit 1
    fi
    installed="$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("ai-economist"))' 2>/dev/null || true)"
    if [ -n "$installed" ] && [ "$installed" != "1.7.1" ]; then
        echo "refusing: $venv has ai-economist $installed, not 1.7.1" >&2
        exit 1
    fi
else
    python3 -m venv "$venv"
fi

"$venv/bin/pip" install --no-deps ai-economist==1.7.1
"$venv/bin/pip" install numpy==1.23.5 scipy==1.10.1 pandas==1.5.3 lz4 pycryptodome PyYAML GPUtil

"$venv/bin/python" -c 'import ai_economist.foundation, importlib.metadata as m; print("ai-economist", m.version("ai-economist"), "ready in", __import__("sys").prefix)'
