#!/usr/bin/env bash
# Same-lease A/B of two builds over one task set, on the lent GPU machine: `bench --no-refine` with
# build A, then B, then A, then B ... (STITCH_AB_ROUNDS pairs, default 2), each into its own
# directory, then `bench --compare` of every (A, B) pair and of A's first run with A's last: the
# last line says how much the lease itself moves a time, which is what an A/B difference must beat.
# Two benches on different leases cannot tell a 1% change from the GPU's own drift; this can.
#
# Usage: scripts/ab_bench.sh A_BUILD A_HOME B_BUILD TASK_DIR...
#   A_HOME: the checkout A was built from (its kernels/, include/ and Python harness; exported as
#   STITCH_HOME for A's runs). B runs from this checkout.
#   Baselines come from STITCH_BASELINE_CACHE_DIR when set (both builds read the same cache, so
#   only the programs' own times are measured anew). Results and compares go to $OUT/ab (or a
#   scratch directory).
set -uo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 4 ]; then
  sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
a_build=$(realpath "$1"); a_home=$(realpath "$2"); b_build=$(realpath "$3"); shift 3
rounds=${STITCH_AB_ROUNDS:-2}
out=${OUT:-$(mktemp -d)}/ab
mkdir -p "$out"

bench() {  # bench NAME BUILD [env...]: one bench of the task set into $out/NAME
  local name=$1 build=$2; shift 2
  local started=$(date +%s)
  env "$@" "$build/stitchcuda" bench "${tasks[@]}" --out "$out/$name" --no-refine --max-minutes 4 \
    > "$out/$name.log" 2>&1
  echo "$name: exit $? in $(( $(date +%s) - started )) s, $(wc -l < "$out/$name/results.jsonl" 2>/dev/null) records"
}

tasks=("$@")
for round in $(seq 1 "$rounds"); do
  bench "a$round" "$a_build" STITCH_HOME="$a_home"
  bench "b$round" "$b_build"
done
for round in $(seq 1 "$rounds"); do
  "$b_build/stitchcuda" bench --compare "$out/a$round" "$out/b$round" > "$out/compare-a$round-b$round.txt" 2>&1
  echo "== A$round vs B$round: $(tail -1 "$out/compare-a$round-b$round.txt")"
done
if (( rounds > 1 )); then
  "$b_build/stitchcuda" bench --compare "$out/a1" "$out/a$rounds" > "$out/compare-a1-a$rounds.txt" 2>&1
  echo "== A1 vs A$rounds (the lease's own drift): $(tail -1 "$out/compare-a1-a$rounds.txt")"
fi
# One line per task: B/A time ratio of each round (>1: B slower).
python3 - "$out" "$rounds" <<'PY'
import json, sys
out, rounds = sys.argv[1], int(sys.argv[2])
def times(name):
    result = {}
    try:
        for line in open(f"{out}/{name}/results.jsonl"):
            record = json.loads(line)
            if record.get("ours_ms"): result[f'{record["level"]}/{record["task"]}'] = record["ours_ms"]
    except OSError:
        pass
    return result
runs = {f"{side}{r}": times(f"{side}{r}") for side in "ab" for r in range(1, rounds + 1)}
print(f"{'task':<60} " + " ".join(f"b{r}/a{r}" for r in range(1, rounds + 1)) + "  a1/a%d" % rounds)
for task in sorted(runs["a1"]):
    cells = []
    for r in range(1, rounds + 1):
        a, b = runs[f"a{r}"].get(task), runs[f"b{r}"].get(task)
        cells.append(f"{b / a:6.3f}" if a and b else "     -")
    a_last = runs[f"a{rounds}"].get(task)
    cells.append(f"{a_last / runs['a1'][task]:6.3f}" if a_last else "     -")
    print(f"{task[-60:]:<60} " + " ".join(cells))
PY
