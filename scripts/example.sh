#!/usr/bin/env bash
# Sets up (scripts/setup.sh) and runs the main job — the whole loop, `stitchcuda run` — on a bundled
# example task (tests/tasks/mlp.py, or the task given as $1). With a GPU: plan, generate, verify
# against PyTorch, refine, and export the best program to runs/<run>/best/ with its adapters.
# Without one: capture, plan, generate, build and statically check, and say what the rest needs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PATH=/usr/local/cuda/bin:$PATH
task=${1:-tests/tasks/mlp.py}
build/stitchcuda doctor || true
echo
build/stitchcuda run "$task"
