#!/usr/bin/env bash
# `stitchcuda reward` on the fixture attempts of tests/reward/data: the breakdown printed and as
# JSON, a hacked attempt at 0, bad input (no directory, a corrupt verify.json, an unknown baseline)
# exit code 2 with one line.
set -u
bin=$1; data=$2/reward/data
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
expect() {  # expect CODE DESCRIPTION -- command...
  local want=$1 what=$2; shift 3
  "$@" >"$tmp/out" 2>"$tmp/err"; local got=$?
  if [ "$got" != "$want" ]; then echo "FAIL $what: exit $got, want $want"; cat "$tmp/err"; fail=1; return; fi
  echo "ok   $what"
}
json_field() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))$1)" "$tmp/out"; }
expect 0 "fused own program scored" -- "$bin" reward "$data/fused_own" --graph "$data/graph.json"
grep -q "cuda_engineering" "$tmp/out" || { echo "FAIL: no rubric lines"; cat "$tmp/out"; fail=1; }
expect 0 "json breakdown" -- "$bin" reward "$data/fused_own" --graph "$data/graph.json" --json --no-sass
[ "$(json_field "['format']")" = "stitchcuda.reward" ] || { echo "FAIL: not a reward.json"; fail=1; }
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if 0 < d['reward'] <= 5 and d['correct'] else 1)" "$tmp/out" \
  || { echo "FAIL: fused_own reward out of (0, 5]"; cat "$tmp/out"; fail=1; }
expect 0 "reference copy scored" -- "$bin" reward "$data/reference_copy" --graph "$data/graph.json" --json
[ "$(json_field "['hacked']")" = "True" ] && [ "$(json_field "['reward']")" = "0.0" ] \
  || { echo "FAIL: the reference copy is not hacked at 0"; cat "$tmp/out"; fail=1; }
expect 0 "compile baseline" -- "$bin" reward "$data/library_only" --graph "$data/graph.json" --baseline compile --json
[ "$(json_field "['baseline']")" = "compile" ] || { echo "FAIL: baseline not compile"; fail=1; }
expect 2 "unknown baseline" -- "$bin" reward "$data/fused_own" --baseline fastest
expect 2 "no such directory" -- "$bin" reward "$tmp/none"
mkdir "$tmp/corrupt" && echo '{"format": "stitchcuda.verify", "version": 1, "findings": 3}' > "$tmp/corrupt/verify.json"
expect 2 "corrupt verify.json" -- "$bin" reward "$tmp/corrupt"
grep -q "verify.json" "$tmp/err" || { echo "FAIL corrupt: the message does not name verify.json"; fail=1; }
cd "$tmp"  # no stitchcuda.toml here
expect 2 "llm judge without an endpoint" -- "$bin" reward "$data/fused_own" --judge llm
grep -q "verifier" "$tmp/err" || { echo "FAIL llm judge: the message does not name the role"; cat "$tmp/err"; fail=1; }
exit $fail
