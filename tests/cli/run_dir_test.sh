#!/usr/bin/env bash
# Run directories that never lose work, from the outside (docs/loop.md, "Resume").
#   run_dir_test.sh BIN TASKS unit   a corrupt state.json or plan: exit 2 naming the file and what
#                                    is wrong; a run directory another process holds: exit 2 naming
#                                    the holder; a dead holder's lock file does not block.
#   run_dir_test.sh BIN TASKS torch  the orchestrator killed (SIGKILL, SIGTERM, SIGINT) in the middle
#                                    of a capture leaves a run `--resume` captures again and
#                                    continues; a second `--resume` meanwhile is refused; SIGTERM
#                                    during the loop's build resumes with the attempt redone.
set -u
bin=$1; tasks=$2; mode=$3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }
export STITCH_BUILD_CACHE=$tmp/cache

state() {  # a valid state.json of a run that ended failed, with $1 as its plans
  cat <<JSON
{"format": "stitchcuda.run_state", "version": 1, "task": "t", "phase": "finished", "end": "failed",
 "end_reason": "every plan failed", "plans": $1, "subtasks": [], "current_subtask": 0,
 "attempts": [], "best_attempt": null, "failures_in_row": 0, "replans": 0, "replan_reason": "",
 "refine": {"started": false, "queue": [], "tried": 0, "without_gain": 0},
 "used": {"attempts": 0, "wall_s": 0, "tokens": 0}}
JSON
}

# resume_fails NAME DIR PATTERN: `run --resume DIR` exits 2 and its error matches PATTERN.
resume_fails() {
  "$bin" run --resume "$2" >"$tmp/out" 2>"$tmp/err"
  code=$? pattern=$3
  check "$1: exit 2" '[ $code = 2 ]'
  check "$1: says so" 'grep -Eq "$pattern" "$tmp/err"' || cat "$tmp/err"
}

if [ "$mode" = unit ]; then
  run=$tmp/run; mkdir -p "$run/plans"
  echo '{"status": "running", "task": "t"}' > "$run/summary.json"
  echo '{}' > "$run/graph.json"
  plan='[{"version": 1, "file": "plans/plan.v1.json", "reason": "first plan", "subtask_ids": []}]'
  state "$plan" > "$tmp/valid.json"
  echo '{"version": 1}' > "$run/plans/plan.v1.json"
  echo 'not json at all' > "$run/state.json"
  resume_fails "non-JSON state.json" "$run" "state.json: corrupt: not valid JSON"
  head -c 200 "$tmp/valid.json" > "$run/state.json"
  resume_fails "truncated state.json" "$run" "state.json: corrupt: not valid JSON \(200 bytes\)"
  : > "$run/state.json"
  resume_fails "empty state.json" "$run" "state.json: corrupt: not valid JSON \(0 bytes, empty\)"
  echo '{"format": "stitchcuda.run_state", "version": 1, "task": 7}' > "$run/state.json"
  resume_fails "state.json of the wrong schema" "$run" "state.json: corrupt: task:"
  echo '[1, 2]' > "$run/state.json"
  resume_fails "state.json not an object" "$run" "state.json: corrupt: not a stitchcuda run state"
  state "$plan" | sed 's/"version": 1, "task"/"version": 9, "task"/' > "$run/state.json"
  resume_fails "state.json of another version" "$run" "state.json: corrupt: run state version 9"
  state '[{"version": 1, "file": "../../etc/passwd", "reason": "", "subtask_ids": []}]' \
    > "$run/state.json"
  resume_fails "a plan outside plans/" "$run" "state.json: corrupt: plan v1: file"
  state "$plan" | sed 's/"attempts": \[\]/"attempts": [{"number": 1, "dir": "attempts\/07", "kind": "integration", "status": "interrupted"}]/' \
    > "$run/state.json"
  resume_fails "an attempt not in its directory" "$run" "state.json: corrupt: attempt 1"
  cp "$tmp/valid.json" "$run/state.json"
  echo '{"version": 1, "subt' > "$run/plans/plan.v1.json"
  resume_fails "a truncated plan" "$run" "plans/plan.v1.json: plan v1 of state.json: .*not valid JSON"
  echo '{"version": 1}' > "$run/plans/plan.v1.json"

  # The lock: held by another process (a shell's flock(1) on it, with a holder record), then
# released.
  echo '{"pid": 4242, "host": "elsewhere", "since": "2026-12-02T03:00:00.000Z"}' > "$run/run.lock"
  (exec 9>>"$run/run.lock"; flock 9; exec sleep 60) &
  holder=$!
  for _ in $(seq 1 100); do flock -n "$run/run.lock" true || break; sleep 0.05; done
  resume_fails "a run directory in use" "$run" \
    "in use by process 4242 on elsewhere since 2026-12-02T03:00:00.000Z"
  echo '// a program' > "$tmp/program.cu"
  "$bin" verify "$run" "$tmp/program.cu" >/dev/null 2>"$tmp/err"
  check "verify on a run directory in use is refused" '[ $? = 2 ] && grep -q "in use by process 4242" "$tmp/err"'
  kill $holder; wait $holder 2>/dev/null
  "$bin" run --resume "$run" >"$tmp/out" 2>"$tmp/err"
  code=$?
  check "a dead holder's lock does not block" '[ $code != 2 ] && ! grep -q "in use" "$tmp/err"' || cat "$tmp/err"
  check "the resumed run took the lock" 'grep -q "\"pid\": *[0-9]" "$run/run.lock" && ! grep -q 4242 "$run/run.lock"'
  exit $fail
