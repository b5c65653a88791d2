#!/usr/bin/env bash
# `stitchcuda show` on good and corrupt files: a corrupt or truncated graph/safetensors file gives one
# line naming the file, exit code 2, and never a crash.
set -u
bin=$1; data=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
expect() {  # expect CODE DESCRIPTION -- command...
  local want=$1 what=$2; shift 3
  "$@" >"$tmp/out" 2>"$tmp/err"; local got=$?
  if [ "$got" != "$want" ]; then echo "FAIL $what: exit $got, want $want"; cat "$tmp/err"; fail=1; return; fi
  echo "ok   $what"
}
expect 0 "valid graph prints" -- "$bin" show "$data/ir/data/mlp.json"
grep -q "addmm" "$tmp/out" || { echo "FAIL valid graph: no addmm in the table"; fail=1; }
head -c 300 "$data/ir/data/mlp.json" > "$tmp/truncated.json"
expect 2 "truncated graph rejected" -- "$bin" show "$tmp/truncated.json"
grep -q "truncated.json" "$tmp/err" || { echo "FAIL truncated graph: message does not name the file"; fail=1; }
[ "$(wc -l < "$tmp/err")" -le 2 ] || { echo "FAIL truncated graph: message longer than a line"; fail=1; }
printf '\x10\x00\x00\x00\x00\x00\x00\x00{"a":{"dtype":"F32"' > "$tmp/bad.safetensors"
expect 2 "corrupt safetensors rejected" -- "$bin" show "$tmp/bad.safetensors"
grep -q "bad.safetensors" "$tmp/err" || { echo "FAIL corrupt safetensors: message does not name the file"; fail=1; }
expect 2 "missing file" -- "$bin" show "$tmp/none.json"
expect 2 "wrong kind of file" -- "$bin" show "$0"
exit $fail
