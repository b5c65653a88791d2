#!/usr/bin/env bash
# Copies the shared KernelBench problems (../shared/kernelbench, outside the checkout) into .kb/
# (git-ignored) so a device call can carry them: run tool `carry [".kb", "build-device"]`, then e.g.
#   STITCH_GPU_CHECK=generated STITCH_GENERATED_TASKS="$(ls .kb/level2/*Gemm*.py)" scripts/gpu_check.sh
# The project's own tests never read .kb/ (CI must not depend on files outside the repo).
#   --covered: also .kb/<level>_covered/ for levels 1 and 2: the tasks the built-in Coder covers
#   (captured, planned and emitted here with build/stitchcuda generate, no GPU needed), so a GPU
#   bench spends no device time on tasks it would refuse.
set -euo pipefail
covered=0
if [ "${1:-}" = "--covered" ]; then covered=1; shift; fi
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
# Level 2's convolution tasks on their own (issue 13: the conv family's level-2 figures; shard
# them over device calls: STITCH_GPU_CHECK=kb STITCH_KB_DIRS=.kb/level2_conv STITCH_KB_SHARD=i/n).
mkdir -p .kb/level2_conv
find .kb/level2 -maxdepth 1 -name '*Conv*.py' -exec cp {} .kb/level2_conv/ \; 2>/dev/null || true
if ((covered)); then
  runs=$(mktemp -d)
  for level in level1 level2; do
    [ -d ".kb/$level" ] || continue
    build/stitchcuda capture --all ".kb/$level" --runs-dir "$runs/$level" --jobs 2 >/dev/null 2>&1 || true
    mkdir -p ".kb/${level}_covered"
    # capture --all leaves one directory per task, named after it, holding graph.json.
    find "$runs/$level" -name graph.json -printf '%h\n' | while read -r run; do
      task=$(basename "$run")
      if [ -f ".kb/$level/$task.py" ] &&
         build/stitchcuda generate "$run" --out "$run/generated" --no-compile >/dev/null 2>&1; then
        cp ".kb/$level/$task.py" ".kb/${level}_covered/"
      fi
    done
    echo "$level: $(ls ".kb/${level}_covered" | wc -l) of $(ls ".kb/$level"/*.py | wc -l) tasks covered: planned and emitted (.kb/${level}_covered)"
  done
  rm -rf "$runs"
fi
du -sh .kb
