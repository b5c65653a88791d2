#!/usr/bin/env bash
# GRPO for a 32B Coder on one node with 8 GPUs (verl 0.9.x, config/stitchcuda_grpo.yaml): starts
# this node's `stitchcuda serve` (start_serve.sh), then verl's trainer, whose reward workers call
# it. The service verifies on the same 8 GPUs the trainer uses, between rollouts' memory: set
# SERVE_GPUS to pin it to fewer (timings are steadier on GPUs the trainer leaves alone).
#
#   DATA_DIR=out/ds TASKS_DIRS=KernelBench/level1:KernelBench/level2 \
#     integrations/verl/launch_single_node.sh [more hydra overrides...]
#
# Env: MODEL_PATH (default Qwen/Qwen2.5-Coder-32B-Instruct), DATA_DIR (`stitchcuda dataset --out`:
# train.parquet, val.parquet), TASKS_DIRS (see start_serve.sh), VERL_PYTHON (a Python with verl 0.9.1
# and vLLM; default python3), ROLLOUT_TP (4), ROLLOUT_N (8), TRAIN_BATCH_SIZE (64).
# STITCHCUDA_DRY_RUN=1 prints the trainer's command line, one argument a line, and starts nothing
# (the recipe's test composes these arguments against verl's config schema).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
export STITCHCUDA_ROOT=$root
export STITCHCUDA_DATA_DIR=${DATA_DIR:-$root/data/stitchcuda}
export SERVE_STATE_DIR=${SERVE_STATE_DIR:-$root/serve-state}
export STITCHCUDA_SERVE_TOKEN_FILE=${STITCHCUDA_SERVE_TOKEN_FILE:-$SERVE_STATE_DIR/token}
export STITCHCUDA_SERVE_URLS=${STITCHCUDA_SERVE_URLS:-http://127.0.0.1:${SERVE_PORT:-8421}}

command=(
  "${VERL_PYTHON:-python3}" -m verl.trainer.main_ppo
  --config-path="$root/integrations/verl/config" --config-name=stitchcuda_grpo
  data.train_files="'$STITCHCUDA_DATA_DIR/train.parquet'"
  data.val_files="'$STITCHCUDA_DATA_DIR/val.parquet'"
  reward.custom_reward_function.path="'$root/integrations/verl/reward_fn.py'"
  reward.custom_reward_function.reward_kwargs.serve_urls="'$STITCHCUDA_SERVE_URLS'"
  reward.custom_reward_function.reward_kwargs.token_file="'$STITCHCUDA_SERVE_TOKEN_FILE'"
  actor_rollout_ref.model.path="${MODEL_PATH:-Qwen/Qwen2.5-Coder-32B-Instruct}"
  actor_rollout_ref.rollout.tensor_model_parallel_size="${ROLLOUT_TP:-4}"
  actor_rollout_ref.rollout.n="${ROLLOUT_N:-8}"
  data.train_batch_size="${TRAIN_BATCH_SIZE:-64}"
  trainer.nnodes=1
  trainer.n_gpus_per_node=8
  trainer.experiment_name="${EXPERIMENT_NAME:-coder-32b-1node}"
  "$@"
)
if [ -n "${STITCHCUDA_DRY_RUN:-}" ]; then
  printf '%s\n' "${command[@]}"
  exit 0
fi
[ -f "$STITCHCUDA_DATA_DIR/train.parquet" ] || { echo "no $STITCHCUDA_DATA_DIR/train.parquet (set DATA_DIR)" >&2; exit 2; }
"$root/integrations/verl/start_serve.sh" >/dev/null
exec "${command[@]}"
