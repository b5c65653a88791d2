#!/usr/bin/env bash
# Called by scripts/gpu_check.sh on the GPU machine: verifies the hand-written test programs against
# their tasks end to end (`stitchcuda verify --json`) and prints one line per program: outcome,
# median (the reported basis: caller's stream unless work ran outside it), speedups against the
# baselines measured in the same run, and the wall-time breakdown of the verification. Then the
# same verification again with the baselines and the build cached (the ≤ 20 s figure), and the
# eager baseline's reported median against a plain CUDA-event median taken in the same process.
set -uo pipefail
build=$1; out=$2
runs=$(mktemp -d)
cache="$HOME/.cache/stitchcuda/baselines"  # judge_baseline.DEFAULT_CACHE_DIR
summarize() {  # name json
  python3 - "$1" "$2" <<'PY'
import json, sys
name, path = sys.argv[1], sys.argv[2]
try:
    report = json.load(open(path))
except Exception as error:  # the command failed before writing JSON: say so on the row
    print(f"{name:<22} {'error':<8} {'-':>9} {'-':>8} {'-':>8} {'-':>8}  {error}")
    sys.exit(0)
timing = report.get("timing") or {}
basis = timing.get("speedup_basis", "synced")
stats = timing.get("protocol" if basis == "stream" else "synced") or {}
speedups = report.get("speedups") or {}
fmt = lambda v: f"{v:.2f}x" if isinstance(v, (int, float)) else "-"
steps = " ".join(f"{s['name']}={s['seconds']:.1f}s" for s in report.get("steps", []))
median = stats.get("median_ms")
print(f"{name:<22} {str(report.get('outcome')):<8} {median if median is None else f'{median:.4f}':>9} "
      f"{fmt(speedups.get('eager')):>8} {fmt(speedups.get('compile')):>8} "
      f"{fmt(speedups.get('reduce-overhead')):>8}  {basis} {steps}")
PY
}
printf '%-22s %-8s %9s %8s %8s %8s  %s\n' program outcome median_ms eager compile ro "basis steps"
for name in scale_shift_relu mlp conv_bn_relu; do
  json="$out/verify-$name.json"
  "$build/stitchcuda" verify "tests/tasks/$name.py" "tests/programs/$name.cu" --runs-dir "$runs" --json > "$json" 2> "$out/verify-$name.err"
  summarize "$name" "$json"
done
for name in mlp conv_bn_relu; do
  json="$out/verify-$name-again.json"
  started=$(date +%s.%N)
  "$build/stitchcuda" verify "tests/tasks/$name.py" "tests/programs/$name.cu" --runs-dir "$runs" --json > "$json" 2> "$out/verify-$name-again.err"
  ended=$(date +%s.%N)
  summarize "$name(cached,$(python3 -c "print(f'{$ended-$started:.1f}s')"))" "$json"
done
echo
echo "baselines: reported median vs plain CUDA-event medians (same process; flushed = the check)"
python3 - "$cache" <<'PY'
import glob, json, os, sys
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    doc = json.load(open(path))
    if doc.get("version", 0) < 3:  # an older method's cached timings
        continue
    for mode, entry in sorted(doc.get("modes", {}).items()):
        if "timing" not in entry:
            continue
        ours = entry["timing"]["stats"]["median_ms"]
        agreement = entry.get("method_agreement") or {}
        warm = entry.get("plain_events", {}).get("median_ms")
        ratio = agreement.get("ratio")
        print(f"  {os.path.basename(path)[:24]:<24} {mode:<16} reported {ours:.4f} ms  "
              f"interleaved: protocol {agreement.get('protocol_median_ms', 0):.4f} ms vs plain "
              f"events+flush {agreement.get('plain_flushed_median_ms', 0):.4f} ms, ratio "
              f"{ratio if ratio is None else f'{ratio:.3f}'}  (warm-L2 plain {warm or 0:.4f} ms)"
              f"  basis {entry['timing'].get('basis', '?')}")
PY
