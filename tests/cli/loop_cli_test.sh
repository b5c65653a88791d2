#!/usr/bin/env bash
# `stitchcuda run` and `stitchcuda bench` end to end on the project's own tasks. Without a GPU every
# covered task ends no_gpu (planned, generated, built, statically checked) and an uncovered one is
# refused; bench writes results.jsonl, table.md and report.html, resumes without redoing a finished
# task, and re-renders its report from results.jsonl alone.
set -u
bin=$1; tasks=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }
export STITCH_BUILD_CACHE=$tmp/cache

# run: bad input, then one task.
"$bin" run >/dev/null 2>&1; check "run without a task exits 2" '[ $? = 2 ]'
"$bin" run "$tmp/none.py" >/dev/null 2>&1; check "run on a missing file exits 2" '[ $? = 2 ]'
"$bin" run --resume "$tmp" >/dev/null 2>&1; check "resume of a non-run exits 2" '[ $? = 2 ]'
"$bin" run "$tasks/scale_shift_relu.py" --runs-dir "$tmp/runs" >"$tmp/run.out" 2>"$tmp/run.err"
code=$?
run_dir=$(ls -d "$tmp"/runs/scale_shift_relu-* 2>/dev/null | head -1)
if [ -n "$(command -v nvidia-smi)" ] && nvidia-smi >/dev/null 2>&1; then
  check "run on a GPU passes" '[ $code = 0 ] && [ -f "$run_dir/best/model_new.py" ]'
else
  check "run without a GPU exits 0 and says so" '[ $code = 0 ] && grep -q "no GPU here" "$tmp/run.out"'
  check "run state ends no_gpu" 'grep -q "\"end\": \"no_gpu\"" "$run_dir/state.json"'
fi
check "one progress line per step" 'grep -q "^plan v1:" "$tmp/run.err" && grep -q "^attempt 01:" "$tmp/run.err"'
check "events logged" 'grep -q "loop.run.end" "$run_dir/events.jsonl"'

# bench: two tasks in one level directory, then resume, then re-render.
mkdir -p "$tmp/levelT"
cp "$tasks/scale_shift_relu.py" "$tasks/plan_scan_refused.py" "$tmp/levelT/"
"$bin" bench "$tmp/levelT" --out "$tmp/bench" >"$tmp/bench.out" 2>"$tmp/bench.err"
check "bench exits 0 with every task done" '[ $? = 0 ]'
check "two records" '[ "$(wc -l < "$tmp/bench/results.jsonl")" = 2 ]'
check "the scan task is refused" 'grep -q "\"outcome\":\"refused\"" "$tmp/bench/results.jsonl"'
check "table and report written" '[ -s "$tmp/bench/table.md" ] && grep -q "stitch-results" "$tmp/bench/report.html"'
check "table printed" 'grep -q "plan_scan_refused" "$tmp/bench.out"'
check "tasks were prepared in parallel first" 'grep -q "^preparing 2 tasks" "$tmp/bench.err" && [ -s "$tmp/bench/prepare/levelT__scale_shift_relu.log" ] && [ "$(ls -d "$tmp"/bench/runs/levelT/scale_shift_relu-* | wc -l)" = 1 ]'
cp "$tmp/bench/results.jsonl" "$tmp/before.jsonl"
"$bin" bench --resume "$tmp/bench" >/dev/null 2>"$tmp/resume.err"
check "resume of a finished bench redoes nothing" '[ $? = 0 ] && cmp -s "$tmp/before.jsonl" "$tmp/bench/results.jsonl"'
rm "$tmp/bench/report.html"
"$bin" bench --report "$tmp/bench" >/dev/null 2>&1
check "--report re-renders" '[ $? = 0 ] && [ -s "$tmp/bench/report.html" ]'
"$bin" bench "$tmp/levelT" --out "$tmp/bench" >/dev/null 2>&1
check "a second bench into the same directory is refused" '[ $? = 2 ]'
# Two workers (child processes, one per "GPU"): each task taken once.
"$bin" bench "$tmp/levelT" --out "$tmp/bench2" --gpus 2 >/dev/null 2>"$tmp/bench2.err"
check "two workers finish the bench" '[ $? = 0 ] && [ "$(wc -l < "$tmp/bench2/results.jsonl")" = 2 ]'
check "each task ran once" '[ "$(grep -c scale_shift_relu "$tmp/bench2/results.jsonl")" = 1 ] && [ "$(ls "$tmp/bench2/claims" | wc -l)" = 2 ]'
check "workers are named in the progress" 'grep -q "^\[w[01]\]" "$tmp/bench2.err"'
check "a planned task's record carries its plan's roofline floor" 'python3 -c "import json, sys; rs = [json.loads(l) for l in open(sys.argv[1])]; sys.exit(0 if any(r[\"task\"] == \"scale_shift_relu\" and (r.get(\"floor_ms\") or 0) > 0 for r in rs) else 1)" "$tmp/bench2/results.jsonl"'
# A deadline stops taking tasks; --resume finishes the rest; the report carries the records.
"$bin" bench "$tmp/levelT" --out "$tmp/bench5" --deadline-minutes 0.001 --prepare-jobs 0 >/dev/null 2>"$tmp/bench5.err"
check "a bench past its deadline stops early, exit 1" '[ $? = 1 ] && [ "$(wc -l < "$tmp/bench5/results.jsonl")" = 1 ] && grep -q "still to run" "$tmp/bench5.err"'
"$bin" bench --resume "$tmp/bench5" >/dev/null 2>&1
check "resume completes it" '[ $? = 0 ] && [ "$(wc -l < "$tmp/bench5/results.jsonl")" = 2 ]'
check "the report's data are results.jsonl's records" 'python3 - "$tmp/bench5" <<PY
import json, re, sys
d = sys.argv[1]
html = open(d + "/report.html").read()
island = re.search(r"<script type=\"application/json\" id=\"stitch-results\">(.*?)</script>", html, re.S).group(1)
records = json.loads(island)["records"]
lines = [json.loads(l) for l in open(d + "/results.jsonl")]
assert records == lines, (records, lines)
PY'

# SIGKILL of the bench mid-task, then --resume: every task recorded exactly once.
"$bin" bench "$tmp/levelT" --out "$tmp/bench4" >/dev/null 2>&1 &
victim=$!
for _ in $(seq 1 300); do [ -n "$(ls "$tmp/bench4/claims" 2>/dev/null)" ] && break; sleep 0.05; done
sleep 1
kill -9 $victim 2>/dev/null; wait $victim 2>/dev/null
"$bin" bench --resume "$tmp/bench4" >/dev/null 2>"$tmp/bench4.err"
check "killed bench resumes to every task once" '[ $? = 0 ] && [ "$(wc -l < "$tmp/bench4/results.jsonl")" = 2 ] && [ "$(grep -c scale_shift_relu "$tmp/bench4/results.jsonl")" = 1 ]'
"$bin" bench "$tmp/levelT" --out "$tmp/bench3" --gpus x >/dev/null 2>&1
check "a bad --gpus exits 2" '[ $? = 2 ]'
exit $fail
