#!/usr/bin/env bash
# `stitchcuda doctor --api-base` against the scripted OpenAI-compatible server on a loopback port:
# the models it lists and the first words of its reply are printed, a dead endpoint fails the
# check with its error, and the API key is sent but never printed.
set -u
bin=$1; tests=$2
tmp=$(mktemp -d)
server_pid=""
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail=0
expect() {  # expect CODE DESCRIPTION -- command...
  local want=$1 what=$2; shift 3
  "$@" >"$tmp/out" 2>"$tmp/err"; local got=$?
  if [ "$got" != "$want" ]; then
    echo "FAIL $what: exit $got, want $want"; cat "$tmp/out" "$tmp/err"; fail=1; return
  fi
  echo "ok   $what"
}
has() {  # has TEXT FILE DESCRIPTION
  grep -qF -- "$1" "$2" || { echo "FAIL $3: '$1' not in"; cat "$2"; fail=1; }
}

cat > "$tmp/script.json" <<'JSON'
{"models": ["alpha", "beta"],
 "replies": [{"content": "Hello from the scripted server, nice to meet you"},
             {"content": "Hello again"}]}
JSON
python3 "$tests/support/scripted_openai_server.py" --script "$tmp/script.json" \
  --log "$tmp/requests.jsonl" --port-file "$tmp/port" >/dev/null 2>"$tmp/server.err" &
server_pid=$!
for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
port=$(cat "$tmp/port") || { echo "FAIL the scripted server did not start"; cat "$tmp/server.err"; exit 1; }
good="http://127.0.0.1:$port/v1"
dead="http://127.0.0.1:1/v1"
key="sk-doctor-test-$$"

export STITCH_DOCTOR_TEST_KEY=$key
expect 1 "a dead endpoint fails the check" -- "$bin" doctor --endpoints-only \
  --api-base "$good" --api-base "$dead" --api-key-env STITCH_DOCTOR_TEST_KEY
has "ok   LLM $good" "$tmp/out" "the live endpoint"
has "models alpha, beta" "$tmp/out" "the models listed"
has 'alpha answered "Hello from the scripted server, nice to meet"' "$tmp/out" "the reply"
has "--   LLM $dead" "$tmp/out" "the dead endpoint"
has "/models failed" "$tmp/out" "the dead endpoint's error"
if grep -qF "$key" "$tmp/out" "$tmp/err"; then echo "FAIL the key was printed"; fail=1; fi
grep -q '"present": true' "$tmp/requests.jsonl" || { echo "FAIL no Authorization sent"; fail=1; }

expect 0 "a live endpoint passes, its model chosen" -- "$bin" doctor --endpoints-only \
  --api-base "$good" --model beta --api-key-env STITCH_DOCTOR_TEST_KEY
has 'beta answered "Hello again"' "$tmp/out" "the chosen model"

unset STITCH_DOCTOR_TEST_KEY
expect 1 "an unset key variable is named" -- "$bin" doctor --endpoints-only \
  --api-base "$good" --api-key-env STITCH_DOCTOR_TEST_KEY
has "STITCH_DOCTOR_TEST_KEY" "$tmp/out" "the variable's name"
expect 2 "--endpoints-only needs an endpoint" -- "$bin" doctor --endpoints-only
exit $fail