fi

gpu=0
if [ -n "$(command -v nvidia-smi)" ] && nvidia-smi >/dev/null 2>&1; then gpu=1; fi
# The end a finished slow_init run has here: succeeded on a GPU, no_gpu without one.
expected_end() { if [ $gpu = 1 ]; then echo succeeded; else echo no_gpu; fi; }

# interrupt_capture SIGNAL: starts `run slow_init.py` stalled in its capture, signals the
# orchestrator, then resumes it. SIGINT reaches a background job only with its default disposition
# restored (the shell ignores it there), hence the python exec.
interrupt_capture() {
  local signal=$1 runs=$tmp/runs-$1 marker=$tmp/marker-$1
  STITCH_TEST_SLOW_INIT=$marker python3 -c \
    'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])' \
    "$bin" run "$tasks/slow_init.py" --runs-dir "$runs" >/dev/null 2>"$tmp/victim.err" &
  local victim=$!
  for _ in $(seq 1 1200); do [ -s "$marker" ] && break; sleep 0.05; done
  check "$signal: the capture stalls in the model's construction" '[ -s "$marker" ]'
  local run_dir; run_dir=$(ls -d "$runs"/slow_init-* | head -1)
  if [ "$signal" = KILL ]; then
    "$bin" run --resume "$run_dir" >/dev/null 2>"$tmp/second.err"
    check "a second --resume meanwhile is refused, naming the holder" \
      '[ $? = 2 ] && grep -q "in use by process $victim on $(hostname) since 20" "$tmp/second.err"'
  fi
  kill -"$signal" $victim; wait $victim 2>/dev/null
  local harness; harness=$(cat "$marker"); rm -f "$marker"
  for _ in $(seq 1 100); do kill -0 "$harness" 2>/dev/null || break; sleep 0.1; done
  check "$signal: the harness died with the orchestrator" '! kill -0 "$harness" 2>/dev/null'
  check "$signal: the run holds no graph and no state" '[ ! -e "$run_dir/graph.json" ] && [ ! -e "$run_dir/state.json" ] && [ ! -e "$run_dir/weights.safetensors" ]'
  "$bin" run --resume "$run_dir" >"$tmp/resume.out" 2>"$tmp/resume.err"
  local code=$?
  check "$signal: --resume captures again and runs the loop" '[ $code = 0 ] && grep -q "capturing again" "$tmp/resume.err" && [ -f "$run_dir/graph.json" ] && [ ! -e "$run_dir/capture.partial" ]' || cat "$tmp/resume.err"
  check "$signal: the run ends $(expected_end)" 'grep -q "\"end\": \"$(expected_end)\"" "$run_dir/state.json"'
  check "$signal: two capture starts, one done" '[ "$(grep -c capture.start "$run_dir/events.jsonl")" = 2 ] && [ "$(grep -c capture.done "$run_dir/events.jsonl")" = 1 ]'
}
interrupt_capture KILL
interrupt_capture TERM
interrupt_capture INT

# SIGTERM in the middle of the loop's first attempt (its build), then --resume.
runs=$tmp/runs-build
"$bin" run "$tasks/slow_init.py" --runs-dir "$runs" >/dev/null 2>&1 &
victim=$!
for _ in $(seq 1 2400); do [ -n "$(ls "$runs"/slow_init-*/attempts/01/attempt.json 2>/dev/null)" ] && break; sleep 0.05; done
run_dir=$(ls -d "$runs"/slow_init-* | head -1)
check "the loop started its first attempt" '[ -f "$run_dir/attempts/01/attempt.json" ]'
kill -TERM $victim; wait $victim 2>/dev/null
check "SIGTERM left state.json readable, the attempt without a result" 'python3 -c "import json, sys; s = json.load(open(sys.argv[1])); assert s[\"attempts\"][0][\"status\"] == \"started\"" "$run_dir/state.json" && [ ! -e "$run_dir/attempts/01/result.json" ]'
"$bin" run --resume "$run_dir" >/dev/null 2>"$tmp/resume.err"
code=$?
check "--resume after SIGTERM completes the run" '[ $code = 0 ] && grep -q "\"end\": \"$(expected_end)\"" "$run_dir/state.json"' || cat "$tmp/resume.err"
check "the interrupted attempt is done again" 'grep -q "attempt.interrupted" "$run_dir/events.jsonl" && [ -f "$run_dir/attempts/02/result.json" ]'
exit $fail
