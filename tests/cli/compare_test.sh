#!/usr/bin/env bash
# `stitchcuda bench --compare OLD NEW` on bench directories written here: per-task lines, exit 0
# without a regression, 1 with one (named in the output), 2 for a directory that is no bench; and
# the kept benches of docs/bench-history/ (DIR, the second argument) still load and compare to the
# very output kept beside them.
set -u
bin=$1
history=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }
record() {  # record TASK OUTCOME MEDIAN P10 P90
  printf '{"task":"%s","level":"level2","outcome":"%s","ours_ms":%s,"ours_p10_ms":%s,"ours_p90_ms":%s}\n' "$@"
}
mkdir -p "$tmp/old" "$tmp/same" "$tmp/worse"
{ record A passed 1.0 0.9 1.1; record B passed 2.0 1.9 2.1; } > "$tmp/old/results.jsonl"
{ record A passed 1.05 0.95 1.2; record B passed 2.0 1.9 2.1; } > "$tmp/same/results.jsonl"
{ record A passed 1.3 1.15 1.4; record B wrong null null null; } > "$tmp/worse/results.jsonl"

"$bin" bench --compare "$tmp/old" "$tmp/same" >"$tmp/out" 2>&1
check "no regression exits 0" '[ $? = 0 ] && grep -q "level2/A" "$tmp/out" && grep -q "1.050" "$tmp/out" && grep -q "0 regressions" "$tmp/out"'
"$bin" bench --compare "$tmp/old" "$tmp/worse" >"$tmp/out" 2>&1
check "regressions exit 1" '[ $? = 1 ] && grep -q "2 regressions" "$tmp/out"'
check "slower beyond the spread is flagged" 'grep "level2/A" "$tmp/out" | grep -q "slower beyond the spread"'
check "passed → wrong is flagged" 'grep "level2/B" "$tmp/out" | grep -q "passed → wrong.*no longer passes"'
"$bin" bench --compare "$tmp/old" "$tmp/none" >/dev/null 2>"$tmp/err"
check "a missing bench is bad input" '[ $? = 2 ] && grep -q "not a bench directory" "$tmp/err"'
"$bin" bench --compare "$tmp/old" >/dev/null 2>&1
check "OLD alone without a bench to run is bad input" '[ $? = 2 ]'
"$bin" bench --help | grep -q -- "--compare" 
check "--help names --compare and its exit code" '[ $? = 0 ] && "$bin" bench --help | tr -s " \n" " " | grep -q "Exit 1 when a task regressed"'
old="$history/2026-12-01-h200-5f58b48" new="$history/2026-12-01-h200-aa607b5"
"$bin" bench --compare "$old" "$new" --tolerance 0 >"$tmp/out" 2>&1
check "a kept bench compares as it did (compare-with-5f58b48.txt, the path line aside)" \
  '[ $? = 1 ] && diff <(tail -n +2 "$tmp/out") <(tail -n +2 "$new/compare-with-5f58b48.txt")'
# Its seven flags were 0.7-1.6% slower: inside the default 2% tolerance (drift between leases).
"$bin" bench --compare "$old" "$new" >"$tmp/out" 2>&1
check "the default tolerance absorbs lease drift" '[ $? = 0 ] && grep -q "0 regressions" "$tmp/out"'
"$bin" bench --compare "$tmp/old" "$tmp/worse" --tolerance 40 >"$tmp/out" 2>&1
check "a 30% slow-down is within a 40% tolerance" 'grep -q "1 regressions" "$tmp/out"'
exit $fail
