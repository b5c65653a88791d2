"""`python -m stitch_harness dataset-parquet IN.jsonl OUT.parquet`: the records `stitchcuda dataset`
wrote (one JSON object a line, verl's columns) as Parquet with a nested schema: prompt as
list<struct<role, content>>, reward_model and extra_info as structs (docs/dataset.md)."""

DESCRIPTION = __doc__

import json


def schema():
    import pyarrow as pa
    message = pa.struct([("role", pa.string()), ("content", pa.string())])
    return pa.schema([
        ("data_source", pa.string()),
        ("prompt", pa.list_(message)),
        ("ability", pa.string()),
        ("reward_model", pa.struct([("style", pa.string()), ("ground_truth", pa.string())])),
        ("extra_info", pa.struct([
            ("task_id", pa.string()), ("task_path", pa.string()), ("skill", pa.string()),
            ("attempt", pa.int64()), ("run_dir", pa.string()),
            ("reference_outcome", pa.string()), ("prompt_hash", pa.string())])),
    ])


def add_arguments(parser):
    parser.add_argument("jsonl", help="the records, one JSON object a line")
    parser.add_argument("out", help="the .parquet file to write")


def run(args):
    import pyarrow as pa
    import pyarrow.parquet as pq
    with open(args.jsonl, encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    table = pa.Table.from_pylist(records, schema=schema())
    pq.write_table(table, args.out)
    return 0
