#!/usr/bin/env bash
# `stitchcuda dataset` on the fixture run directories: train/val Parquet read back with pyarrow —
# verl's columns and nested types, the skills, dedup of a repeated run, no task in both splits;
# bad input (no run directory, no --out) exit code 2.
set -u
bin=$1; data=$2
py=${STITCH_PYTHON:-$(dirname "$bin")/../.venv/bin/python}
command -v "$py" >/dev/null || py=python3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
"$bin" dataset "$data/run_relu" "$data/run_gemm" "$data/run_relu" --out "$tmp/ds" --val-fraction 0.5 \
  >"$tmp/out" 2>&1 || { echo "FAIL: dataset exit $?"; cat "$tmp/out"; exit 1; }
cat "$tmp/out"
grep -q "4 samples" "$tmp/out" && grep -q "2 duplicates" "$tmp/out" \
  || { echo "FAIL: summary"; fail=1; }
"$py" - "$tmp/ds" <<'PY' || fail=1
import sys
import pyarrow as pa
import pyarrow.parquet as pq
out = sys.argv[1]
tables = {split: pq.read_table(f"{out}/{split}.parquet") for split in ("train", "val")}
for split, table in tables.items():
    assert table.column_names == ["data_source", "prompt", "ability", "reward_model", "extra_info"], table.column_names
    assert table.schema.field("prompt").type == pa.list_(pa.struct([("role", pa.string()), ("content", pa.string())]))
    assert pa.types.is_struct(table.schema.field("reward_model").type)
    assert pa.types.is_struct(table.schema.field("extra_info").type)
rows = [row for table in tables.values() for row in table.to_pylist()]
assert len(rows) == 4, len(rows)
assert sorted(r["data_source"] for r in rows) == ["stitchcuda/generate"] * 2 + ["stitchcuda/improve"] * 2
for r in rows:
    assert r["ability"] == "cuda"
    assert [m["role"] for m in r["prompt"]] == ["system", "user"]
    assert r["reward_model"] == {"style": "rule", "ground_truth": r["extra_info"]["task_id"]}
    assert r["extra_info"]["skill"] in ("generate", "improve") and r["extra_info"]["attempt"] >= 1
    assert r["extra_info"]["task_path"].endswith("/task.py")
assert len({r["extra_info"]["prompt_hash"] for r in rows}) == 4
tasks = {split: {r["reward_model"]["ground_truth"] for r in table.to_pylist()} for split, table in tables.items()}
assert not (tasks["train"] & tasks["val"]), tasks
assert tasks["train"] | tasks["val"] == {"relu", "gemm"}, tasks
print("ok   parquet read back:", {s: t.num_rows for s, t in tables.items()}, tasks)
PY
"$bin" dataset "$tmp/none" --out "$tmp/x" >/dev/null 2>"$tmp/err"; rc=$?
[ $rc = 2 ] && grep -q "task.py" "$tmp/err" || { echo "FAIL no run dir: exit $rc"; cat "$tmp/err"; fail=1; }
"$bin" dataset "$data/run_relu" >/dev/null 2>&1; rc=$?
[ $rc = 2 ] || { echo "FAIL no --out: exit $rc"; fail=1; }
exit $fail
