#!/usr/bin/env bash
# The built-in Coder over folders of KernelBench tasks, on a GPU machine (issue 4's acceptance):
#   1. capture every task (stitchcuda capture --all, parallel);
#   2. plan + generate each (refusals recorded with their reasons), building the covered programs
#      in parallel into the shared build cache — meanwhile torch.compile caches are warmed for the
#      tasks that get baselines;
#   3. baselines for those tasks in one batch (judge baseline-batch: serial, GPU otherwise idle),
#      cut where they would leave the verifications no time (the deadline below);
#   4. verify every covered program, one at a time (baselines read from the cache; where the
#      baselines were cut, correctness and our time only);
#   5. results.jsonl + coverage.md (scripts/kb_coverage_report.py) into OUT_DIR.
# Usage: scripts/kb_coverage.sh BUILD_DIR OUT_DIR TASK_DIR...
#   A TASK_DIR's folder name is its level in the table (level1, level2, level3_mlp, ...).
# Env: STITCH_KB_SPEED    folder names whose tasks get eager/compile/reduce-overhead baselines
#                         (default "level2 level2_covered level3_mlp"; empty: none); the others
#                         verify correctness and our time
#      STITCH_KB_JOBS     parallel captures and builds (default: cores - 2)
#      STITCH_KB_WARM_JOBS tasks whose torch.compile caches are warmed at once (default 8)
#      STITCH_KB_DEADLINE seconds after which no new verification starts (default 540); tasks left
#                         are reported as not run. The baselines stop early enough to leave
#                         STITCH_KB_VERIFY_S (default 20) seconds per task for verifying
#      STITCH_KB_TRACK    precision track of programs, baselines and verification (default fp32)
#      STITCH_KB_GENERATE_ARGS  extra `generate` flags (e.g. --strict-fp32-gemm)
#      STITCH_KB_VERIFY_ARGS    extra `verify` flags (e.g. --insecure-sandbox LAYER on a machine
#                         where a sandbox layer breaks CUDA; every verdict then says so)
#      STITCH_KB_ONLY     comma-separated substrings: only tasks whose names contain one
#      STITCH_KB_SHARD    "i/n": only every n-th task of each folder starting at the i-th (0-based),
#                         to spread one level over several device calls
#      STITCH_KB_VERIFY_JOBS  verifications at once for the tasks without baselines (default 1;
#                         more is fine for correctness, but then their times are not speed figures)
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
if [ $# -lt 3 ]; then
  sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 2
fi
build=$(realpath "$1"); out=$(realpath -m "$2"); shift 2
mkdir -p "$out"
started=$(date +%s)
deadline=${STITCH_KB_DEADLINE:-540}
stop_at=$(( started + deadline ))
jobs=${STITCH_KB_JOBS:-$(( $(nproc) > 3 ? $(nproc) - 2 : 1 ))}
speed=" ${STITCH_KB_SPEED-level2 level2_covered level3_mlp} "  # set but empty: no baselines
stitch="$build/stitchcuda"
export PATH=/usr/local/cuda/bin:$PATH
export PYTHONPATH="$repo/python${PYTHONPATH:+:$PYTHONPATH}"
python=${STITCH_PYTHON:-python3}
track=${STITCH_KB_TRACK:-fp32}
elapsed() { echo $(( $(date +%s) - started )); }
log() { printf '[%4ss] %s\n' "$(elapsed)" "$*" >&2; }

# 1. capture ------------------------------------------------------------------------------------
work=$(mktemp -d /tmp/stitch-kb.XXXXXX)
folders=()
for dir in "$@"; do
  name=$(basename "$dir")
  mkdir -p "$work/tasks/$name"
  position=0
  for task in "$dir"/*.py; do
    base=$(basename "$task" .py)
    position=$((position + 1))
    if [ -n "${STITCH_KB_SHARD:-}" ]; then  # "i/n": every n-th task of each folder, from the i-th
      (( (position - 1) % ${STITCH_KB_SHARD#*/} == ${STITCH_KB_SHARD%/*} )) || continue
    fi
    if [ -n "${STITCH_KB_ONLY:-}" ]; then
      keep=0
      IFS=, read -ra wanted <<< "$STITCH_KB_ONLY"
      for w in "${wanted[@]}"; do [[ "$base" == *"$w"* ]] && keep=1; done
      [ $keep = 1 ] || continue
    fi
    cp "$task" "$work/tasks/$name/"
  done
  folders+=("$work/tasks/$name")
done
log "capturing $(ls "$work"/tasks/*/*.py | wc -l) tasks, $jobs at a time"
"$stitch" capture --all "${folders[@]}" --runs-dir "$work/runs" --jobs "$jobs" \
  > "$out/capture.txt" 2>&1
captures=$(ls -d "$work"/runs/capture-*/*/*/ 2>/dev/null | sed 's:/$::')
log "captured $(ls "$work"/runs/capture-*/*/*/graph.json 2>/dev/null | wc -l)"

# 2. plan + generate (+ warm) --------------------------------------------------------------------
printf '%s\n' $captures | xargs -P "$jobs" -I{} sh -c \
  '"$0" generate "{}" --out "{}/generated" --no-compile --track "$1" > "{}/plan.txt" 2>&1; echo $? > "{}/plan.rc"' \
  "$stitch" "$track"
