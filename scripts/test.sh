#!/usr/bin/env bash
# Sets up (scripts/setup.sh) and runs every test: C++ (GoogleTest) and Python (pytest), through
# ctest. Tests labelled `gpu` skip with a visible message on a machine without a GPU.
#   scripts/test.sh            all tests
#   scripts/test.sh -L unit    only the fast unit tests; -LE gpu: all but the GPU tests
#                              (any ctest arguments are passed on)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PATH=/usr/local/cuda/bin:$PATH
jobs=$(nproc)
ctest --test-dir build --output-on-failure -j "$jobs" "$@"
