#!/usr/bin/env bash
# End to end on the GPU: `stitchcuda generate` then `verify` (the judge against PyTorch, no
# baselines) of own tasks given by name (tests/tasks/<name>.py); every one must pass. Exits 77
# (ctest: skipped) without a CUDA device. Usage: own_tasks_gpu_test.sh STITCHCUDA TESTS_DIR TASK...
set -uo pipefail
stitchcuda=$1; tests=$2; shift 2
if ! nvidia-smi -L >/dev/null 2>&1; then echo "SKIP: no CUDA device"; exit 77; fi
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
export STITCH_BUILD_CACHE="$work/build-cache"
failed=0
for name in "$@"; do
  task="$tests/tasks/$name.py"
  if ! "$stitchcuda" generate "$task" --runs-dir "$work/runs" > "$work/$name.gen" 2>&1; then
    echo "FAIL $name: generate: $(tail -3 "$work/$name.gen")"; failed=1; continue
  fi
  program=$(sed -n 's/^generated \(.*program.cu\).*/\1/p' "$work/$name.gen")
  "$stitchcuda" verify "$task" "$program" --runs-dir "$work/runs" --json --no-baselines \
    > "$work/$name.json" 2> "$work/$name.err"
  outcome=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("outcome", "?"))' \
    "$work/$name.json" 2>/dev/null || echo "unreadable")
  if [ "$outcome" = "passed" ]; then
    echo "ok   $name"
  else
    echo "FAIL $name: $outcome $(tail -5 "$work/$name.err") $(head -c 2000 "$work/$name.json")"
    failed=1
  fi
done
exit $failed
