#!/usr/bin/env bash
# own_tasks_gpu_test.sh without a GPU: a stand-in nvidia-smi and a stand-in stitchcuda whose
# generate / verify fail for some task names. The script must run the tasks side by side, print
# one line per task in the order given, and exit 1 exactly when one failed.
# Usage: own_tasks_script_test.sh OWN_TASKS_GPU_TEST_SH
set -euo pipefail
script=$1
fake=$(mktemp -d); trap 'rm -rf "$fake"' EXIT
mkdir -p "$fake/bin" "$fake/tests/tasks"
printf '#!/bin/sh\nexit 0\n' > "$fake/bin/nvidia-smi"
cat > "$fake/bin/stitchcuda" <<'FAKE'
#!/usr/bin/env bash
sleep "0.$(( RANDOM % 4 ))"  # finish out of order
case "$1" in
  generate) [[ "$2" == *generate_fails* ]] && { echo "no plan"; exit 1; }
            echo "generated $3/program.cu" ;;
  verify) [[ "$2" == *wrong* ]] && echo '{"outcome": "wrong"}' && exit 1
          # a task named for a track passes only when both commands were given that track
          [[ "$2" == *on_tf32* && "$*" != *"--track tf32"* ]] && echo '{"outcome": "wrong"}' && exit 1
          echo '{"outcome": "passed"}' ;;
esac
[[ "$1" == generate && "$2" == *on_tf32* && "$*" != *"--track tf32"* ]] && exit 1
# a task named for the direct engine generates only with it forced
[[ "$1" == generate && "$2" == *forced_direct* && "${STITCH_CONV_ENGINE:-}" != direct ]] && exit 1
exit 0
FAKE
chmod +x "$fake/bin/"*
run() { PATH="$fake/bin:$PATH" STITCH_OWN_TASK_JOBS=3 bash "$script" "$fake/bin/stitchcuda" \
          "$fake/tests" "$@"; }

set +e
out=$(run a b is_wrong c generate_fails d); status=$?
set -e
expected=$'ok   a\nok   b\nFAIL is_wrong: wrong  {"outcome": "wrong"}\nok   c\nFAIL generate_fails: generate: no plan\nok   d'
[ "$out" = "$expected" ] || { echo "unexpected output:"; echo "$out"; exit 1; }
[ "$status" -eq 1 ] || { echo "exit $status with failed tasks, expected 1"; exit 1; }
out=$(run a b c runs_on_tf32:tf32 forced_direct@direct runs_on_tf32_forced_direct:tf32@direct) ||
  { echo "exit $? with every task passing"; exit 1; }
[ "$out" = $'ok   a\nok   b\nok   c\nok   runs_on_tf32:tf32\nok   forced_direct@direct\nok   runs_on_tf32_forced_direct:tf32@direct' ] ||
  { echo "unexpected output:"; echo "$out"; exit 1; }
set +e
out=$(run forced_direct); status=$?  # not forced: the stand-in refuses it
set -e
[ "$status" -eq 1 ] && [[ "$out" == "FAIL forced_direct: generate"* ]] ||
  { echo "exit $status, output: $out (the engine was not required)"; exit 1; }
echo "own_tasks_gpu_test.sh: order, failures, exit status, tracks and engines as expected"
