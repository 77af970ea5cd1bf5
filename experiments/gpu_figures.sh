#!/usr/bin/env bash
# The GPU figures of BENCHMARKS.md in one bounded run.
#
# A GPU machine is lent to a session for minutes at a time, so every figure that needs one is
# taken by this script in one call, most important first, each step bounded by `timeout` so a
# slow step cannot eat the ones after it; every step appends to OUTDIR/gpu_figures.log and
# writes what it measured as it goes (a step cut short keeps its finished rows).
#
#   bash experiments/gpu_figures.sh OUTDIR JAXMARL_REF [QUICK]
#
# OUTDIR       where the logs and JSON go
# JAXMARL_REF  folder with the adapted ippo_ff_overcooked.py (experiments/ippo_throughput.py)
# QUICK=1      tiny sizes, to check the script itself on a CPU before a GPU is spent on it
# Environment: BUDGET (seconds for the whole script, default 560), PYTHON (default python3).
#
# Steps: (1) imports and the device, failing fast; (2) population throughput, ours against
# JaxMARL's ippo_ff_overcooked with NUM_SEEDS = P; (3) the PBT config end to end through
# `jaxagents train` (the mesh built from the devices present); (4) the mean-field envs at
# 10^6 agents; (5) every registered environment at 16,384 environments.
set -u
OUT=${1:?usage: gpu_figures.sh OUTDIR JAXMARL_REF [QUICK]}
REF=${2:?usage: gpu_figures.sh OUTDIR JAXMARL_REF [QUICK]}
QUICK=${3:-0}
PY=${PYTHON:-python3}
BUDGET=${BUDGET:-570}
mkdir -p "$OUT"
LOG=$OUT/gpu_figures.log
T0=$(date +%s)
RUN=$(mktemp -d)  # the training run's directory (checkpoints stay out of OUTDIR)
trap 'rm -rf "$RUN"' EXIT
export PYTHONUNBUFFERED=1

left() { echo $((BUDGET - ($(date +%s) - T0))); }
# step NAME CAP_SECONDS RESERVE_SECONDS -- command...: runs under min(CAP, time left - RESERVE)
step() {
  local name=$1 cap=$2 reserve=$3
  shift 4
  local t=$(($(left) - reserve))
  ((t > cap)) && t=$cap
  if ((t < 10)); then
    echo "=== $name: skipped, $(left)s left" | tee -a "$LOG"
    return 0
  fi
  echo "=== $name (limit ${t}s, $(left)s left): $*" | tee -a "$LOG"
  timeout --signal=INT --kill-after=5 "$t" "$@" 2>&1 | tee -a "$LOG"
  echo "=== $name: rc ${PIPESTATUS[0]} at $(($(date +%s) - T0))s" | tee -a "$LOG"
}

if [[ $QUICK == 1 ]]; then
  SIZES=1,4; UPD=1; BASE=1; REPS=1; BIG="64"; MF=10000; TRAIN_STEPS=4096; INTERVAL=1
else
  SIZES=1,4,16,64,256,1024; UPD=8; BASE=2; REPS=3; BIG="16384"; MF=1000000; TRAIN_STEPS=163840; INTERVAL=20
fi

# (1) imports and the device: a broken install stops here, before any time is spent
step imports 120 0 -- "$PY" -c "
import jax, flax, optax, chex, orbax.checkpoint, distrax, flashbax, jaxmarl
import jaxagents, jaxagents_environments, jaxagents_baselines
print('jax', jax.__version__, 'flax', flax.__version__, 'optax', optax.__version__, 'jaxmarl', jaxmarl.__version__ if hasattr(jaxmarl, '__version__') else '?')
print('backend', jax.default_backend(), 'devices', jax.devices(), [d.device_kind for d in jax.devices()])
print('sum', float(jax.numpy.arange(10.0).sum()))
" || exit 3
grep -q "^sum 45.0" "$LOG" || { echo "imports failed: stopping" | tee -a "$LOG"; exit 3; }
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv | tee -a "$LOG"

# (2) population throughput against JaxMARL (the issue-17 figure)
step population 270 150 -- "$PY" experiments/population_throughput.py --jaxmarl-ref "$REF" \
  --sizes "$SIZES" --updates "$UPD" --base-updates "$BASE" --reps "$REPS" --reps-large 2 \
  --which ours,jaxmarl --ready-calls 10 --json "$OUT/population_gpu.json"

# (3) the PBT config end to end on this device (8 members, PBT every INTERVAL updates)
step pbt_train 90 100 -- "$PY" -m jaxagents.cli train baselines/configs/ippo_pbt_overcooked_coordination_ring.yaml \
  "train.total_timesteps=$TRAIN_STEPS" "population.pbt.interval=$INTERVAL" checkpoint_every=1000 \
  log.progress=false --run-dir "$RUN/pbt"
ls "$RUN/pbt" | tee -a "$LOG"

# (4) mean-field environments at 10^6 agents (one environment, hash-drawn actions)
step meanfield 45 60 -- "$PY" -c "
import sys
from jaxagents import bench
for env in ('mf_opinion', 'mf_epidemic', 'mf_crowd'):
    r = bench.benchmark(env, num_envs=[1], steps=100, repeats=5, env_kwargs={'num_agents': $MF}, action_rng='hash')
    print(r.table(), flush=True)
"

# (5) every registered environment (random legal actions, auto-reset)
step bench_all 400 5 -- "$PY" -m jaxagents.cli bench --all --num-envs $BIG --steps 200 --repeats 3 \
  --json "$OUT/bench_all_gpu.json"
echo "done in $(($(date +%s) - T0))s" | tee -a "$LOG"
