#!/usr/bin/env bash
# Sets up (scripts/setup.sh) and runs the main job on a bundled example task (tests/tasks/mlp.py).
# Without a GPU it does the part that needs none and says what the rest needs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PATH=/usr/local/cuda/bin:$PATH
task=${1:-tests/tasks/mlp.py}
build/stitchcuda doctor || true
echo
build/stitchcuda capture "$task"
if ! nvidia-smi >/dev/null 2>&1; then
  echo
  echo "No GPU on this machine: the task was captured (graph, weights, reference) and can be inspected"
  echo "with build/stitchcuda show runs/<run>. Verifying and timing programs needs an NVIDIA GPU:"
  echo "  build/stitchcuda verify $task tests/programs/mlp.cu"
fi
