#!/usr/bin/env bash
# Builds build-device/: a Release build to carry to the lent GPU machine (which has the CUDA
# runtime, torch and python3 but not our build dependencies). Tests there run with its python3.
# Then, with the device tool: carry ["build-device"], command "scripts/gpu_check.sh build-device".
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/cuda/bin:$PATH
cmake -S . -B build-device -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTITCH_PYTHON=python3 >/dev/null
ninja -C build-device
# The device tool carries at most 64 MiB: keep what runs (executables, .so, ctest files, test data),
# drop what only linking needed. The next local build here simply recompiles.
find build-device \( -name '*.o' -o -name '*.a' \) -delete
find build-device -type d -name CheckCUDA -prune -exec rm -rf {} +
du -sh build-device
