#!/usr/bin/env bash
# `stitchcuda generate` on the Planner's fixtures: a covered graph → program.cu + plan.json (exit 0,
# compiled with nvcc when it is here); a convolution → refused naming the node (exit 1); not a task
# → exit 2. Usage: generate_cli_test.sh STITCHCUDA TESTS_DIR
set -uo pipefail
stitchcuda=$1; tests=$2
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export STITCH_BUILD_CACHE="$work/build-cache"

"$stitchcuda" generate "$tests/plan/data/plan_gemm_bias_relu.graph.json" --out "$work/gemm" \
  > "$work/gemm.txt" 2>&1 || fail "covered graph: exit $? $(cat "$work/gemm.txt")"
[ -s "$work/gemm/program.cu" ] || fail "no program.cu"
[ -s "$work/gemm/plan.json" ] || fail "no plan.json"
grep -q "extern \"C\" int stitch_forward" "$work/gemm/program.cu" || fail "program lacks the ABI"
grep -q -- "-lcublasLt" "$work/gemm.txt" || fail "the GEMM program must say it links cublasLt"
if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then
  grep -q "^compiled " "$work/gemm.txt" || fail "nvcc is here but nothing was compiled: $(cat "$work/gemm.txt")"
  [ -s "$work/gemm/program.so" ] || fail "no program.so"
  # The build went through the cache `verify` reads: a second generate finds it there.
  ls "$work/build-cache/entries/"*/program.so >/dev/null 2>&1 || fail "no build cache entry"
  "$stitchcuda" generate "$tests/plan/data/plan_gemm_bias_relu.graph.json" --out "$work/gemm2" \
    > "$work/gemm2.txt" 2>&1 || fail "second generate: $(cat "$work/gemm2.txt")"
  grep -q "from the build cache" "$work/gemm2.txt" || fail "second build missed the cache: $(cat "$work/gemm2.txt")"
  cmp -s "$work/gemm/program.so" "$work/gemm2/program.so" || fail "cached library differs"
fi

"$stitchcuda" generate "$tests/plan/data/plan_conv_refused.graph.json" --out "$work/conv" \
  > "$work/conv.txt" 2>&1
code=$?
[ $code -eq 1 ] || fail "convolution: exit $code, want 1"
grep -q "convolution" "$work/conv.txt" || fail "refusal must name the op: $(cat "$work/conv.txt")"
[ ! -e "$work/conv/program.cu" ] || fail "a refused plan must not leave a program"

"$stitchcuda" generate "$work/nothing.txt" > "$work/bad.txt" 2>&1
code=$?
[ $code -eq 2 ] || fail "bad input: exit $code, want 2"
echo "generate CLI: ok"
