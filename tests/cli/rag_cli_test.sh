#!/usr/bin/env bash
# `stitchcuda rag` from the outside over the fixture corpus (tests/rag/corpus, --no-defaults):
# index, re-index unchanged, query with citations (text and --json), eval with a question file and
# --min-recall, and bad input (no index, a missing path) giving exit code 2.
set -u
bin=$1; data=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
expect() {  # expect CODE DESCRIPTION -- command...
  local want=$1 what=$2; shift 3
  "$@" >"$tmp/out" 2>"$tmp/err"; local got=$?
  if [ "$got" != "$want" ]; then echo "FAIL $what: exit $got, want $want"; cat "$tmp/err" "$tmp/out"; fail=1; return; fi
  echo "ok   $what"
}
index=$tmp/rag.sqlite
cp -r "$data/rag/corpus" "$tmp/docs"
expect 0 "index the corpus" -- "$bin" rag index --no-defaults --index "$index" "$tmp/docs"
grep -q "4 added" "$tmp/out" || { echo "FAIL index: not 4 files added"; cat "$tmp/out"; fail=1; }
expect 0 "index again" -- "$bin" rag index --no-defaults --index "$index" "$tmp/docs"
grep -q "4 unchanged" "$tmp/out" || { echo "FAIL re-index: not 4 unchanged"; cat "$tmp/out"; fail=1; }
expect 0 "query" -- "$bin" rag query --index "$index" -k 2 "miniblasMatmul"
grep -q "mini_blas.h:1-" "$tmp/out" || { echo "FAIL query: no mini_blas.h citation"; cat "$tmp/out"; fail=1; }
grep -q "hits in .* ms" "$tmp/out" || { echo "FAIL query: no time"; fail=1; }
expect 0 "query --json" -- "$bin" rag query --index "$index" --json "tensor memory accelerator"
python3 -c '
import json, sys
doc = json.load(open(sys.argv[1]))
hit = doc["hits"][0]
assert hit["citation"].endswith("guide.md:1-8"), hit["citation"]
assert doc["ranking"] == "bm25" and doc["ms"] >= 0
' "$tmp/out" || { echo "FAIL query --json"; fail=1; }
cat > "$tmp/questions.json" <<'JSON'
{"format": "stitchcuda.rag_eval", "version": 1, "questions": [
 {"id": 1, "category": "api", "question": "miniblasCreate", "path": "mini_blas.h", "identifier": "miniblasCreate"},
 {"id": 2, "category": "enum", "question": "epilogue relu bias", "path": "mini_blas.h", "identifier": "MINIBLAS_EPILOGUE_RELU_BIAS"}]}
JSON
expect 0 "eval" -- "$bin" rag eval --index "$index" --questions "$tmp/questions.json" --min-recall 1
grep -q "recall@5 1.000" "$tmp/out" || { echo "FAIL eval: recall"; cat "$tmp/out"; fail=1; }
expect 2 "no index" -- "$bin" rag query --index "$tmp/none.sqlite" "x"
grep -q "stitchcuda rag index" "$tmp/err" || { echo "FAIL no index: message"; fail=1; }
expect 2 "a missing path" -- "$bin" rag index --no-defaults --index "$index" "$tmp/nothing"
expect 2 "no searchable word" -- "$bin" rag query --index "$index" "the of"
exit $fail
