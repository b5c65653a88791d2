#!/usr/bin/env bash
# Builds build-device/: a Release build to carry to the lent GPU machine (which has the CUDA
# runtime, torch and python3 but not our build dependencies). Tests there run with its python3.
# Then, with the device tool: carry ["build-device"], command "scripts/gpu_check.sh build-device".
#   --from DIR: no Release build; carry DIR (an up-to-date build of this checkout, e.g. build)
#   instead, its debug information stripped (when a second full build does not fit the time).
#   Its tests then run the python its CMakeCache names (gpu_check.sh links it to the device's).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/cuda/bin:$PATH
source_build=build-device-work
if [ "${1:-}" = "--from" ]; then
  source_build=${2:?"--from needs a build directory"}
  [ -f "$source_build/CMakeCache.txt" ] || { echo "error: $source_build: not a build directory" >&2; exit 2; }
else
  # Built in build-device-work (kept, so rebuilds are incremental); build-device gets what runs
  # there (executables, .so, ctest files, test data) without what only linking needed (.o, .a),
  # because the device tool carries at most 64 MiB.
  cmake -S . -B build-device-work -G Ninja -DCMAKE_BUILD_TYPE=Release -DSTITCH_PYTHON:STRING=python3 >/dev/null
  ninja -C build-device-work
fi
# Test executables of directories with no gpu-labelled test stay behind too (their ctest files
# travel, so ctest -L gpu still reads the tree).
cpu_only=()
for dir in agents bench adapters plan ir io util run fuzz cli app; do
  cpu_only+=(--exclude "/tests/$dir/*_test")
done
rsync -a --delete --delete-excluded --exclude '*.o' --exclude '*.a' --exclude 'CheckCUDA/' --exclude '.ninja_*' \
  --exclude '/CMakeFiles/*/CompilerId*' "${cpu_only[@]}" \
  "$source_build/" build-device/
if [ "$source_build" != build-device-work ]; then
  find build-device -type f \( -perm -u+x -o -name '*.so' \) -exec sh -c \
    'file -b "$1" | grep -q ELF && strip --strip-debug "$1"' _ {} \;
fi
du -sh build-device
