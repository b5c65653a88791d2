#!/usr/bin/env bash
# Installs verl 0.9.1 for the verl integration's tests (tests/integrations/verl/) into .venv-verl:
# verl and the closure of what its reward managers, RLHFDataset and config loading import, pinned in
# integrations/verl/requirements.txt and installed with --no-deps. vLLM, SGLang, Megatron and
# flash-attn are not installed: nothing here generates or trains. PyTorch, numpy, pyarrow and the
# rest of the harness's pins are not installed twice either: .venv-verl sees the harness's .venv
# (scripts/setup.sh) through a .pth file placed after its own site-packages, so its own pins win
# where both have a package.
#
# The wheels are built or downloaded once into $STITCH_WHEEL_CACHE/verl-0.9.1 (default
# ~/.cache/stitchcuda/wheels) and installed from there offline, so a second set-up, a fresh
# checkout or CI installs without the network. Idempotent: a stamp (requirements + harness path)
# makes a second run return at once.
#   integrations/verl/setup.sh                install (download into the cache when needed)
#   integrations/verl/setup.sh --cached-only  install only from the cache; else say so and exit 0
# Env: STITCH_VERL_VENV (default .venv-verl), STITCH_WHEEL_CACHE, STITCH_BOOTSTRAP_PYTHON.
set -euo pipefail
cd "$(dirname "$0")/../.."

requirements=integrations/verl/requirements.txt
venv=${STITCH_VERL_VENV:-.venv-verl}
harness=.venv
cache=${STITCH_WHEEL_CACHE:-$HOME/.cache/stitchcuda/wheels}/verl-0.9.1
python=${STITCH_BOOTSTRAP_PYTHON:-python3}
log() { printf '\033[1msetup-verl:\033[0m %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

mode=install
case "${1:-}" in
  "") ;;
  --cached-only) mode=cached ;;
  *) die "unknown argument '$1' (usage: $0 [--cached-only])" ;;
esac

[ -x "$harness/bin/python" ] || die "no harness environment $harness: run scripts/setup.sh first"
harness_site=$("$harness/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
stamp=$venv/.stitch-verl-requirements
want="$(sha256sum "$requirements" | cut -d' ' -f1) $harness_site"
imports='import verl, aiohttp, hydra, datasets, tokenizers
from verl.experimental.reward_loop.reward_manager.limited import RateLimitedRewardManager
from verl.utils.dataset.rl_dataset import RLHFDataset'
if [ "$(cat "$stamp" 2>/dev/null)" = "$want" ] && "$venv/bin/python" -c "$imports" 2>/dev/null; then
  log "ready (verl 0.9.1 in $venv)"
  exit 0
fi

# Every pinned wheel in the cache? (pip answers offline from --find-links alone.)
cache_complete() {
  [ -d "$cache" ] && "$python" -m pip download -q --no-index --no-deps --find-links "$cache" \
    -r "$requirements" -d "$cache" >/dev/null 2>&1
}
if ! cache_complete; then
  if [ "$mode" = cached ]; then
    log "skipped: the verl wheels are not all in $cache (--cached-only); the verl integration"
    log "tests will skip. integrations/verl/setup.sh downloads them (~2 min, ~125 MB)."
    exit 0
  fi
  log "downloading the pinned wheels into $cache"
  mkdir -p "$cache" || die "cannot create the wheel cache $cache (set STITCH_WHEEL_CACHE)"
  # `pip wheel` rather than `pip download`: an sdist-only pin (antlr4-python3-runtime) is built
  # into a wheel here, so the offline install below needs no build backend from the network.
  "$python" -m pip wheel -q --no-deps -r "$requirements" -w "$cache" ||
    die "could not fetch the pinned wheels (network?)"
fi

log "installing verl 0.9.1 into $venv from $cache"
rm -rf "$venv"
"$python" -m venv "$venv" || die "'$python -m venv' failed (Debian: apt-get install python3-venv)"
venv_site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
# "zz-": .pth files are read in name order; the harness's path goes after everything of ours.
echo "$harness_site" > "$venv_site/zz-stitch-harness.pth"
"$venv/bin/python" -m pip install -q --no-index --no-deps --find-links "$cache" -r "$requirements" ||
  die "pip install from $cache failed"
"$venv/bin/python" -c "$imports" || die "verl does not import in $venv (above)"
echo "$want" > "$stamp"
log "done: verl 0.9.1 in $venv"
