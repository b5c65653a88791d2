#!/bin/bash
# Recaptures the Planner's golden-test fixtures: every tests/tasks/plan_*.py into
# tests/plan/data/<task>.graph.json (graph only; weights and references are not needed to plan).
# Then rewrite the golden plans: STITCH_UPDATE_GOLDEN=1 ctest --test-dir <build> -R plan_golden
# Usage: tests/plan/regen_fixtures.sh [python]   (default: .venv/bin/python of the checkout)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
python="${1:-$root/.venv/bin/python}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$root/python"
"$python" -m stitch_harness capture-batch --out "$work" --jobs 2 --no-reference \
  "$root"/tests/tasks/plan_*.py > "$work/results.jsonl" || true
for task in "$root"/tests/tasks/plan_*.py; do
  name="$(basename "$task" .py)"
  if [[ -f "$work/$name/graph.json" ]]; then
    cp "$work/$name/graph.json" "$root/tests/plan/data/$name.graph.json"
    echo "captured $name"
  else
    echo "FAILED $name: $(grep "\"$name\"" "$work/results.jsonl" || true)" >&2
    exit 1
  fi
done
