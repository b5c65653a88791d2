#!/usr/bin/env bash
# The LLM roles' options of `stitchcuda run` from the outside: a bad configuration is bad input
# (exit 2) naming what is wrong, before any capture starts.
set -u
bin=$(realpath "$1"); tasks=$(realpath "$2")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }
task=$tasks/scale_shift_relu.py
cd "$tmp"  # no stitchcuda.toml here unless a case writes one

"$bin" run "$task" --coder llm >/dev/null 2>"$tmp/err"
check "--coder llm without an endpoint exits 2" '[ $? = 2 ] && grep -q "has no api_base: give --api-base URL" "$tmp/err"'
"$bin" run "$task" --coder gpt >/dev/null 2>"$tmp/err"
check "an unknown coder kind exits 2" '[ $? = 2 ] && grep -q -- "--coder gpt: expected builtin, llm or hybrid" "$tmp/err"'
"$bin" run "$task" --planner llm --api-base http://127.0.0.1:9/v1 --planner-model m >/dev/null 2>"$tmp/err"
check "an LLM plan with the built-in Coder is refused before the run" '[ $? = 2 ] && grep -q "planner llm needs --coder llm: the built-in Coder implements only the built-in Planner" "$tmp/err"'
"$bin" run "$task" --config "$tmp/none.toml" >/dev/null 2>&1
check "a missing --config file exits 2" '[ $? = 2 ]'
printf '[coder]\nkind = "llm"\ntemprature = 0.1\n' > stitchcuda.toml
"$bin" run "$task" >/dev/null 2>"$tmp/err"
check "the working directory's stitchcuda.toml is read; an unknown key names file:line" '[ $? = 2 ] && grep -q "stitchcuda.toml:3:1: unknown key .temprature. in \[coder\]" "$tmp/err"'
printf '[coder]\napi_key = "sk-abc"\n' > stitchcuda.toml
"$bin" run "$task" >/dev/null 2>"$tmp/err"
check "a key in the file is refused" '[ $? = 2 ] && grep -q "the API key itself never goes in a config file" "$tmp/err"'
exit $fail
