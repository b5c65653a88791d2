#!/usr/bin/env bash
# `stitchcuda run --coder llm` end to end against the scripted OpenAI-compatible server (issue 14):
# the task is captured and planned, the Coder's request is streamed from the server, the program
# is taken out of the reply's prose, built with nvcc and statically checked (without a GPU the run
# ends no_gpu, exit 1; with one it is verified). The attempt keeps the transcript (request, reply,
# raw stream) and llm_coder.json with the tokens; the API key reaches the server and is written
# nowhere; the same scripted conversation replayed gives the same program and record.
# Usage: llm_run_scripted_test.sh STITCHCUDA TESTS_DIR
set -u
bin=$1; tests=$2
tmp=$(mktemp -d)
server_pid=""
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; [ -n "${KEEP_TMP:-}" ] || rm -rf "$tmp"; }
trap cleanup EXIT
fail=0
check() { if eval "$1"; then echo "ok   $2"; else echo "FAIL $2"; fail=1; fi; }

# The scripted reply: prose around one fenced block holding a whole program for the task
# (tests/programs' hand-written scale_shift_relu with its support header inlined).
python3 - "$tests" "$tmp/script.json" <<'PY'
import json, sys
tests, out = sys.argv[1], sys.argv[2]
source = open(f"{tests}/programs/scale_shift_relu.cu").read()
support = open(f"{tests}/programs/program_support.h").read().replace("#pragma once", "")
source = source.replace('#include "program_support.h"', support)
content = "Here is the whole program.\n\n```cuda\n" + source + "```\n\nIt fuses the three ops."
reply = {"content": content, "usage": {"prompt_tokens": 1200, "completion_tokens": 800}}
json.dump({"models": ["scripted-coder"], "replies": [reply, reply]}, open(out, "w"))
open(out + ".program", "w").write(source)
PY
python3 "$tests/support/scripted_openai_server.py" --script "$tmp/script.json" \
  --log "$tmp/requests.jsonl" --port-file "$tmp/port" >/dev/null 2>"$tmp/server.err" &
server_pid=$!
for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
port=$(cat "$tmp/port") || { echo "FAIL the scripted server did not start"; cat "$tmp/server.err"; exit 1; }
key="sk-llm-run-test-$$"
export STITCH_LLM_RUN_TEST_KEY=$key

run_once() {  # run_once NAME: one run into $tmp/NAME
  "$bin" run "$tests/tasks/scale_shift_relu.py" --coder llm --api-base "http://127.0.0.1:$port/v1" \
    --api-key-env STITCH_LLM_RUN_TEST_KEY --coder-model scripted-coder --max-attempts 1 \
    --runs-dir "$tmp/$1" > "$tmp/$1.out" 2>&1
  echo $? > "$tmp/$1.code"
}
run_once first
run_once second
for name in first second; do
  code=$(cat "$tmp/$name.code")
  check '[ "$code" = 0 ] || [ "$code" = 1 ]' "$name run ends (exit $code)"
  attempt=$(ls -d "$tmp/$name"/*/attempts/01 2>/dev/null | head -1)
  check '[ -n "$attempt" ]' "$name run has attempt 01"
  [ -n "$attempt" ] || { cat "$tmp/$name.out"; continue; }
  check 'cmp -s "$attempt/src/program.cu" "$tmp/script.json.program"' \
    "$name: the program is the reply's code block, prose left out"
  check 'ls "$attempt"/llm/*.request.json "$attempt"/llm/*.reply.json "$attempt"/llm/*.raw.txt >/dev/null' \
    "$name: the request, reply and raw stream are in attempts/01/llm/"
  check 'python3 -c "import json,sys; r=json.load(open(sys.argv[1])); sys.exit(not (r[\"prompt_tokens\"] == 1200 and r[\"completion_tokens\"] == 800 and r[\"outcome\"] == \"usable\"))" "$attempt/llm_coder.json"' \
    "$name: llm_coder.json has the tokens and a usable outcome"
  check 'grep -q "\"outcome\": \"\(passed\|no_gpu\)\"\|\"state\": \"no_gpu\"" "$attempt/verify.json"' \
    "$name: the program built and passed its checks (verified, or no_gpu here)"
  check '! grep -rqF "$key" "$tmp/$name"' "$name: the API key is written nowhere in the run"
done
check '[ "$(grep -c "\"present\": true" "$tmp/requests.jsonl")" = 2 ]' "the key reached the server twice"
check 'python3 -c "import json,sys; rs=[json.loads(l) for l in open(sys.argv[1])]; sys.exit(not all(r[\"body\"][\"stream\"] and r[\"body\"][\"model\"] == \"scripted-coder\" for r in rs))" "$tmp/requests.jsonl"' \
  "both requests streamed, to the configured model"
first=$(ls -d "$tmp"/first/*/attempts/01 | head -1); second=$(ls -d "$tmp"/second/*/attempts/01 | head -1)
strip() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); [r.pop(k, None) for k in ('api_base',)]; [x.pop('seconds', None) for x in r.get('replies', [])]; print(json.dumps(r, sort_keys=True))" "$1"; }
check '[ "$(strip "$first/llm_coder.json")" = "$(strip "$second/llm_coder.json")" ] && cmp -s "$first/src/program.cu" "$second/src/program.cu"' \
  "the conversation replayed gives the same program and record"
exit $fail
