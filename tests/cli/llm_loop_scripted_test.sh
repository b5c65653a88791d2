#!/usr/bin/env bash
# The LLM roles as parts of the loop, end to end against the scripted OpenAI-compatible server
# (issue 14): `stitchcuda run --planner llm --coder llm --samples 8`. The LLM Planner's JSON plan
# (its first reply malformed, so it is re-asked once) lands in plans/ and reaches the Coder's
# prompt; the Coder's eight samples go out at once (sample i asks with seed i, which the script
# answers) and come back as attempts 01..08 in sample order: three with the program, five without
# a usable one (prose, a python block, an ABI mismatch, a truncated reply, an empty reply), each
# kept with its transcript, llm_coder.json and the no_usable_output reason. Without a GPU the
# programs are built and statically checked (the run ends no_gpu); with one they are verified.
# usage.json has the tokens per role; the same script replayed gives the same run.
# Usage: llm_loop_scripted_test.sh STITCHCUDA TESTS_DIR
set -u
bin=$1; tests=$2
tmp=$(mktemp -d)
server_pid=""
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; [ -n "${KEEP_TMP:-}" ] || rm -rf "$tmp"; }
trap cleanup EXIT
fail=0
check() { if eval "$1"; then echo "ok   $2"; else echo "FAIL $2"; fail=1; fi; }

python3 - "$tests" "$tmp/script.json" <<'PY'
import json, sys
tests, out = sys.argv[1], sys.argv[2]
source = open(f"{tests}/programs/scale_shift_relu.cu").read()
support = open(f"{tests}/programs/program_support.h").read().replace("#pragma once", "")
source = source.replace('#include "program_support.h"', support)
good = "The program:\n\n```cuda\n" + source + "```\n"
no_destroy = source.replace("stitch_destroy", "stitch_teardown")
plan = {"summary": "one fused elementwise kernel", "fusion_decisions": ["scale, shift and relu in one pass"],
        "intermediate_buffers": [], "kernels": [{"id": "k1_scale_shift_relu", "operations": ["mul", "add", "relu"],
        "computes": "relu(x * scale + shift)", "inputs": ["x", "scale", "shift"], "outputs": ["y"],
        "implementation": "own kernel", "parallelization": "grid-stride, float4", "bound": "memory"}],
        "execution_order": ["k1_scale_shift_relu"], "weight_preparation": [], "optimizations": ["float4 loads"],
        "host_strategy": "one launch on the caller's stream", "changes_from_previous": ""}
usage = {"prompt_tokens": 1000, "completion_tokens": 500}
planner = "Reply with one JSON object"
replies = [{"match": planner, "content": "Plan: {\"summary\": 'one fused", "usage": usage},
           {"match": "Your last reply could not be used", "content": "```json\n" + json.dumps(plan) + "\n```", "usage": usage}]
