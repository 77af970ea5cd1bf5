#!/usr/bin/env bash
# Leduc self-play and league schedules on one GPU, several training processes at a time.
#
# A GPU is lent for minutes, and one Leduc update (3 seeds, 512-2048 environments) is far
# too small to fill it, so the runs below share the device: every run is its own
# `jaxagents train` process (memory allocated on demand, not preallocated), all started
# together and each bounded by what is left of BUDGET. Metrics reach metrics.jsonl at
# every checkpoint (every 500 updates), so a run cut short keeps its finished chunks.
# Before the sweep, one run alone gives the device's self-play throughput (BENCHMARKS.md).
#
#   bash experiments/leduc_gpu_sweep.sh OUTDIR SET [QUICK]
#
# OUTDIR  where runs.tgz (every run's evaluation rows of metrics.jsonl, config and log) and
#         sweep.log go
# SET     which runs: "a" (the solo throughput run, then 8000 and 16000 updates, lower final
#         entropy, 4x batch, the league) or "b" (8x batch; the league at 4x batch)
# QUICK=1 tiny schedules, to check the script on a CPU before device time is spent on it
# Environment: BUDGET (seconds for the whole script, default 540), PYTHON (default python3).
set -u
OUT=${1:?usage: leduc_gpu_sweep.sh OUTDIR SET [QUICK]}
SET=${2:?usage: leduc_gpu_sweep.sh OUTDIR SET [QUICK]}
QUICK=${3:-0}
PY=${PYTHON:-python3}
BUDGET=${BUDGET:-540}
mkdir -p "$OUT"
LOG=$OUT/sweep.log
RUNS=$(mktemp -d)
T0=$(date +%s)
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
left() { echo $((BUDGET - ($(date +%s) - T0))); }

SP=baselines/configs/selfplay_leduc_sgd.yaml
LG=baselines/configs/selfplay_league_leduc.yaml
if [[ $QUICK == 1 ]]; then
  U=8192  # env steps per update at 512 environments x 16 steps
  K=2     # "thousand updates" shrinks to 2 updates
  COMMON="num_seeds=3 seed=1 checkpoint_every=1 log.progress=false train.eval_every=1 train.average_decay=0.999"
else
  U=8192
  K=1000
  COMMON="num_seeds=3 seed=1 checkpoint_every=500 log.progress=false train.eval_every=200 train.average_decay=0.999"
fi
steps() { echo $(($1 * K * U * ${2:-1})); }  # steps THOUSANDS_OF_UPDATES [BATCH_MULTIPLE]

echo "=== device" | tee -a "$LOG"
"$PY" -c "import jax; print(jax.__version__, jax.default_backend(), jax.devices())" 2>&1 | tee -a "$LOG"

# (1) alone: the throughput figure, the bundled config's own schedule (1000 updates)
if [[ $SET == a ]]; then
  echo "=== solo (limit 150s)" | tee -a "$LOG"
  timeout --signal=INT --kill-after=5 150 "$PY" -m jaxagents.cli train $SP num_seeds=3 seed=1 checkpoint_every=0 \
    log.progress=false train.ppo.total_timesteps=$(steps 1) --run-dir "$RUNS/solo" >"$RUNS/solo.log" 2>&1
  echo "rc $? at $(($(date +%s) - T0))s" | tee -a "$LOG"
  cat "$RUNS/solo.log" | tee -a "$LOG"
fi

# (2) the sweep, all at once: NAME CONFIG OVERRIDES...
if [[ $SET == a ]]; then sweep=(
  "sp_u8k|$SP|train.ppo.total_timesteps=$(steps 8)"
  "lg_u8k|$LG|train.ppo.total_timesteps=$(steps 8)"
  "sp_u8k_e02|$SP|train.ppo.total_timesteps=$(steps 8) train.ppo.ent_coef_final=0.02"
  "sp_u8k_e01|$SP|train.ppo.total_timesteps=$(steps 8) train.ppo.ent_coef_final=0.01"
  "sp_u16k|$SP|train.ppo.total_timesteps=$(steps 16)"
  "sp_u16k_e02|$SP|train.ppo.total_timesteps=$(steps 16) train.ppo.ent_coef_final=0.02"
  "sp_b4_u8k|$SP|train.ppo.num_envs=2048 train.ppo.total_timesteps=$(steps 8 4)"
  "sp_b4_u8k_e02|$SP|train.ppo.num_envs=2048 train.ppo.total_timesteps=$(steps 8 4) train.ppo.ent_coef_final=0.02"
); else sweep=(
  "sp_b8_u8k|$SP|train.ppo.num_envs=4096 train.ppo.total_timesteps=$(steps 8 8)"
  "sp_b4_u8k|$SP|train.ppo.num_envs=2048 train.ppo.total_timesteps=$(steps 8 4)"
  "lg_b4_u8k|$LG|train.ppo.num_envs=2048 train.ppo.total_timesteps=$(steps 8 4)"
  "sp_u8k|$SP|train.ppo.total_timesteps=$(steps 8)"
  "lg_u8k|$LG|train.ppo.total_timesteps=$(steps 8)"
); fi
limit=$(($(left) - 25))
echo "=== sweep of ${#sweep[@]} runs (limit ${limit}s each)" | tee -a "$LOG"
pids=()
for entry in "${sweep[@]}"; do
  IFS='|' read -r name cfg over <<<"$entry"
  echo "$name: $cfg $COMMON $over" | tee -a "$LOG"
  timeout --signal=INT --kill-after=5 "$limit" "$PY" -m jaxagents.cli train "$cfg" $COMMON $over \
    --run-dir "$RUNS/$name" >"$RUNS/$name.log" 2>&1 &
  pids+=($!)
done
for i in "${!pids[@]}"; do
  wait "${pids[$i]}"
  echo "${sweep[$i]%%|*}: rc $? at $(($(date +%s) - T0))s" | tee -a "$LOG"
done
for f in "$RUNS"/*.log; do echo "--- $f"; tail -n 8 "$f"; done >>"$LOG"
# the evaluation rows only (every update's training metrics would not fit what comes back)
for m in "$RUNS"/*/metrics.jsonl; do
  "$PY" -c "import json,sys; [sys.stdout.write(l) for l in open(sys.argv[1]) if 'eval/exploitability' in json.loads(l)]" "$m" >"${m%.jsonl}_eval.jsonl"
done
(cd "$RUNS" && tar czf "$OUT/runs.tgz" ./*.log */metrics_eval.jsonl */config.yaml 2>/dev/null)
echo "=== done at $(($(date +%s) - T0))s" | tee -a "$LOG"
rm -rf "$RUNS"
