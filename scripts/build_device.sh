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
# Test executables that no gpu-labelled test runs stay behind (their ctest files travel, so
# ctest -L gpu still reads the tree); the hand-run benches (*_bench) and helper programs travel.
cpu_only=()
gpu_executables=$(ctest --test-dir "$source_build" -L gpu --show-only=json-v1 | python3 -c '
import json, sys
for test in json.load(sys.stdin)["tests"]:
    for word in test.get("command") or []:
        print(word)' | sort -u)
while IFS= read -r executable; do
  relative=${executable#"$(realpath "$source_build")"/}
  grep -qxF "$executable" <<< "$gpu_executables" || cpu_only+=(--exclude "/$relative")
done < <(find "$(realpath "$source_build")/tests" -type f -perm -u+x \( -name '*_test' -o -name 'fuzz_*' \))
rsync -a --delete --delete-excluded --exclude '*.o' --exclude '*.a' --exclude 'CheckCUDA/' --exclude '.ninja_*' \
  --exclude '/CMakeFiles/*/CompilerId*' "${cpu_only[@]}" \
  "$source_build/" build-device/
# `stitchcuda serve` (stitchcuda-serve) links cpp-httplib, SQLite and brotli, which the GPU machine
# lacks (docs/serve.md): they travel in build-device/carried-libs/, which scripts/grpo_smoke.sh puts
# on LD_LIBRARY_PATH (set it likewise to run the service there by hand).
if [ -x build-device/stitchcuda-serve ]; then
  mkdir -p build-device/carried-libs
  ldd build-device/stitchcuda-serve | awk '$2 == "=>" && $3 ~ /^\// {print $3}' |
    grep -E '/lib(cpp-httplib|brotli(common|dec|enc)|sqlite3)\.so' |
    while read -r library; do cp -L "$library" build-device/carried-libs/; done
fi
if [ "$source_build" != build-device-work ]; then
  find build-device -type f \( -perm -u+x -o -name '*.so' \) -exec sh -c \
    'file -b "$1" | grep -q ELF && strip --strip-debug "$1"' _ {} \;
fi
du -sh build-device
