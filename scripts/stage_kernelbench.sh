#!/usr/bin/env bash
# Copies the shared KernelBench problems (../shared/kernelbench, outside the checkout) into .kb/
# (git-ignored) so a device call can carry them: run tool `carry [".kb", "build-device"]`, then e.g.
#   STITCH_GPU_CHECK=generated STITCH_GENERATED_TASKS="$(ls .kb/level2/*Gemm*.py)" scripts/gpu_check.sh
# The project's own tests never read .kb/ (CI must not depend on files outside the repo).
set -euo pipefail
cd "$(dirname "$0")/.."
source_dir=${1:-../shared/kernelbench}
[ -d "$source_dir" ] || { echo "error: $source_dir: no KernelBench folder" >&2; exit 2; }
rm -rf .kb && mkdir -p .kb
for level in level1 level2 level3; do
  [ -d "$source_dir/$level" ] && cp -r "$source_dir/$level" .kb/
done
# The level-3 MLP tasks on their own (issue 4 measures them against reduce-overhead).
mkdir -p .kb/level3_mlp
find .kb/level3 -maxdepth 1 -name '*MLP*.py' -exec cp {} .kb/level3_mlp/ \; 2>/dev/null || true
du -sh .kb
