#!/usr/bin/env bash
# Installs TRL (integrations/trl/requirements.txt, pinned) into .venv-trl, a virtual environment
# layered over the harness's .venv: a .pth file puts .venv's site-packages on its path, so torch
# (2.11.0, large) is shared, not installed twice, and the harness's .venv never changes.
# Idempotent: a stamp file holds the requirements' hash; a second run returns at once.
# The wheels it installed (pinned by a lock file) are kept in $STITCH_WHEEL_CACHE/trl (default
# ~/.cache/stitchcuda/wheels/trl), so a fresh checkout on the same machine (CI) installs offline.
#   integrations/trl/setup.sh                install (PyPI, or the cache when it matches)
#   integrations/trl/setup.sh --cached-only  install only from the cache; else say so and exit 0
#   integrations/trl/setup.sh --check        exit 0 when installed and current, 1 otherwise
# STITCH_TRL_VENV names another venv; the harness's .venv must exist (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
venv=${STITCH_TRL_VENV:-.venv-trl}
requirements=integrations/trl/requirements.txt
stamp=$venv/.stitch-trl-requirements.sha256
log() { printf '\033[1msetup-trl:\033[0m %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

want=$(sha256sum "$requirements" | cut -d' ' -f1)
current() {
  [ "$(cat "$stamp" 2>/dev/null)" = "$want" ] &&
    "$venv/bin/python" -c "import trl, datasets, transformers, torch" 2>/dev/null
}
mode=install
case "${1:-}" in
  "") ;;
  --check) current; exit ;;
  --cached-only) mode=cached ;;
  *) die "unknown argument '$1' (usage: $0 [--cached-only | --check])" ;;
esac
cache=${STITCH_WHEEL_CACHE:-$HOME/.cache/stitchcuda/wheels}/trl
lock=$cache/requirements-$want.lock
if current; then
  log "ready (.venv-trl: $(grep -E '^[a-z]' "$requirements" | tr '\n' ' '))"
  exit 0
fi

[ -x .venv/bin/python ] || die ".venv is missing: run scripts/setup.sh first"
if [ "$mode" = cached ] && [ ! -f "$lock" ]; then
  log "skipped: no cached TRL wheels for these requirements in $cache (--cached-only); the TRL"
  log "integration test will skip. integrations/trl/setup.sh installs them (~2.5 min from PyPI)."
  exit 0
fi
started=$(date +%s)
if [ ! -x "$venv/bin/python" ]; then
  log "creating $venv over .venv"
  # The same interpreter as .venv, so .venv's compiled packages (torch, numpy, pyarrow) load.
  "$(realpath .venv/bin/python)" -m venv "$venv" || die "'python -m venv' failed"
fi
harness_site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
own_site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
# After the venv's own site-packages, so what is installed here wins over .venv's copy.
echo "$(realpath "$harness_site")" > "$own_site/stitch_harness_venv.pth"
if [ -f "$lock" ]; then
  log "installing the cached wheels of $lock (torch comes from .venv)"
  "$venv/bin/python" -m pip install -q --no-index --no-deps --find-links "$cache" -r "$lock" ||
    die "installing from the cache failed (remove $lock to install from PyPI)"
else
  log "installing $(grep -cE '^[a-z]' "$requirements") pinned packages from PyPI (torch comes from .venv)"
  "$venv/bin/python" -m pip install -q -r "$requirements" || die "pip install failed (needs PyPI)"
  # Lock exactly what went into this venv (not .venv's packages) and keep those wheels.
  mkdir -p "$cache"
  "$venv/bin/python" -m pip freeze --path "$own_site" >"$lock.tmp"
  if "$venv/bin/python" -m pip download -q --no-deps -d "$cache" -r "$lock.tmp"; then
    mv "$lock.tmp" "$lock"
  else
    rm -f "$lock.tmp"; log "warning: could not cache the wheels (the install itself worked)"
  fi
fi
"$venv/bin/python" -c "import trl, datasets, transformers, torch" ||
  die "the installed packages do not import"
echo "$want" > "$stamp"
log "ready in $(( $(date +%s) - started )) s"
