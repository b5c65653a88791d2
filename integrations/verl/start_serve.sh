#!/usr/bin/env bash
# Starts this node's reward service, `stitchcuda serve` (docs/serve.md), in the background and waits
# until `GET /healthz` answers ok; a service already healthy on the port is left as it is. One
# worker per visible GPU (SERVE_GPUS sets CUDA_VISIBLE_DEVICES for it).
#
#   integrations/verl/start_serve.sh           start (or find) it; prints its URL
#   integrations/verl/start_serve.sh --stop    SIGTERM it (it finishes in-flight work first)
#
# Env: STITCHCUDA_BIN (default build/stitchcuda), SERVE_HOST (127.0.0.1; 0.0.0.0 so that other
# nodes can fail over to this one), SERVE_PORT (8421), SERVE_STATE_DIR (serve-state), SERVE_GPUS,
# STITCHCUDA_SERVE_TOKEN_FILE (the token; default SERVE_STATE_DIR/token, made by the service),
# TASKS_DIRS (colon-separated --tasks-dir folders holding the tasks the dataset names; required),
# SERVE_ARGS (more arguments, e.g. "--baseline compile --verify-arg=--insecure-sandbox").
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${STITCHCUDA_BIN:-$root/build/stitchcuda}
host=${SERVE_HOST:-127.0.0.1}
port=${SERVE_PORT:-8421}
state=${SERVE_STATE_DIR:-$root/serve-state}
token_file=${STITCHCUDA_SERVE_TOKEN_FILE:-$state/token}
pid_file=$state/serve.pid
log() { printf '\033[1mstart-serve:\033[0m %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

probe_host=$host
[ "$host" = 0.0.0.0 ] && probe_host=127.0.0.1
url="http://$probe_host:$port"
healthy() { curl -fsS --max-time 2 "$url/healthz" 2>/dev/null | grep -q '"status":"ok"'; }

if [ "${1:-}" = --stop ]; then
  [ -f "$pid_file" ] || die "no $pid_file: nothing started here"
  kill -TERM "$(cat "$pid_file")" && log "SIGTERM sent to $(cat "$pid_file")"
  exit 0
fi
[ -z "${1:-}" ] || die "unknown argument '$1' (usage: $0 [--stop])"

if healthy; then
  log "already serving at $url"
  echo "$url"
  exit 0
fi
[ -x "$bin" ] || die "no $bin: build StitchCUDA first (scripts/setup.sh), or set STITCHCUDA_BIN"
[ -n "${TASKS_DIRS:-}" ] || die "TASKS_DIRS must name the folders of the tasks the dataset's runs came from"

mkdir -p "$state"
args=(serve --host "$host" --port "$port" --state-dir "$state")
[ -f "$token_file" ] && args+=(--token-file "$token_file")
IFS=: read -r -a dirs <<<"$TASKS_DIRS"
for dir in "${dirs[@]}"; do args+=(--tasks-dir "$dir"); done
read -r -a extra <<<"${SERVE_ARGS:-}"
args+=("${extra[@]}")

log "starting $bin ${args[*]} (log: $state/serve.log)"
if [ -n "${SERVE_GPUS:-}" ]; then export CUDA_VISIBLE_DEVICES=$SERVE_GPUS; fi
nohup "$bin" "${args[@]}" >>"$state/serve.log" 2>&1 &
echo $! >"$pid_file"
for _ in $(seq 300); do
  if healthy; then
    log "serving at $url (pid $(cat "$pid_file"), token in ${token_file})"
    echo "$url"
    exit 0
  fi
  kill -0 "$(cat "$pid_file")" 2>/dev/null || die "the service exited: $(tail -5 "$state/serve.log")"
  sleep 1
done
die "the service did not become healthy in 300 s ($state/serve.log)"
