#!/usr/bin/env bash
# GRPO for a 32B Coder on NNODES nodes of 8 GPUs, on a Ray cluster (verl's engine). Run it on every
# node (by hand, pdsh, or one srun task per node): each node starts its own `stitchcuda serve`
# (start_serve.sh, bound to 0.0.0.0 so the others can fail over to it) and joins Ray; the head
# then starts verl's trainer. verl spreads its reward workers over the nodes; compute_score puts
# the URL of the worker's own node first in STITCHCUDA_SERVE_URLS (integrations/verl/stitchcuda_verl/
# endpoints.py), so each node's workers verify on that node's GPUs and fail over to the others'.
#
#   node 0:   ROLE=head   HEAD_ADDR=10.0.0.1 NODE_HOSTS=10.0.0.1,10.0.0.2 NNODES=2 DATA_DIR=... \
#             TASKS_DIRS=... integrations/verl/launch_multi_node.sh [hydra overrides...]
#   others:   ROLE=worker HEAD_ADDR=10.0.0.1 TASKS_DIRS=... integrations/verl/launch_multi_node.sh
#
# The checkout (for reward_fn.py), the dataset and the token file must be at the same paths on every
# node (a shared file system), and every node's service needs the same token: put it in
# STITCHCUDA_SERVE_TOKEN_FILE (e.g. `head -c 32 /dev/urandom | base64 > /shared/serve-token`).
# Env as launch_single_node.sh, plus RAY_PORT (6379), SERVE_PORT (8421).
# STITCHCUDA_DRY_RUN=1 (head) prints the trainer's command line, one argument a line, and starts nothing.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
role=${ROLE:?ROLE must be head or worker}
head_addr=${HEAD_ADDR:?HEAD_ADDR must be the address of the head node}
ray_port=${RAY_PORT:-6379}
serve_port=${SERVE_PORT:-8421}
export STITCHCUDA_ROOT=$root
export STITCHCUDA_DATA_DIR=${DATA_DIR:-$root/data/stitchcuda}
export SERVE_HOST=0.0.0.0 SERVE_PORT=$serve_port
export SERVE_STATE_DIR=${SERVE_STATE_DIR:-/tmp/stitchcuda-serve-state}  # node-local: SQLite
export STITCHCUDA_SERVE_TOKEN_FILE=${STITCHCUDA_SERVE_TOKEN_FILE:?STITCHCUDA_SERVE_TOKEN_FILE must name a token file every node reads}
python=${VERL_PYTHON:-python3}
log() { printf '\033[1mlaunch-multi-node:\033[0m %s\n' "$*" >&2; }

case "$role" in
  worker)
    "$root/integrations/verl/start_serve.sh" >/dev/null
    log "joining the Ray cluster at $head_addr:$ray_port"
    exec ray start --address="$head_addr:$ray_port" --block ;;
  head) ;;
  *) log "ROLE must be head or worker, not '$role'"; exit 2 ;;
esac

nnodes=${NNODES:?NNODES must be the number of nodes}
IFS=, read -r -a hosts <<<"${NODE_HOSTS:?NODE_HOSTS must list the address of every node, comma-separated}"
[ "${#hosts[@]}" = "$nnodes" ] || { log "NODE_HOSTS has ${#hosts[@]} hosts, NNODES is $nnodes"; exit 2; }
urls=()
for host in "${hosts[@]}"; do urls+=("http://$host:$serve_port"); done
STITCHCUDA_SERVE_URLS=$(IFS=,; echo "${urls[*]}")
export STITCHCUDA_SERVE_URLS

command=(
  "$python" -m verl.trainer.main_ppo
  --config-path="$root/integrations/verl/config" --config-name=stitchcuda_grpo
  data.train_files="'$STITCHCUDA_DATA_DIR/train.parquet'"
  data.val_files="'$STITCHCUDA_DATA_DIR/val.parquet'"
  reward.custom_reward_function.path="'$root/integrations/verl/reward_fn.py'"
  reward.custom_reward_function.reward_kwargs.serve_urls="'$STITCHCUDA_SERVE_URLS'"
  reward.custom_reward_function.reward_kwargs.token_file="'$STITCHCUDA_SERVE_TOKEN_FILE'"
  actor_rollout_ref.model.path="${MODEL_PATH:-Qwen/Qwen2.5-Coder-32B-Instruct}"
  actor_rollout_ref.rollout.tensor_model_parallel_size="${ROLLOUT_TP:-4}"
  actor_rollout_ref.rollout.n="${ROLLOUT_N:-8}"
  data.train_batch_size="${TRAIN_BATCH_SIZE:-$((64 * nnodes))}"
  trainer.nnodes="$nnodes"
  trainer.n_gpus_per_node=8
  reward.num_workers=$((8 * nnodes))
  trainer.experiment_name="${EXPERIMENT_NAME:-coder-32b-${nnodes}nodes}"
  "$@"
)
if [ -n "${STITCHCUDA_DRY_RUN:-}" ]; then
  printf '%s\n' "${command[@]}"
  exit 0
fi
[ -f "$STITCHCUDA_DATA_DIR/train.parquet" ] || { log "no $STITCHCUDA_DATA_DIR/train.parquet (set DATA_DIR)"; exit 2; }
"$root/integrations/verl/start_serve.sh" >/dev/null
ray start --head --port="$ray_port"
log "waiting for $nnodes nodes in the Ray cluster"
for _ in $(seq 600); do
  alive=$("$python" -c 'import ray; ray.init(address="auto", logging_level="ERROR"); print(sum(n["Alive"] for n in ray.nodes()))')
  [ "$alive" -ge "$nnodes" ] && break
  sleep 2
done
[ "$alive" -ge "$nnodes" ] || { log "only $alive of $nnodes nodes joined"; exit 1; }
log "reward service list: $STITCHCUDA_SERVE_URLS"
exec "${command[@]}"
