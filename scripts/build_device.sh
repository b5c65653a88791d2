#!/usr/bin/env bash
# Builds build-device/: a Release build to carry to the lent GPU machine (which has the CUDA
# runtime, torch and python3 but not our build dependencies). Tests there run with its python3.
# Then, with the device tool: carry ["build-device"], command "scripts/gpu_check.sh build-device".
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/cuda/bin:$PATH
# Built in build-device-work (kept, so rebuilds are incremental); build-device gets what runs there
# (executables, .so, ctest files, test data) without what only linking needed (.o, .a), because the
# device tool carries at most 64 MiB.
cmake -S . -B build-device-work -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTITCH_PYTHON:STRING=python3 >/dev/null
ninja -C build-device-work
# Test executables of directories with no gpu-labelled test stay behind too (their ctest files
# travel, so ctest -L gpu still reads the tree).
cpu_only=()
for dir in agents bench adapters plan ir io util run fuzz cli app; do
  cpu_only+=(--exclude "/tests/$dir/*_test")
done
rsync -a --delete --delete-excluded --exclude '*.o' --exclude '*.a' --exclude 'CheckCUDA/' --exclude '.ninja_*' \
  --exclude '/CMakeFiles/*/CompilerId*' "${cpu_only[@]}" \
  build-device-work/ build-device/
du -sh build-device
