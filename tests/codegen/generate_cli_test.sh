#!/usr/bin/env bash
# `stitchcuda generate` on the Planner's fixtures: a covered graph → program.cu + plan.json (exit 0,
# compiled with nvcc when it is here); a convolution → a cuDNN program linking cudnn, strict FP32
# or TF32 by track; a scan → refused naming the node (exit 1); not a task → exit 2. Usage: generate_cli_test.sh STITCHCUDA TESTS_DIR
set -uo pipefail
stitchcuda=$1; tests=$2
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export STITCH_BUILD_CACHE="$work/build-cache"

"$stitchcuda" generate "$tests/plan/data/plan_gemm_bias_relu.graph.json" --out "$work/gemm" \
  > "$work/gemm.txt" 2>&1 || fail "covered graph: exit $? $(cat "$work/gemm.txt")"
[ -s "$work/gemm/program.cu" ] || fail "no program.cu"
[ -s "$work/gemm/plan.json" ] || fail "no plan.json"
grep -q "^STITCH_PROGRAM_EXPORTS(Program)$" "$work/gemm/program.cu" || fail "program lacks the ABI exports (kernels/host_program.cuh)"
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

# A compute-bound GEMM runs as split-precision 3xTF32 (the one-kernel GemmTf32x3) unless strict
# FP32 is asked for.
"$stitchcuda" generate "$tests/plan/data/plan_gemm_tf32x3.graph.json" --out "$work/tf32x3" \
  --no-compile > "$work/tf32x3.txt" 2>&1 || fail "3xTF32 graph: $(cat "$work/tf32x3.txt")"
grep -q "GemmTf32x3 mm0" "$work/tf32x3/program.cu" || fail "the large GEMM should use GemmTf32x3"
"$stitchcuda" generate "$tests/plan/data/plan_gemm_tf32x3.graph.json" --out "$work/strict" \
  --no-compile --strict-fp32-gemm > "$work/strict.txt" 2>&1 || fail "strict: $(cat "$work/strict.txt")"
grep -q "LtMatmul mm0" "$work/strict/program.cu" || fail "--strict-fp32-gemm must keep LtMatmul"
grep -q "Tf32x3\|matmul_tf32x3" "$work/strict/program.cu" && fail "--strict-fp32-gemm program uses 3xTF32"

# The tf32 track: the same GEMM on TF32 tensor cores, one cuBLASLt call, no split.
"$stitchcuda" generate "$tests/plan/data/plan_gemm_tf32x3.graph.json" --out "$work/tf32" \
  --no-compile --track tf32 > "$work/tf32.txt" 2>&1 || fail "--track tf32: $(cat "$work/tf32.txt")"
grep -q "LtMatmul::Compute::fast_tf32" "$work/tf32/program.cu" || fail "--track tf32 must use fast_tf32"
grep -q "Tf32x3\|matmul_tf32x3" "$work/tf32/program.cu" && fail "--track tf32 program splits"
"$stitchcuda" generate "$tests/plan/data/plan_gemm_tf32x3.graph.json" --out "$work/fp16" \
  --no-compile --track fp16 > "$work/fp16.txt" 2>&1
code=$?
[ $code -eq 2 ] || fail "unknown track: exit $code, want 2"

# Convolutions (issue 13 item 1): cuDNN, strict FP32 on the fp32 track, TF32 on the tf32 track.
"$stitchcuda" generate "$tests/plan/data/plan_conv2d_bias_relu.graph.json" --out "$work/conv" \
  --no-compile > "$work/conv.txt" 2>&1 || fail "conv: $(cat "$work/conv.txt")"
grep -q -- "-lcudnn" "$work/conv.txt" || fail "the conv program must say it links cudnn"
grep -q "ConvMath::strict_fp32" "$work/conv/program.cu" || fail "fp32 conv must be strict FP32"
"$stitchcuda" generate "$tests/plan/data/plan_conv2d_bias_relu.graph.json" --out "$work/conv32" \
  --no-compile --track tf32 > "$work/conv32.txt" 2>&1 || fail "conv tf32: $(cat "$work/conv32.txt")"
grep -q "ConvMath::tf32" "$work/conv32/program.cu" || fail "--track tf32 conv must use ConvMath::tf32"

"$stitchcuda" generate "$tests/plan/data/plan_scan_refused.graph.json" --out "$work/scan" \
  > "$work/scan.txt" 2>&1
code=$?
[ $code -eq 1 ] || fail "scan: exit $code, want 1"
grep -q "logcumsumexp" "$work/scan.txt" || fail "refusal must name the op: $(cat "$work/scan.txt")"
[ ! -e "$work/scan/program.cu" ] || fail "a refused plan must not leave a program"

"$stitchcuda" generate "$work/nothing.txt" > "$work/bad.txt" 2>&1
code=$?
[ $code -eq 2 ] || fail "bad input: exit $code, want 2"
echo "generate CLI: ok"
