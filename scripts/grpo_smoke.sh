#!/usr/bin/env bash
# The GRPO smoke run (issue 18 item 6), one device call: TRL's GRPOTrainer on the small policy
# (.smoke/policy), prompts of `stitchcuda dataset` (.smoke/ds), rewards from the real
# `stitchcuda serve` verifying every sampled program on the same GPU (task scale_shift_relu of
# tests/tasks). Prints the per-step reward mean and within-group variance, then a short table.
#
# Here (CPU machine):  scripts/build_device.sh && integrations/trl/prepare_smoke.sh
# There, with the device tool: carry ["build-device", ".whl", ".smoke"], command
#   "scripts/grpo_smoke.sh build-device"
# Rehearsal on the CPU: scripts/grpo_smoke.sh build --fake-scorer --cpu
#
# Knobs (environment): STEPS (4), PROMPTS per step (2), GENERATIONS per prompt (4),
# MAX_COMPLETION (900 tokens), LR (1e-4), TEMPERATURE (1.0), POLICY (.smoke/policy), DATASET
# (.smoke/ds), STITCH_BUDGET_S (450: the training is stopped past it), STITCH_VERIFY_ARGS (extra
# `verify` flags, e.g. "--insecure-sandbox LAYER"), STITCH_TRL_PYTHON (default python3).
# Wheels in .whl/ are installed with --no-deps into a scratch folder on PYTHONPATH (the
# machine's packages stay as they are); python3 is the machine's (torch with CUDA).
# Logs (serve, training, metrics) go to $OUT/grpo-smoke/ when OUT is set.
set -uo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-device}
shift || true
fake=0 cpu=0
for arg in "$@"; do
  case "$arg" in
    --fake-scorer) fake=1 ;;
    --cpu) cpu=1 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "error: unknown argument '$arg' (see --help)" >&2; exit 2 ;;
  esac
done
steps=${STEPS:-4} prompts=${PROMPTS:-2} generations=${GENERATIONS:-4}
policy=${POLICY:-.smoke/policy} dataset=${DATASET:-.smoke/ds}
started=$(date +%s)
budget=${STITCH_BUDGET_S:-450}
logs=${OUT:+$OUT/grpo-smoke}
logs=${logs:-$(mktemp -d /tmp/grpo-smoke.XXXXXX)}
mkdir -p "$logs"
scratch=$(mktemp -d /tmp/grpo-smoke-work.XXXXXX)
serve_pid=""
finish() {
  if [ -n "$serve_pid" ]; then kill -TERM "$serve_pid" 2>/dev/null; wait "$serve_pid" 2>/dev/null; fi
  cp "$scratch/serve.log" "$logs/" 2>/dev/null
  rm -rf "$scratch"
}
trap finish EXIT
die() { echo "grpo-smoke: error: $*" >&2; exit 1; }
export PATH=/usr/local/cuda/bin:$PATH

[ -x "$build/stitchcuda" ] || die "$build/stitchcuda missing (scripts/build_device.sh, carried)"
[ -f "$dataset/train.parquet" ] && [ -f "$policy/config.json" ] ||
  die "$dataset or $policy missing: run integrations/trl/prepare_smoke.sh here and carry .smoke"
# The carried build names the checkout, and itself, by the paths it was configured at.
configured=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt" 2>/dev/null)
if [ -n "$configured" ] && [ "$configured" != "$(pwd)" ] && [ ! -e "$configured" ]; then
  mkdir -p "$(dirname "$configured")" && ln -s "$(pwd)" "$configured"
fi
built_at=$(sed -n 's/^CMAKE_CACHEFILE_DIR:INTERNAL=//p' "$build/CMakeCache.txt" 2>/dev/null)
if [ -n "$built_at" ] && [ ! -e "$built_at" ]; then
  mkdir -p "$(dirname "$built_at")" && ln -s "$(realpath "$build")" "$built_at"
fi
# Shared libraries the machine lacks (cpp-httplib, ...), carried by build_device.sh.
[ -d "$build/carried-libs" ] && export LD_LIBRARY_PATH=$(realpath "$build/carried-libs")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

echo "== stitchcuda serve ($([ $fake = 1 ] && echo fake scorer || echo real verifier))"
export STITCH_SERVE_TOKEN=grpo-smoke-$$
serve_args=(--tasks-dir tests/tasks --port 0 --port-file "$scratch/port" --state-dir "$scratch/state"
            --runs-dir "$scratch/runs" --timeout 300)
