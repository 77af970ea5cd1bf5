#!/usr/bin/env bash
# SPIRAL's ablation with an exact measure: the language self-play learner (lm_selfplay)
# on text Kuhn poker with six advantage estimators, each a setting of the same config
# (baselines/configs/lm_selfplay_kuhn.yaml: tiny decoder from scratch, constrained moves;
# GAMES games per update), 3 seeds each (one vmapped program per estimator), the same number
# of updates and so the same number of games. The exact exploitability of the sampled and
# the greedy language policy is logged every 10 updates; experiments/estimators.py then
# draws the curves and prints the table of final values with 95% bootstrap intervals.
#
#   bash experiments/lm_ablation.sh OUTDIR [UPDATES]
#
# OUTDIR   one run directory per estimator (must not exist: runs are never overwritten),
#          then OUTDIR/ablation.png and OUTDIR/ablation.txt (the table)
# UPDATES  updates per run (default 60: 3,840 games a seed at 64 games an update)
# Environment: PYTHON (default python3), SEEDS (default 3), GAMES (games per update,
# default 64 as in the baseline; a multiple of 8, GRPO's and GiGPO's group size).
set -euo pipefail
OUT=${1:?usage: lm_ablation.sh OUTDIR [UPDATES]}
UPDATES=${2:-60}
PY=${PYTHON:-python3}
SEEDS=${SEEDS:-3}
GAMES=${GAMES:-64}
if [ -e "$OUT" ]; then
  echo "lm_ablation.sh: OUTDIR $OUT exists; runs are never overwritten: name a new one" >&2
  exit 2
fi
case "$UPDATES" in '' | *[!0-9]* | 0) echo "lm_ablation.sh: UPDATES must be a positive integer, got '$UPDATES'" >&2; exit 2 ;; esac
case "$GAMES" in '' | *[!0-9]* | 0) echo "lm_ablation.sh: GAMES must be a positive multiple of 8, got '$GAMES'" >&2; exit 2 ;; esac
if [ $((GAMES % 8)) -ne 0 ]; then echo "lm_ablation.sh: GAMES must be a positive multiple of 8, got '$GAMES'" >&2; exit 2; fi
mkdir -p "$OUT"
# one update is GAMES games of at most 3 turns: total_timesteps counts games x turns
common=("num_seeds=$SEEDS" "train.num_envs=$GAMES" "train.total_timesteps=$((UPDATES * GAMES * 3))"
        "train.eval_every=5" "checkpoint_every=0")
declare -A SETTINGS=(
  [rae]="train.advantage=rae train.normalize=none"                                   # SPIRAL
  [none]="train.advantage=returns train.gamma=1.0 train.normalize=none"             # REINFORCE, no baseline
  [role_norm]="train.advantage=returns train.gamma=1.0 train.normalize=role"        # Dr. MAS
  [mars]="train.advantage=returns train.gamma=0.95 train.normalize=role"            # MARS
  [grpo]="train.advantage=grpo train.group_size=8 train.normalize=none"             # GRPO
  [gigpo]="train.advantage=gigpo train.group_size=8 train.normalize=none"           # GiGPO
)
ORDER=(rae none role_norm mars grpo gigpo)
for name in "${ORDER[@]}"; do
  echo "== $name $(date -u +%H:%M:%S)"
  # shellcheck disable=SC2086  # the settings are separate key=value words
  "$PY" -m jaxagents.cli train lm_selfplay_kuhn "${common[@]}" ${SETTINGS[$name]} --run-dir "$OUT/$name"
done
echo "== done $(date -u +%H:%M:%S)"
runs=()
for name in "${ORDER[@]}"; do runs+=("$OUT/$name"); done
"$PY" experiments/estimators.py "${runs[@]}" --game text_kuhn --labels "$(IFS=,; echo "${ORDER[*]}")" \
  --out "$OUT/ablation.png" | tee "$OUT/ablation.txt"