samples = [[good], ["I would write a kernel."] * 2, ["```python\nprint(1)\n```"] * 2,
           ["```cuda\n" + no_destroy + "```"] * 2,
           [{"content": "```cuda\n" + source[: len(source) // 2], "finish_reason": "length"}] * 2,
           [good], [""] * 2, [good]]
for seed, contents in enumerate(samples):
    for content in contents:
        reply = content if isinstance(content, dict) else {"content": content}
        replies.append(dict(reply, match_seed=seed, usage=usage))
json.dump({"models": ["scripted-planner", "scripted-coder"], "replies": replies}, open(out, "w"))
open(out + ".program", "w").write(source)
PY

run_once() {  # run_once NAME: a fresh server from the script, one run into $tmp/NAME
  python3 "$tests/support/scripted_openai_server.py" --script "$tmp/script.json" \
    --log "$tmp/$1.requests.jsonl" --port-file "$tmp/$1.port" >/dev/null 2>"$tmp/$1.server.err" &
  server_pid=$!
  for _ in $(seq 100); do [ -s "$tmp/$1.port" ] && break; sleep 0.1; done
  local port; port=$(cat "$tmp/$1.port")
  "$bin" run "$tests/tasks/scale_shift_relu.py" --planner llm --coder llm --samples 8 \
    --api-base "http://127.0.0.1:$port/v1" --planner-model scripted-planner \
    --coder-model scripted-coder --max-attempts 8 --runs-dir "$tmp/$1" > "$tmp/$1.out" 2>&1
  echo $? > "$tmp/$1.code"
  kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null; server_pid=""
}
run_once first
run_once second

# One line per attempt: number, sample, status, verdict, reason, program digest (the run's record:
# no timings, and not which sample was carried, since on a GPU equal programs race on time).
attempts() {
  python3 - "$1" <<'PY'
import json, sys
state = json.load(open(sys.argv[1]))
for a in state["attempts"]:
    r = a["result"] or {}
    verdict = "no_usable_output" if r.get("no_usable_output") else (r.get("outcome") or r.get("state"))
    print(a["number"], a["sample"], a["status"], verdict, r.get("reason", "")[:60], a["program_digest"][:12])
print("end", state["end"])
PY
}
for name in first second; do
  code=$(cat "$tmp/$name.code")
  run=$(ls -d "$tmp/$name"/*/ 2>/dev/null | head -1)
  check '[ -n "$run" ] && { [ "$code" = 0 ] || [ "$code" = 1 ]; }' "$name run ends (exit $code)"
  [ -n "$run" ] || { cat "$tmp/$name.out"; continue; }
  check 'python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not (d[\"format\"] == \"stitchcuda.llm_plan\" and d[\"plan\"][\"kernels\"][0][\"id\"] == \"k1_scale_shift_relu\"))" "$run/plans/plan.v1.json"' \
    "$name: the LLM plan is plans/plan.v1.json"
  check 'python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not (d[\"reasked\"] and d[\"outcome\"] == \"usable\"))" "$run/plans/plan.v1.llm.json" && ls "$run"/plans/llm/*.request.json >/dev/null' \
    "$name: the malformed plan was re-asked once; record and transcript in plans/"
  check '[ "$(ls -d "$run"/attempts/0[1-8] | wc -l)" = 8 ] && [ ! -e "$run/attempts/09" ]' "$name: eight attempts"
  for n in 01 02 03 04 05 06 07 08; do
    check 'ls "$run/attempts/$n"/llm/*.request.json >/dev/null 2>&1 && [ -s "$run/attempts/$n/llm_coder.json" ] && [ -s "$run/attempts/$n/result.json" ]' \
      "$name: attempt $n has its transcript, llm_coder.json and result.json"
  done
  attempts "$run/state.json" > "$tmp/$name.attempts"
  check 'awk "NR<=8 {print \$2}" "$tmp/$name.attempts" | tr "\n" " " | grep -qx "0 1 2 3 4 5 6 7 "' \
    "$name: attempts in sample order"
  check '[ "$(grep -c " no_usable_output " "$tmp/$name.attempts")" = 5 ]' "$name: five no_usable_output attempts"
  for reason in "(no_code)" "(abi_violation)" "(truncated)" "(empty_reply)"; do
    check 'grep -qF "$reason" "$tmp/$name.attempts"' "$name: a no_usable_output $reason is recorded"
  done
  check 'cmp -s "$run/attempts/01/src/program.cu" "$tmp/script.json.program"' "$name: sample 0's program is the reply's"
  check '[ "$(grep -c "\"carried\": true" "$run/state.json")" = 1 ]' "$name: one sample carried forward"
  check 'grep -q "The Planner.s plan: one fused elementwise kernel" "$run/attempts/01/llm/"*coder*.request.json' \
    "$name: the LLM plan is in the Coder's prompt"
  check 'python3 -c "import json,sys; d=json.load(open(sys.argv[1])); roles={l[\"role\"]: l for l in d[\"lines\"]}; sys.exit(not (roles[\"planner\"][\"usage\"][\"prompt_tokens\"] == 2000 and roles[\"coder\"][\"requests\"] == 8 and roles[\"coder\"][\"usage\"][\"prompt_tokens\"] == 13000))" "$run/usage.json"' \
    "$name: usage.json has the tokens per role"
  check 'grep -q "^llm coder (scripted-coder): 8 requests" "$tmp/$name.out"' "$name: the run prints tokens per role"
done
check '[ "$(wc -l < "$tmp/first.attempts")" = 9 ] && cmp -s "$tmp/first.attempts" "$tmp/second.attempts"' \
  "the script replayed gives the same run"
[ "$fail" = 0 ] || { cat "$tmp/first.attempts" "$tmp/first.out"; }
exit $fail
