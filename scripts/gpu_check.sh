#!/usr/bin/env bash
# The one script run on the lent GPU machine (see README): environment report, the gpu-labelled
# tests from the carried build, the verification smoke runs and benchmarks; a short table last.
# Usage on the device: scripts/gpu_check.sh [BUILD_DIR]   (default build-device, built here by
# scripts/build_device.sh and carried along). Full logs go to $OUT/gpu-logs.tgz when OUT is set.
set -uo pipefail
cd "$(dirname "$0")/.."
usage() { sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'; }
case "${1:-}" in
  -h | --help) usage; exit 0 ;;
  -*) echo "gpu_check.sh: unknown option '$1' (the one argument is the build directory)" >&2
      usage >&2; exit 2 ;;
esac
if [ $# -gt 1 ]; then
  echo "gpu_check.sh: one argument at most, the build directory (got $#)" >&2; exit 2
fi
build=${1:-build-device}
# A directory that is no configured build would run nothing and report it as failures.
if [ ! -f "$build/CMakeCache.txt" ]; then
  echo "gpu_check.sh: '$build' is not a build directory (no CMakeCache.txt); make one with" \
    "scripts/build_device.sh and carry it" >&2
  exit 2
fi
# Sections to run (default all but kbench, kb and loop):
#   STITCH_GPU_CHECK="tests bench sweep profile generated kbench kb loop"
#   kbench: the kernel benches built into $BUILD/tests/kernels (ninja conv_igemm_tf32x3_bench
#   gemm_tf32x3_bench conv_depthwise_bench before build_device.sh), each present one run as
#   STITCH_KBENCH lists them: "NAME[:ARG]" words (default "conv_igemm_tf32x3_bench
#   gemm_tf32x3_bench:--fused conv_depthwise_bench"); their output also lands in $OUT
#   kb: scripts/kb_coverage.sh over $STITCH_KB_DIRS (default ".kb/level2 .kb/level3_mlp"; stage
#   them with scripts/stage_kernelbench.sh and carry .kb)
# STITCH_VERIFY_ARGS: extra `verify` flags of the generated section (STITCH_KB_VERIFY_ARGS for kb),
#   e.g. --insecure-sandbox LAYER on a machine where a sandbox layer breaks CUDA
# STITCH_GENERATED_PROFILE=1: the generated section also profiles each program (timeline only)
sections=" ${STITCH_GPU_CHECK:-tests bench sweep profile generated} "
want() { [[ "$sections" == *" $1 "* ]]; }
# Logs go to a scratch directory, packed into $OUT/gpu-logs.tgz at the end (the device tool
# returns only a few files).
out=$(mktemp -d /tmp/stitch-gpu-logs.XXXXXX)
pack_logs() { [ -n "${OUT:-}" ] && tar -czf "$OUT/gpu-logs.tgz" -C "$out" . ; }
trap pack_logs EXIT
export PATH=/usr/local/cuda/bin:$PATH
# The carried build refers to the checkout, and to itself, by the paths it was configured at
# (build_device.sh builds in build-device-work/); make both valid here.
configured=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt" 2>/dev/null)
if [ -n "$configured" ] && [ "$configured" != "$(pwd)" ] && [ ! -e "$configured" ]; then
  mkdir -p "$(dirname "$configured")" && ln -s "$(pwd)" "$configured"
fi
built_at=$(sed -n 's/^CMAKE_CACHEFILE_DIR:INTERNAL=//p' "$build/CMakeCache.txt" 2>/dev/null)
if [ -n "$built_at" ] && [ ! -e "$built_at" ]; then
  mkdir -p "$(dirname "$built_at")" && ln -s "$(realpath "$build")" "$built_at"
fi
# A build carried with build_device.sh --from names the interpreter it was configured with (the
# checkout's .venv, absent here): that path becomes a script running this machine's python3, which
# has torch. Not a symbolic link: a python3 that is itself a virtual environment's finds its
# packages only when started from its own directory (pyvenv.cfg beside it).
configured_python=$(sed -n 's/^STITCH_PYTHON:STRING=//p' "$build/CMakeCache.txt" 2>/dev/null)
if [[ "$configured_python" == /* ]] && [ ! -e "$configured_python" ]; then
  mkdir -p "$(dirname "$configured_python")" &&
    printf '#!/bin/sh\nexec %q "$@"\n' "$(command -v python3)" > "$configured_python" &&
    chmod +x "$configured_python"
fi

# STITCH_BUDGET_S: seconds this script may take in all (default 540, inside the device tool's
# 600-second calls); the bench stops taking tasks in time to pack its results before then.
started_at=$(date +%s)
end_at=$(( started_at + ${STITCH_BUDGET_S:-540} ))
left() { echo $(( end_at - $(date +%s) )); }

declare -a table
row() { table+=("$(printf '%-44s %s' "$1" "$2")"); }

echo "== environment"
nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
nvcc --version | tail -2
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
ldd --version | head -1
row "gpu" "$(head -1 "$out/gpu.txt")"

echo "== carried binaries run here?"
if "$build/stitchcuda" --version; then row "carried stitchcuda runs" "yes"; else row "carried stitchcuda runs" "NO"; fi
ldd "$build/stitchcuda" | grep -E "not found" && row "missing libraries" "see log"

if want tests; then
echo "== gpu tests"
# STITCH_CTEST_EXCLUDE: a ctest -E regex of gpu tests to leave out (e.g. python_harness_gpu, ~3 min)
# STITCH_CTEST_ONLY: a ctest -R regex (only those gpu tests); STITCH_CTEST_JOBS: at once (default 4)
if ctest --test-dir "$build" -L gpu ${STITCH_CTEST_EXCLUDE:+-E "$STITCH_CTEST_EXCLUDE"} \
    ${STITCH_CTEST_ONLY:+-R "$STITCH_CTEST_ONLY"} \
    --output-on-failure -j "${STITCH_CTEST_JOBS:-4}" > "$out/ctest-gpu.log" 2>&1; then
  row "ctest -L gpu" "$(grep -E 'tests passed|tests failed' "$out/ctest-gpu.log" | tail -1)"
else
  row "ctest -L gpu" "FAILED: $(grep -E 'tests passed|tests failed' "$out/ctest-gpu.log" | tail -1)"
  grep -E "^\s*[0-9]+ - |Failed|\*\*\*" "$out/ctest-gpu.log" | tail -20
fi
fi

if want bench; then
  echo "== benchmarks"
  scripts/gpu_bench.sh "$build" "$out" | tee "$out/bench.txt"
fi

if want kbench; then
  echo "== kernel benches"
  for entry in ${STITCH_KBENCH:-conv_igemm_tf32x3_bench gemm_tf32x3_bench:--fused conv_depthwise_bench}; do
    name=${entry%%:*}; arg=""; [[ "$entry" == *:* ]] && arg=${entry#*:}
    binary="$build/tests/kernels/$name"
    if [ ! -x "$binary" ]; then row "$name" "not built (ninja $name)"; continue; fi
    timeout -k 5 "$(( $(left) > 30 ? $(left) - 20 : 10 ))" "$binary" $arg > "$out/$name.txt" 2>&1
    status=$?
    cat "$out/$name.txt"
    [ -n "${OUT:-}" ] && cp "$out/$name.txt" "$OUT/"
    row "$name $arg" "exit $status ($(grep -c . "$out/$name.txt") lines)"
  done
fi

if want sweep; then
echo "== adversarial sweep (every hack and near-miss through stitchcuda verify)"
python3 scripts/adversarial_sweep.py "$build" ${STITCH_SWEEP_ONLY:+--only "$STITCH_SWEEP_ONLY"} \
  > "$out/adversarial.txt" 2>&1
grep -v " ok " "$out/adversarial.txt" | tail -15
row "adversarial sweep" "$(tail -1 "$out/adversarial.txt")"
fi

if want profile; then
echo "== profile (CUPTI timeline + ncu) of the MLP program and its reference"
timeout -k 5 150 "$build/stitchcuda" profile tests/tasks/mlp.py tests/programs/mlp.cu --top 2 \
  --ncu-timeout 60 > "$out/profile-mlp.txt" 2>&1
row "profile mlp.cu" "exit $? ($(grep -c . "$out/profile-mlp.txt") lines)"
tail -25 "$out/profile-mlp.txt"
timeout -k 5 90 "$build/stitchcuda" profile tests/tasks/mlp.py --reference \
  > "$out/profile-mlp-ref.txt" 2>&1
row "profile --reference mlp" "exit $?"
tail -12 "$out/profile-mlp-ref.txt"
fi

if want generated; then
echo "== built-in Coder: generate + verify (tasks: \${STITCH_GENERATED_TASKS:-own plan_* tasks})"
gen_runs=$(mktemp -d)
tasks=${STITCH_GENERATED_TASKS:-$(ls tests/tasks/plan_*.py tests/tasks/mlp.py tests/tasks/softmax.py tests/tasks/layernorm.py)}
# One task: generate, verify, one summary line in $out/gen-NAME.line. STITCH_GENERATED_JOBS tasks
# run side by side (default 1; more is for correctness checks: timings then share the GPU).
generate_and_verify() {
  local task=$1 name; name=$(basename "$task" .py)
  if ! "$build/stitchcuda" generate "$task" --runs-dir "$gen_runs" --no-compile ${STITCH_GENERATED_TRACK:+--track "$STITCH_GENERATED_TRACK"} > "$out/gen-$name.txt" 2>&1; then
    printf '%-34s %s\n' "$name" "refused: $(tail -1 "$out/gen-$name.txt" | cut -c1-100)" > "$out/gen-$name.line"; return
  fi
  local program; program=$(sed -n 's/^generated \(.*program.cu\).*/\1/p' "$out/gen-$name.txt")
  "$build/stitchcuda" verify "$task" "$program" --runs-dir "$gen_runs" --json ${STITCH_VERIFY_ARGS:-} ${STITCH_GENERATED_TRACK:+--track "$STITCH_GENERATED_TRACK"} \
    ${STITCH_GENERATED_BASELINES:---no-baselines} > "$out/gen-$name.json" 2> "$out/gen-$name.err"
  python3 - "$name" "$out/gen-$name.json" > "$out/gen-$name.line" <<'PY'
import json, sys
name, path = sys.argv[1], sys.argv[2]
try:
    r = json.load(open(path))
except Exception as error:
    print(f"{name:<34} error    {error}"); sys.exit(0)
t = r.get("timing") or {}
stats = t.get("protocol" if t.get("speedup_basis") == "stream" else "synced") or {}
sp = r.get("speedups") or {}
f = lambda v: f"{v:.2f}x" if isinstance(v, (int, float)) else "-"
worst = max([o.get("relative_error_norm") or 0 for o in r.get("outputs") or []] or [0])
print(f"{name:<34} {str(r.get('outcome')):<8} {stats.get('median_ms', 0):.4f} ms  eager {f(sp.get('eager'))} "
      f"compile {f(sp.get('compile'))} ro {f(sp.get('reduce-overhead'))}  relerr {worst:.1e}  {r.get('reason', '')[:90]}")
PY
  # STITCH_GENERATED_PROFILE=1: also the program's CUPTI timeline (kernels by time, no ncu), kept
  # in $OUT/profile-NAME.txt — where a slow task's time goes.
  if [ -n "${STITCH_GENERATED_PROFILE:-}" ]; then
    timeout -k 5 180 "$build/stitchcuda" profile "$task" "$program" --no-ncu --runs-dir "$gen_runs" \
      > "$out/profile-$name.txt" 2>&1
    cp "$out/profile-$name.txt" "${OUT:-$out}/" 2>/dev/null
  fi
}
export -f generate_and_verify; export build out gen_runs
printf '%s\n' $tasks | xargs -P "${STITCH_GENERATED_JOBS:-1}" -I{} bash -c 'generate_and_verify "$@"' _ {}
passed=0; total=0
for task in $tasks; do
  name=$(basename "$task" .py); total=$((total + 1))
  cat "$out/gen-$name.line" 2>/dev/null || printf '%-34s %s\n' "$name" "no result"
  grep -q '"outcome": "passed"' "$out/gen-$name.json" 2>/dev/null && passed=$((passed + 1))
done
row "generated programs passing verify" "$passed / $total"
fi

if want kb; then
  echo "== built-in Coder on KernelBench (scripts/kb_coverage.sh ${STITCH_KB_DIRS:-.kb/level2 .kb/level3_mlp})"
  # Without STITCH_KB_DEADLINE, no verification starts later than a minute before this call's end
  # (so tests and kb fit in one call, tests first), and the baselines stop in time for them.
  STITCH_KB_DEADLINE=${STITCH_KB_DEADLINE:-$(( $(left) > 120 ? $(left) - 60 : 60 ))} \
    scripts/kb_coverage.sh "$build" "$out/kb" ${STITCH_KB_DIRS:-.kb/level2 .kb/level3_mlp} 2> "$out/kb.log"
  tail -25 "$out/kb.log"
  [ -f "$out/kb/coverage.md" ] && cp "$out/kb/coverage.md" "$out/kb/results.jsonl" "${OUT:-$out}/" 2>/dev/null
  row "kb coverage" "$(grep -c '"status": "passed"' "$out/kb/results.jsonl" 2>/dev/null) passed (see coverage.md)"
fi

if want loop; then
  # The loop on the GPU: (1) `run` with refine on a bundled task (before/after refine and spread);
  # (2) SIGKILL of the orchestrator mid-verification, then --resume; (3) a bench over
  # $STITCH_LOOP_DIRS (default ".kb/level2_covered .kb/level3_mlp": scripts/stage_kernelbench.sh
  # --covered stages them) on track $STITCH_LOOP_TRACK (default fp32) that stops taking tasks after
  # STITCH_BUDGET_S and resumes next call from .bench.tgz (carry it; the updated bench comes back
  # as $OUT/bench.tgz, without weights and libraries: the runs of tasks not yet recorded are left
  # out, so that a resume captures them afresh).
  # STITCH_LOOP_PARTS picks among "run kill bench" (default all three).
  parts=" ${STITCH_LOOP_PARTS:-run kill bench} "
  echo "== the loop: ${parts}"
  loop_runs=$(mktemp -d)
  if [[ "$parts" == *" run "* ]]; then
  timeout -s INT 240 "$build/stitchcuda" run ${STITCH_LOOP_TASK:-tests/tasks/mlp.py} --runs-dir "$loop_runs" \
    --no-main > "$out/loop-run.txt" 2>&1
  row "run ${STITCH_LOOP_TASK:-mlp.py}" "exit $? $(tail -1 "$out/loop-run.txt" | cut -c1-80)"
  grep -E "^(plan|attempt|refine|run )" "$out/loop-run.txt" | tail -14
  python3 - "$loop_runs" <<'PY' | tee -a "$out/loop-refine.txt"
import glob, json, sys
for state_path in glob.glob(sys.argv[1] + "/*/state.json"):
    s = json.load(open(state_path))
    first = next((a for a in s["attempts"] if a["kind"] == "integration" and a["result"]
                  and a["result"]["outcome"] == "passed"), None)
    best = next((a for a in s["attempts"] if a["number"] == s.get("best_attempt")), None)
    for name, a in (("before refine", first), ("after refine", best)):
        if a and a["result"].get("timing"):
            t = a["result"]["timing"]
            print(f"{name:<14} attempt {a['number']:02} {t['median_ms']:.4f} ms "
                  f"(p10 {t['p10_ms']:.4f}, p90 {t['p90_ms']:.4f})  {a['label']}")
PY
  best=$(ls -d "$loop_runs"/*/best 2>/dev/null | head -1)
  if [ -n "$best" ]; then  # the exported ModelNew through the hardened KernelBench judge
    timeout -s INT 200 "$build/stitchcuda" eval-kb "$(dirname "$best")/task.py" "$best/model_new.py" \
      > "$out/loop-eval-kb.txt" 2>&1
    row "eval-kb of best/model_new.py" "exit $? $(tail -1 "$out/loop-eval-kb.txt" | cut -c1-70)"
  fi
  fi
  if [[ "$parts" == *" kill "* ]]; then
  kill_runs=$(mktemp -d)
  "$build/stitchcuda" run tests/tasks/plan_gemm_bias_relu.py --runs-dir "$kill_runs" --no-main \
    > "$out/loop-kill.txt" 2>&1 &
  victim=$!
  for _ in $(seq 1 600); do
    grep -qs '"event":"verify.step"' "$kill_runs"/*/events.jsonl && break  # mid-verification
    sleep 0.2
  done
  kill -9 "$victim" 2>/dev/null; wait "$victim" 2>/dev/null
  killed_dir=$(ls -d "$kill_runs"/*/ | head -1)
  timeout -s INT 200 "$build/stitchcuda" run --resume "$killed_dir" --no-main > "$out/loop-resume.txt" 2>&1
  row "kill -9 mid-run, --resume" "exit $? $(grep -c interrupted "$killed_dir/state.json") interrupted; $(tail -1 "$out/loop-resume.txt" | cut -c1-60)"
  fi
  if [[ "$parts" == *" bench "* ]]; then
  rm -rf .bench && mkdir -p .bench
  [ -f .bench.tgz ] && tar -xzf .bench.tgz -C .bench
  if [ -f .bench/kb/tasks.json ]; then bench_args=(--resume .bench/kb); else bench_args=(${STITCH_LOOP_DIRS:-.kb/level2_covered .kb/level3_mlp} --out .bench/kb); fi
  # STITCH_LOOP_REFINE: refine candidates per task (default 2; 0: --no-refine). The deadline
  # leaves STITCH_LOOP_GRACE_S (default 120) for the last task and the packing.
  refine_args=(--refine-attempts "${STITCH_LOOP_REFINE:-2}")
  # STITCH_LOOP_TRACK: the precision track of a new bench (default fp32; a resumed bench keeps its own).
  [ -f .bench/kb/tasks.json ] || bench_args+=(--track "${STITCH_LOOP_TRACK:-fp32}")
  [ "${STITCH_LOOP_REFINE:-2}" = 0 ] && refine_args=(--no-refine)
  grace=${STITCH_LOOP_GRACE_S:-120}
  deadline_s=$(( $(left) - grace )); (( deadline_s < 30 )) && deadline_s=30
  timeout -s INT $(( $(left) - 15 )) "$build/stitchcuda" bench "${bench_args[@]}" \
    --deadline-minutes "$(python3 -c "print(round($deadline_s / 60, 2))")" --max-minutes 4 \
    --prepare-jobs "$(( $(nproc) > 2 ? $(nproc) - 2 : 1 ))" "${refine_args[@]}" > "$out/loop-bench.txt" 2> "$out/loop-bench.err"
  row "bench" "exit $? $(wc -l < .bench/kb/results.jsonl 2>/dev/null) of $(grep -c '"task"' .bench/kb/tasks.json 2>/dev/null) tasks"
  tail -30 "$out/loop-bench.txt"
  python3 - .bench/kb <<'PY'
import json, os, shutil, sys
bench = sys.argv[1]
done = set()
if os.path.exists(f"{bench}/results.jsonl"):
    done = {(r["level"], r["task"]) for r in map(json.loads, open(f"{bench}/results.jsonl"))}
for level in os.listdir(f"{bench}/runs") if os.path.isdir(f"{bench}/runs") else []:
    for run in os.listdir(f"{bench}/runs/{level}"):
        if not any(run.startswith(task + "-") for lvl, task in done if lvl == level):
            shutil.rmtree(f"{bench}/runs/{level}/{run}")
            claim = f"{bench}/claims/{level}__{run.rsplit('-', 2)[0]}"
            if os.path.exists(claim): os.remove(claim)
PY
  find .bench \( -name '*.so' -o -name '*.safetensors' \) -delete
  grep -E "^(preparing|prepared|timing the baselines|baselines)" "$out/loop-bench.err"
  [ -n "${OUT:-}" ] && tar -czf "$OUT/bench.tgz" -C .bench . && cp .bench/kb/report.html .bench/kb/table.md "$OUT/" 2>/dev/null
  fi
fi

echo
echo "== summary ($(date -u +%Y-%m-%dT%H:%MZ))"
printf '%s\n' "${table[@]}"
