#!/usr/bin/env bash
# Regenerates the captured compiler logs (*.log) beside their sources with the flags NvccCompiler
# uses, from inside this directory so the logs name files relatively. The parser tests read the logs;
# re-run this after an nvcc upgrade to check the parsers against the new output format.
set -u
cd "$(dirname "$0")"
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
FLAGS=(-shared -Xcompiler -fPIC -O3 -std=c++17 -lineinfo -Xptxas -v --expt-relaxed-constexpr
       -arch=sm_90 -cudart shared)
capture() {  # capture LOG_NAME nvcc-arguments...
  local log=$1; shift
  "$NVCC" "$@" >"$log" 2>&1
  echo "exit status $?" >>"$log"
}
capture broken_program.log "${FLAGS[@]}" broken_program.cu -o /tmp/stitch_fixture.so
capture spilling_kernel.log "${FLAGS[@]}" spilling_kernel.cu -o /tmp/stitch_fixture.so
capture host_error.log "${FLAGS[@]}" host_error.cu -o /tmp/stitch_fixture.so
capture shared_overflow.log "${FLAGS[@]}" shared_overflow.cu -o /tmp/stitch_fixture.so
capture warnings_only.log "${FLAGS[@]}" warnings_only.cu -o /tmp/stitch_fixture.so
capture two_archs.log -shared -Xcompiler -fPIC -O3 -std=c++17 -Xptxas -v \
  -gencode arch=compute_90a,code=sm_90a -gencode arch=compute_80,code=sm_80 spilling_kernel.cu \
  -o /tmp/stitch_fixture.so
capture missing_symbol_device.log -rdc=true -O3 -std=c++17 -arch=sm_90 missing_symbol.cu \
  -o /tmp/stitch_fixture.bin
capture missing_library.log "${FLAGS[@]}" spilling_kernel.cu -lstitch_no_such_library \
  -o /tmp/stitch_fixture.so
capture bad_arch.log "${FLAGS[@]/-arch=sm_90/-arch=sm_1}" spilling_kernel.cu -o /tmp/stitch_fixture.so
"$NVCC" --version >nvcc_version.txt 2>&1
rm -f /tmp/stitch_fixture.so /tmp/stitch_fixture.bin
