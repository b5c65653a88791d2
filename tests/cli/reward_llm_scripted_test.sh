#!/usr/bin/env bash
# `stitchcuda reward --judge llm` end to end against the scripted OpenAI-compatible server: the
# judge's request carries the rubric and the program, the reply's scores (one out of range, clamped)
# make the breakdown, a hacked attempt stays at 0 whatever the judge says.
# Usage: reward_llm_scripted_test.sh STITCHCUDA TESTS_DIR
set -u
bin=$1; tests=$2; data=$tests/reward/data
tmp=$(mktemp -d)
server_pid=""
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail=0
check() { if eval "$1"; then echo "ok   $2"; else echo "FAIL $2"; fail=1; fi; }

python3 - "$tmp/script.json" <<'PY'
import json, sys
scores = {"anti_hacking": 5, "cuda_engineering": 9, "operator_coverage": 5, "skill_compliance": 3}
answer = {"scores": {k: {"score": v, "evidence": ["__shared__ float xs[kDepth][kTile + 4];"]}
                     for k, v in scores.items()}}
reply = {"content": "```json\n" + json.dumps(answer) + "\n```",
         "usage": {"prompt_tokens": 3000, "completion_tokens": 200}}
json.dump({"models": ["scripted-judge"], "replies": [reply, reply]}, open(sys.argv[1], "w"))
PY
python3 "$tests/support/scripted_openai_server.py" --script "$tmp/script.json" \
  --log "$tmp/requests.jsonl" --port-file "$tmp/port" >/dev/null 2>"$tmp/server.err" &
server_pid=$!
for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
port=$(cat "$tmp/port") || { echo "FAIL the scripted server did not start"; cat "$tmp/server.err"; exit 1; }

cd "$tmp"  # no stitchcuda.toml here
judge() {  # judge NAME: the breakdown of fixture NAME as JSON in $tmp/NAME.json
  "$bin" reward "$data/$1" --graph "$data/graph.json" --json --no-sass --judge llm \
    --api-base "http://127.0.0.1:$port/v1" --model scripted-judge >"$tmp/$1.json" 2>"$tmp/$1.err"
}
field() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))$2)" "$tmp/$1.json"; }
check 'judge fused_own' "the LLM judge scores an attempt"
check '[ "$(field fused_own "[\"rubric\"][\"judge\"]")" = llm ]' "the breakdown names the LLM judge"
check '[ "$(field fused_own "[\"rubric\"][\"scores\"][\"cuda_engineering\"][\"score\"]")" = 5.0 ]' \
  "an out-of-range score is clamped to 5"
check 'grep -q clamped "$tmp/fused_own.json"' "the clamp is noted"
check 'grep -q "anti_hacking" "$tmp/requests.jsonl" && grep -q "gemm_bias_relu_tiled" "$tmp/requests.jsonl"' \
  "the request carries the rubric and the program"
check 'judge reference_copy' "the LLM judge scores the reference copy"
check '[ "$(field reference_copy "[\"reward\"]")" = 0.0 ] && [ "$(field reference_copy "[\"hacked\"]")" = True ]' \
  "a hacked attempt is 0 whatever the judge says"
exit $fail