[ $fake = 1 ] && serve_args+=(--fake-scorer)
for word in ${STITCH_VERIFY_ARGS:-}; do serve_args+=("--verify-arg=$word"); done
"$build/stitchcuda" serve "${serve_args[@]}" >"$scratch/serve.log" 2>&1 &
serve_pid=$!
for _ in $(seq 300); do [ -s "$scratch/port" ] && break; sleep 0.1; done
[ -s "$scratch/port" ] || { tail -20 "$scratch/serve.log"; die "serve did not start"; }
url=http://127.0.0.1:$(cat "$scratch/port")

python=${STITCH_TRL_PYTHON:-python3}
# The wheels go on the trainer's PYTHONPATH only: the service's harness keeps the machine's packages.
trainer_path=${PYTHONPATH:-}
if ! "$python" -c "import trl, datasets" 2>/dev/null; then
  ls .whl/*.whl >/dev/null 2>&1 || die "$python lacks trl/datasets and .whl/ holds no wheels (prepare_smoke.sh)"
  echo "== installing $(ls .whl/*.whl | wc -l) carried wheels (--no-deps, into a scratch folder)"
  "$python" -m pip install -q --no-index --no-deps --target "$scratch/site" .whl/*.whl ||
    die "installing the carried wheels failed"
  trainer_path=$scratch/site${trainer_path:+:$trainer_path}
fi
PYTHONPATH=$trainer_path "$python" -c 'import torch, transformers, trl, datasets
print("torch", torch.__version__, "cuda", torch.cuda.is_available(), "| transformers", transformers.__version__,
      "| trl", trl.__version__, "| datasets", datasets.__version__)' || die "trl/datasets do not import"

echo "== GRPO: $steps steps x $prompts prompts x $generations generations"
left=$(( budget - ($(date +%s) - started) ))
[ "$left" -gt 60 ] || die "no time left for training (STITCH_BUDGET_S=$budget)"
train_args=(--dataset "$dataset" --model "$policy" --serve-url "$url" --output-dir "$scratch/grpo"
            --run-id "smoke-$$" --num-generations "$generations" --prompts-per-step "$prompts"
            --max-steps "$steps" --repeat-dataset "$(( steps * prompts ))"
            --max-completion-length "${MAX_COMPLETION:-900}" --learning-rate "${LR:-1e-4}"
            --temperature "${TEMPERATURE:-1.0}" --dtype float32 --share-identical
            --request-timeout 300 --no-save --metrics-file "$logs/metrics.jsonl")
[ $cpu = 1 ] && train_args+=(--cpu)
rm -f "$logs/metrics.jsonl"
PYTHONPATH=$trainer_path timeout "$left" "$python" integrations/trl/train_grpo.py "${train_args[@]}" >"$logs/train.log" 2>&1
rc=$?
tr "\r" "\n" < "$logs/train.log" | grep -aE "^step [0-9]+:|^done"
[ $rc = 0 ] || { tail -25 "$logs/train.log"; echo "grpo-smoke: training exit $rc (124: over the budget)"; }
python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())' \
  "$url/metrics" >"$logs/serve-metrics.txt" 2>/dev/null

echo "== summary"
python3 - "$logs/metrics.jsonl" "$logs/serve-metrics.txt" "$generations" <<'PY'
import json, os, re, sys
path, metrics_path, group = sys.argv[1], sys.argv[2], int(sys.argv[3])
lines = [json.loads(l) for l in open(path)] if os.path.exists(path) else []
print(f"{'step':>4} {'completions':>11} {'reward mean':>11} {'within-group var':>16} {'correct':>7} "
      f"{'compiled':>8} {'no program':>10} {'TRL reward':>10} {'s':>6}")
for l in lines:
    print(f"{l['step']:>4} {l['completions']:>11} {l['reward_mean']:>11.3f} {l['within_group_variance']:>16.3f} "
          f"{l['correct_rate']:>7.2f} {l['compiled_rate']:>8.2f} {l['no_program_rate']:>10.2f} "
          f"{l['trl'].get('rewards/stitchcuda/mean', float('nan')):>10.3f} {l['elapsed_s']:>6.0f}")
text = open(metrics_path).read() if os.path.exists(metrics_path) else ""
def counter(pattern):
    return sum(int(float(v)) for v in re.findall(pattern, text, re.M))
accepted = counter(r"^stitchcuda_serve_accepted_total (\S+)")
done = counter(r'^stitchcuda_serve_completed_total\{status="done"\} (\S+)')
failed = counter(r"^stitchcuda_serve_failed_total (\S+)")
print(f"service: {accepted} requests accepted (distinct programs), {done} scored, {failed} failed")
print(f"grpo smoke: {len(lines)} steps logged with rewards from the service")
sys.exit(0 if lines else 1)
PY
summary=$?
[ $rc = 0 ] && [ $summary = 0 ]
