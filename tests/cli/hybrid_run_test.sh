#!/usr/bin/env bash
# `stitchcuda run --coder hybrid` end to end against the scripted OpenAI-compatible server (issue 14
# acceptance): tests/tasks/hybrid_logcumsumexp.py has one op the built-in Coder refuses (a logcumsumexp); the
# Planner keeps it as an opaque subtask, the scripted LLM writes it (one fragment per case from
# tests/agents/hybrid/), the fragment is checked alone against its subgraph, stitched into the
# built-in program, and the whole program verified. Each case is one run with one attempt:
#   correct     → passed (alone and whole)
#   torch       → hacked, calls_torch (HACKS.md row 1)
#   hardcoded   → hacked, output_cache (rows 10/11: outputs bit-identical across input sets; seen
#                 on the H200 2026-12-02)
#   side_stream → hacked, with a side_stream finding among the verdict's findings (row 2; on the
#                 H200 the first reason was output_cache: the unjoined stream's late writes made a
#                 timed call differ from one on fresh buffers)
# Without a GPU a verification stops after the static checks (no_gpu): the torch case is still
# rejected, the others end no_gpu; MODE gpu skips (exit 77) instead.
# Usage: hybrid_run_test.sh STITCHCUDA TESTS_DIR MODE(any|gpu) CASE...
set -u
bin=$1; tests=$2; mode=$3; shift 3
cases=("$@")
gpu=0
nvidia-smi -L >/dev/null 2>&1 && gpu=1
if [ "$mode" = gpu ] && [ $gpu = 0 ]; then echo "SKIP: no GPU here (nvidia-smi -L fails)"; exit 77; fi
tmp=$(mktemp -d)
server_pid=""
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; [ -n "${KEEP_TMP:-}" ] || rm -rf "$tmp"; }
trap cleanup EXIT
fail=0
check() { if eval "$1"; then echo "ok   $2"; else echo "FAIL $2"; fail=1; fi; }
field() {  # field FILE EXPR: a python expression over the JSON document `d`
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1" 2>/dev/null
}

start_server() {  # start_server CASE: the scripted server replying with that case's fragment
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
  rm -f "$tmp/port"
  python3 - "$tests/agents/hybrid/logcumsumexp_$1.cu" "$tmp/script.json" <<'PY'
import json, sys
code = open(sys.argv[1]).read()
content = "Here is the subtask.\n\n```cuda\n" + code + "```\n"
reply = {"content": content, "usage": {"prompt_tokens": 900, "completion_tokens": 400}}
json.dump({"models": ["scripted-coder"], "replies": [reply, reply]}, open(sys.argv[2], "w"))
PY
  python3 "$tests/support/scripted_openai_server.py" --script "$tmp/script.json" \
    --log "$tmp/$1.requests.jsonl" --port-file "$tmp/port" >/dev/null 2>"$tmp/server.err" &
  server_pid=$!
  for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
  [ -s "$tmp/port" ] || { echo "FAIL the scripted server did not start"; cat "$tmp/server.err"; exit 1; }
}

# expected CASE: "verdict|reason substring" of the whole program and of the fragment alone
expected() {
  case "$1:$gpu" in
    correct:1) echo "passed|" ;;
    torch:*) echo "hacked|calls_torch" ;;
    hardcoded:1) echo "hacked|output_cache" ;;
    side_stream:1) echo "hacked|side_stream" ;;
    *) echo "no_gpu|" ;;
  esac
}

for case in "${cases[@]}"; do
  start_server "$case"
  "$bin" run "$tests/tasks/hybrid_logcumsumexp.py" --coder hybrid --hybrid-hot 0 \
    --api-base "http://127.0.0.1:$(cat "$tmp/port")/v1" --coder-model scripted-coder \
    --max-attempts 1 --no-refine --runs-dir "$tmp/$case" > "$tmp/$case.out" 2>&1
  code=$?
  run=$(ls -d "$tmp/$case"/*/ 2>/dev/null | head -1)
  attempt="${run}attempts/01"
  IFS='|' read -r verdict reason <<< "$(expected "$case")"
  check '[ -f "$attempt/verify.json" ]' "$case: attempt 01 was verified (exit $code)"
  [ -f "$attempt/verify.json" ] || { tail -30 "$tmp/$case.out"; continue; }
  whole=$(field "$attempt/verify.json" 'd.get("outcome") or d.get("state")')
  why=$(field "$attempt/verify.json" 'd.get("reason", "")')
  check '[ "$whole" = "$verdict" ]' "$case: the whole program is $verdict (got $whole: $why)"
  kinds=$(field "$attempt/verify.json" '" ".join(f.get("kind", "") for f in d.get("findings", []))')
  check '[ -z "$reason" ] || [[ "$why $kinds" == *"$reason"* ]]' \
    "$case: the reason or a finding names $reason (reason: $why; findings: $kinds)"
  alone=$(field "$attempt/hybrid.json" '[s for s in d["subtasks"] if s["from"] == "llm"][0]["alone"]["verdict"]')
  check '[ "$alone" = "$verdict" ]' "$case: the fragment alone is $verdict (got $alone)"
  sources=$(field "$attempt/hybrid.json" '",".join(s["from"] for s in d["subtasks"])')
  check '[ "$sources" = builtin,llm,builtin ]' \
    "$case: hybrid.json says s00 and s02 are built-in, s01 the LLM's (got $sources)"
  check 'cmp -s "$attempt/src/s01_opaque_logcumsumexp_32x128.cu" "$tests/agents/hybrid/logcumsumexp_$case.cu"' \
    "$case: the fragment is kept as src/s01_opaque_logcumsumexp_32x128.cu"
  check 'grep -q "subtask_s01_opaque_logcumsumexp_32x128(" "$attempt/src/program.cu"' \
    "$case: the fragment is stitched into program.cu"
  from=$(field "${run}summary.json" 'd["subtasks_from"]["s01_opaque_logcumsumexp_32x128"]')
  check '[ "$from" = llm ]' "$case: summary.json records the subtask's source (got $from)"
  if [ "$verdict" = passed ]; then
    check '[ $code = 0 ] && [ -d "${run}best" ]' "$case: the run succeeded with best/"
  fi
done
exit $fail
