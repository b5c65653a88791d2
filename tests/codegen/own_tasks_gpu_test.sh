#!/usr/bin/env bash
# End to end on the GPU: `stitchcuda generate` then `verify` (the judge against PyTorch, no
# baselines) of own tasks given by name (tests/tasks/<name>.py); every one must pass. A name may
# end in :TRACK (e.g. plan_conv1x1:tf32) for a precision track other than fp32, and then in
# @ENGINE (e.g. plan_conv_direct@direct) for a convolution engine forced as STITCH_CONV_ENGINE does.
# Exits 77 (ctest: skipped) without a CUDA device.
# Usage: own_tasks_gpu_test.sh STITCHCUDA TESTS_DIR TASK[:TRACK][@ENGINE]...
# The tasks run side by side, STITCH_OWN_TASK_JOBS at once (default: the CPU count, at most 8):
# nothing here is timed, and one at a time the captures and builds took over 280 s on the H200.
# Each task has its own run and build-cache directories; the results print in the order given.
set -uo pipefail
stitchcuda=$1; tests=$2; shift 2
if ! nvidia-smi -L >/dev/null 2>&1; then echo "SKIP: no CUDA device"; exit 77; fi
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cpus=$(nproc)
jobs_max=${STITCH_OWN_TASK_JOBS:-$(( cpus < 8 ? cpus : 8 ))}

# One task: generate, verify, and one line ("ok   NAME" or "FAIL NAME: why") in $work/NAME.line.
run_task() {
  local name=$1 track=fp32 engine="" base task dir="$work/$1" program outcome
  base=${name%%@*}
  [[ "$name" == *@* ]] && engine=${name#*@}
  [[ "$base" == *:* ]] && track=${base#*:}
  task="$tests/tasks/${base%%:*}.py"
  mkdir -p "$dir"
  export STITCH_BUILD_CACHE="$dir/build-cache"
  if ! STITCH_CONV_ENGINE=$engine "$stitchcuda" generate "$task" --runs-dir "$dir/runs" \
      --track "$track" > "$dir/gen" 2>&1
  then
    echo "FAIL $name: generate: $(tail -3 "$dir/gen")" > "$work/$name.line"; return
  fi
  program=$(sed -n 's/^generated \(.*program.cu\).*/\1/p' "$dir/gen")
  "$stitchcuda" verify "$task" "$program" --runs-dir "$dir/runs" --json --no-baselines \
    --track "$track" > "$dir/json" 2> "$dir/err"
  outcome=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("outcome", "?"))' \
    "$dir/json" 2>/dev/null || echo "unreadable")
  if [ "$outcome" = "passed" ]; then
    echo "ok   $name" > "$work/$name.line"
  else
    echo "FAIL $name: $outcome $(tail -5 "$dir/err") $(head -c 2000 "$dir/json")" > "$work/$name.line"
  fi
}

for name in "$@"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n; done
  run_task "$name" &
done
wait
failed=0
for name in "$@"; do
  if [ -f "$work/$name.line" ]; then cat "$work/$name.line"; else echo "FAIL $name: no result"; fi
  grep -q '^ok ' "$work/$name.line" 2>/dev/null || failed=1
done
exit $failed