covered=(); speed_dirs=()
for dir in $captures; do
  [ "$(cat "$dir/plan.rc")" = 0 ] || continue
  covered+=("$dir")
  level=$(basename "$(dirname "$dir")")
  [[ "$speed" == *" $level "* ]] && speed_dirs+=("$dir")
done
log "planned: ${#covered[@]} covered; building them, warming torch.compile for ${#speed_dirs[@]}"
baseline_args=()
for dir in "${speed_dirs[@]}"; do baseline_args+=(--graph-dir "$dir"); done
if ((${#speed_dirs[@]})); then
  "$python" -m stitch_harness.judge baseline-batch --warm-only --warm-jobs "${STITCH_KB_WARM_JOBS:-8}" --track "$track" \
    --out-dir "$work/baselines" "${baseline_args[@]}" > "$out/warm.txt" 2>&1 &
  warm_pid=$!
fi
printf '%s\n' "${covered[@]}" | xargs -P "$jobs" -I{} sh -c \
  '"$0" generate "{}" --out "{}/generated" --track "$2" $1 > "{}/generate.txt" 2>&1; echo $? > "{}/generate.rc"' \
  "$stitch" "${STITCH_KB_GENERATE_ARGS:-}" "$track"
[ -n "${warm_pid:-}" ] && wait "$warm_pid"
log "built $(grep -l '^0$' $(printf '%s/generate.rc ' "${covered[@]}") 2>/dev/null | wc -l) programs"

# 3. baselines -----------------------------------------------------------------------------------
if ((${#speed_dirs[@]})); then
  # Cut where they would leave less than STITCH_KB_VERIFY_S per covered task before the deadline
  # (a device call that runs out of time in its baselines returns nothing at all). The batch times
  # one mode over every task, then the next, and writes the tasks' files at its end: cut, it
  # writes none, and its tasks are verified without baselines.
  allowed=$(( stop_at - $(date +%s) - ${STITCH_KB_VERIFY_S:-20} * ${#covered[@]} ))
  (( allowed < 30 )) && allowed=30
  log "baselines for ${#speed_dirs[@]} tasks (serial, ${allowed}s at most)"
  # --info-modes '': PyTorch's default-flags eager timing is information only; it would cost one
  # more process and pass per task.
  timeout --kill-after=10 "$allowed" \
    "$python" -m stitch_harness.judge baseline-batch --warm-jobs 0 --info-modes '' --track "$track" \
    --out-dir "$work/baselines" \
    "${baseline_args[@]}" > "$out/baselines.txt" 2>&1
  [ $? = 124 ] && log "baselines cut at ${allowed}s"
  timed=()  # the tasks whose baselines are there; the others are verified without them
  for dir in "${speed_dirs[@]}"; do
    [ -f "$work/baselines/$(basename "$dir").json" ] && timed+=("$dir")
  done
  log "baselines done for ${#timed[@]} of ${#speed_dirs[@]}"
  speed_dirs=("${timed[@]}")
fi

# 4. verify: the tasks with baselines first, one at a time on an idle GPU; then the others, whose
#    times are not speed figures, STITCH_KB_VERIFY_JOBS at a time (default 1) ----------------------
verify_one() {  # DIR [--no-baselines]
  local dir=$1; shift
  [ "$(cat "$dir/generate.rc" 2>/dev/null)" = 0 ] || return 0
  if (( $(date +%s) > stop_at )); then echo "deadline" > "$dir/verify.skipped"; return 0; fi
  "$stitch" verify "$dir" "$dir/generated/program.cu" --json --track "$track" ${STITCH_KB_VERIFY_ARGS:-} "$@" \
    > "$dir/verify.json" \
    2> "$dir/verify.err"
  printf '[%4ss] %s: %s\n' "$(( $(date +%s) - started ))" "$(basename "$dir")" \
    "$("$python" -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r.get("outcome") or r.get("state"), (r.get("reason") or "")[:100])' "$dir/verify.json" 2>/dev/null || echo "no report")" >&2
}
export -f verify_one
export stitch python started track stop_at
for dir in "${speed_dirs[@]}"; do verify_one "$dir"; done
rest=()
for dir in "${covered[@]}"; do [[ " ${speed_dirs[*]} " == *" $dir "* ]] || rest+=("$dir"); done
if ((${#rest[@]})); then
  printf '%s\n' "${rest[@]}" | xargs -P "${STITCH_KB_VERIFY_JOBS:-1}" -I{} bash -c \
    'verify_one "$1" --no-baselines' _ {}
fi

# 5. report ---------------------------------------------------------------------------------------
"$python" scripts/kb_coverage_report.py "$work/runs" --out "$out" --speed-levels "$speed"
cp "$out/coverage.md" "$out/coverage.txt" 2>/dev/null
[ -d "$work/baselines" ] && cp -r "$work/baselines" "$work/runs/baselines"
tar -czf "$out/kb-runs.tgz" -C "$work/runs" --exclude='*.safetensors' --exclude='*.so' \
  --exclude='attempts/*/judge' . 2>/dev/null
log "done"
