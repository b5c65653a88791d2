#!/usr/bin/env bash
# Called by scripts/gpu_check.sh on the GPU machine: verifies the hand-written test programs against
# their tasks end to end (`stitchcuda verify --json`) and prints one line per program: outcome,
# median (synced), speedups against the baselines measured in the same run, and the wall-time
# breakdown of the verification.
set -uo pipefail
build=$1; out=$2
runs=$(mktemp -d)
printf '%-18s %-8s %10s %9s %9s %9s  %s\n' program outcome median_ms eager compile ro steps
for name in scale_shift_relu mlp conv_bn_relu; do
  json="$out/verify-$name.json"
  "$build/stitchcuda" verify "tests/tasks/$name.py" "tests/programs/$name.cu" --runs-dir "$runs" \
    --json > "$json" 2> "$out/verify-$name.err"
  python3 - "$name" "$json" <<'PY'
import json, sys
name, path = sys.argv[1], sys.argv[2]
try:
    report = json.load(open(path))
except Exception as error:  # the command failed before writing JSON: say so on the row
    print(f"{name:<18} {'error':<8} {'-':>10} {'-':>9} {'-':>9} {'-':>9}  {error}")
    sys.exit(0)
timing = (report.get("timing") or {}).get("synced") or {}
speedups = report.get("speedups") or {}
fmt = lambda v: f"{v:.2f}x" if isinstance(v, (int, float)) else "-"
steps = " ".join(f"{s['name']}={s['seconds']:.1f}s" for s in report.get("steps", []))
median = timing.get("median_ms")
print(f"{name:<18} {str(report.get('outcome')):<8} {median if median is not None else '-':>10} "
      f"{fmt(speedups.get('eager')):>9} {fmt(speedups.get('compile')):>9} "
      f"{fmt(speedups.get('reduce-overhead')):>9}  {steps}")
PY
done
