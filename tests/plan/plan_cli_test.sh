#!/usr/bin/env bash
# `stitchcuda plan` from the outside: plans a captured run directory and writes plan.json, prints
# plan.json with --json, refuses a scan (logcumsumexp) with exit 1 naming node and op, exit 2 on bad input.
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
mkdir -p "$tmp/run" "$tmp/scan" "$tmp/conv"
cp "$data/plan/data/plan_gemm_bias_relu.graph.json" "$tmp/run/graph.json"
cp "$data/plan/data/plan_scan_refused.graph.json" "$tmp/scan/graph.json"
cp "$data/plan/data/plan_conv2d_bias_relu.graph.json" "$tmp/conv/graph.json"

expect 0 "plans a run directory" -- "$bin" plan "$tmp/run" --gpu H200
grep -q "s00_matmul_bias_relu_256x2048x1024" "$tmp/out" || { echo "FAIL table: no GEMM subtask"; fail=1; }
grep -q '"format": "stitchcuda.plan"' "$tmp/run/plan.json" || { echo "FAIL plan.json not written"; fail=1; }

expect 0 "--json prints plan.json" -- "$bin" plan "$tmp/run/graph.json" --json --gpu H200
grep -q '"library_epilogue": "bias_relu"' "$tmp/out" || { echo "FAIL --json: no bias_relu"; fail=1; }

expect 0 "--dump-after fuse" -- "$bin" plan "$tmp/run" --dump-after fuse --out "$tmp/x.json"
grep -q "after fuse" "$tmp/err" || { echo "FAIL --dump-after: nothing dumped"; fail=1; }

expect 1 "scan refused" -- "$bin" plan "$tmp/scan"
grep -q "node 'logcumsumexp' (aten.logcumsumexp.default): logcumsumexp is not covered" "$tmp/err" ||
  { echo "FAIL refusal message"; cat "$tmp/err"; fail=1; }
[ ! -e "$tmp/scan/plan.json" ] || { echo "FAIL refused plan written"; fail=1; }

# Convolutions (issue 13 item 1): cuDNN, strict FP32 on the fp32 track, TF32 on the tf32 track.
expect 0 "plans a convolution" -- "$bin" plan "$tmp/conv/graph.json" --json --gpu H200
grep -q '"kernel": "cudnn_conv"' "$tmp/out" || { echo "FAIL conv: no cudnn_conv subtask"; fail=1; }
grep -q '"tensor_math"' "$tmp/out" && { echo "FAIL fp32 conv has tensor_math"; fail=1; }
expect 0 "convolution on the tf32 track" -- "$bin" plan "$tmp/conv/graph.json" --json --gpu H200 \
  --track tf32
grep -q '"tensor_math": 1' "$tmp/out" || { echo "FAIL tf32 conv: no tensor_math"; fail=1; }

# --track (issue 13 item 6): the tf32 track's GEMM runs on TF32 tensor cores.
expect 0 "--track tf32" -- "$bin" plan "$tmp/run/graph.json" --json --gpu H200 --track tf32
grep -q '"tensor_math": 1' "$tmp/out" || { echo "FAIL --track tf32: no tensor_math"; fail=1; }
expect 0 "--track fp32" -- "$bin" plan "$tmp/run/graph.json" --json --gpu H200
grep -q '"tensor_math"' "$tmp/out" && { echo "FAIL fp32 plan has tensor_math"; fail=1; }
expect 2 "unknown track" -- "$bin" plan "$tmp/run" --track fp16
grep -q "unknown track 'fp16'" "$tmp/err" || { echo "FAIL unknown track message"; fail=1; }

expect 2 "unknown pass" -- "$bin" plan "$tmp/run" --dump-after nonsense
expect 2 "missing target" -- "$bin" plan "$tmp/none"
expect 2 "not a task" -- "$bin" plan "$0"
exit $fail
