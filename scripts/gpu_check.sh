#!/usr/bin/env bash
# The one script run on the lent GPU machine (see README): environment report, the gpu-labelled
# tests from the carried build, the verification smoke runs and benchmarks; a short table last.
# Usage on the device: scripts/gpu_check.sh [BUILD_DIR]   (default build-device, built here by
# scripts/build_device.sh and carried along). Full logs go to $OUT when it is set.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-device}
# Sections to run (default all): STITCH_GPU_CHECK="tests bench sweep profile"
sections=" ${STITCH_GPU_CHECK:-tests bench sweep profile} "
want() { [[ "$sections" == *" $1 "* ]]; }
out=${OUT:-/tmp/stitch-gpu-out}
mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
# The carried build refers to the checkout by the path it was configured at; make it valid here.
configured=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt" 2>/dev/null)
if [ -n "$configured" ] && [ "$configured" != "$(pwd)" ] && [ ! -e "$configured" ]; then
  mkdir -p "$(dirname "$configured")" && ln -s "$(pwd)" "$configured"
fi

declare -a table
row() { table+=("$(printf '%-44s %s' "$1" "$2")"); }

echo "== environment"
nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
nvcc --version | tail -2
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
ldd --version | head -1
row "gpu" "$(head -1 "$out/gpu.txt")"

echo "== carried binaries run here?"
if "$build/stitchcuda" --version; then row "carried stitchcuda runs" "yes"; else row "carried stitchcuda runs" "NO"; fi
ldd "$build/stitchcuda" | grep -E "not found" && row "missing libraries" "see log"

if want tests; then
echo "== gpu tests"
if ctest --test-dir "$build" -L gpu --output-on-failure -j 4 > "$out/ctest-gpu.log" 2>&1; then
  row "ctest -L gpu" "$(grep -E 'tests passed|tests failed' "$out/ctest-gpu.log" | tail -1)"
else
  row "ctest -L gpu" "FAILED: $(grep -E 'tests passed|tests failed' "$out/ctest-gpu.log" | tail -1)"
  grep -E "^\s*[0-9]+ - |Failed|\*\*\*" "$out/ctest-gpu.log" | tail -20
fi
fi

if want bench; then
  echo "== benchmarks"
  scripts/gpu_bench.sh "$build" "$out" | tee "$out/bench.txt"
fi

if want sweep; then
echo "== adversarial sweep (every hack and near-miss through stitchcuda verify)"
python3 scripts/adversarial_sweep.py "$build" ${STITCH_SWEEP_ONLY:+--only "$STITCH_SWEEP_ONLY"} \
  > "$out/adversarial.txt" 2>&1
grep -v " ok " "$out/adversarial.txt" | tail -15
row "adversarial sweep" "$(tail -1 "$out/adversarial.txt")"
fi

if want profile; then
echo "== profile (CUPTI timeline + ncu) of the MLP program and its reference"
timeout -k 5 150 "$build/stitchcuda" profile tests/tasks/mlp.py tests/programs/mlp.cu --top 2 \
  --ncu-timeout 60 > "$out/profile-mlp.txt" 2>&1
row "profile mlp.cu" "exit $? ($(grep -c . "$out/profile-mlp.txt") lines)"
tail -25 "$out/profile-mlp.txt"
timeout -k 5 90 "$build/stitchcuda" profile tests/tasks/mlp.py --reference \
  > "$out/profile-mlp-ref.txt" 2>&1
row "profile --reference mlp" "exit $?"
tail -12 "$out/profile-mlp-ref.txt"
fi

echo
echo "== summary ($(date -u +%Y-%m-%dT%H:%MZ))"
printf '%s\n' "${table[@]}"
