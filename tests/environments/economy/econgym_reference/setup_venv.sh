#!/usr/bin/env bash
# Create the separate virtual environment that runs EconGym's numpy economic society
# (github.com/Miracle1207/EconGym, pinned commit below), the reference the `econgym`
# parity data is recorded from.
#
# Why a separate venv: EconGym is not a package; its requirements.txt pulls torch, flask,
# swanlab, openai, ... Only env/ and entities/ are imported by the recorder, and those
# need numpy, pandas, gymnasium (spaces.Box) and omegaconf. Nothing here touches the
# jaxagents environment.
#
# Usage:   tests/environments/economy/econgym_reference/setup_venv.sh VENV_DIR [ECONGYM_DIR]
#            ECONGYM_DIR defaults to VENV_DIR/econgym. The tree comes from the git directory
#            $ECONGYM_GIT when that is set (e.g. a bare mirror), else from a git clone of
#            https://github.com/Miracle1207/EconGym checked out at the pinned commit.
# Then:    VENV_DIR/bin/python tests/environments/economy/econgym_reference/record_econgym.py \
#              --econgym ECONGYM_DIR --out tests/environments/economy/data/econgym_reference.npz
#
# Idempotent: an existing venv is reused (the pip commands are re-run and are no-ops), and
# an existing EconGym tree at the pinned commit is kept. A non-empty directory that is not
# a venv, or an ECONGYM_DIR that holds something else, is refused.
set -euo pipefail

ECONGYM_COMMIT=d81cd5de66db2e00e40eb5fb5dd243741da5525f
ECONGYM_URL=https://github.com/Miracle1207/EconGym

if [ "$#" -lt 1 ] || [ "$#" -gt 2 ]; then
    echo "usage: $0 VENV_DIR [ECONGYM_DIR]" >&2
    exit 2
fi
venv="$1"
econgym="${2:-$venv/econgym}"

# --- refuse what is not ours, before touching anything --------------------------------
if [ -d "$venv" ] && [ -n "$(ls -A "$venv" 2>/dev/null)" ]; then
    if [ ! -f "$venv/pyvenv.cfg" ] || [ ! -x "$venv/bin/python" ]; then
        echo "refusing: $venv is a non-empty directory that is not a virtual environment" >&2
        exit 1
    fi
fi
tree_commit=""
if [ -d "$econgym/.git" ]; then
    tree_commit="$(git -C "$econgym" rev-parse HEAD)"
elif [ -f "$econgym/.econgym_commit" ]; then
    tree_commit="$(cat "$econgym/.econgym_commit")"
fi
if [ -n "$tree_commit" ] && [ "$tree_commit" != "$ECONGYM_COMMIT" ]; then
    echo "refusing: $econgym holds EconGym $tree_commit, not $ECONGYM_COMMIT" >&2
    exit 1
fi
if [ -z "$tree_commit" ] && [ -d "$econgym" ] && [ -n "$(ls -A "$econgym" 2>/dev/null)" ]; then
    echo "refusing: $econgym is a non-empty directory that is not an EconGym tree" >&2
    exit 1
fi

# --- virtual environment -------------------------------------------------------------
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi

"$venv/bin/pip" install --disable-pip-version-check \
    numpy==2.3.3 pandas==2.3.2 gymnasium==1.2.0 omegaconf==2.3.0

# --- EconGym source tree (extracted / cloned only when not already there) ---------------
if [ -n "$tree_commit" ]; then
    :
elif [ -n "${ECONGYM_GIT:-}" ]; then
    mkdir -p "$econgym"
    # Every top-level entry except document/ (images only; a mirror may lack their blobs).
    names="$(git --git-dir="$ECONGYM_GIT" ls-tree --name-only "$ECONGYM_COMMIT" | grep -vx document)"
    err="$(mktemp)"
    # shellcheck disable=SC2086
    if ! git --git-dir="$ECONGYM_GIT" archive "$ECONGYM_COMMIT" $names 2>"$err" | tar -x -C "$econgym"; then
        cat "$err" >&2
        rm -f "$err"
        echo "failed to extract EconGym $ECONGYM_COMMIT from $ECONGYM_GIT" >&2
        exit 1
    fi
    rm -f "$err"
    echo "$ECONGYM_COMMIT" > "$econgym/.econgym_commit"
else
    git clone "$ECONGYM_URL" "$econgym"
    git -C "$econgym" checkout --detach "$ECONGYM_COMMIT"
fi

if [ ! -f "$econgym/agents/data/advanced_scfp2022_1110.csv" ] || [ ! -f "$econgym/env/env_core.py" ]; then
    echo "EconGym tree at $econgym is incomplete" >&2
    exit 1
fi

(cd "$econgym" && "$venv/bin/python" -c 'import env, entities, utils.config; print("EconGym importable")')
echo "EconGym $ECONGYM_COMMIT ready: venv $venv, tree $econgym"
