"""`python -m stitch_harness <subcommand>`: one table of subcommands, each in its own module.

A subcommand module defines `add_arguments(parser)` and `run(args) -> int` (the exit code), and
optionally DESCRIPTION (its --help text). Add a row to SUBCOMMANDS to add one. Every module is
imported to build the parser, so it must not import torch at module level: it imports what it needs
inside run(), and --help stays instant.
"""
import argparse
import importlib
import sys

# (name, module, one-line help)
SUBCOMMANDS = (
    ("capture", "stitch_harness.capture_cmd",
     "capture one KernelBench task file into DIR (graph.json, weights, reference, capture.json)"),
    ("capture-batch", "stitch_harness.capture_batch",
     "capture many task files in forked children, one JSON line per task on stdout"),
    ("subgraph", "stitch_harness.subgraph",
     "evaluate a subtask's subgraph (graph.json) on given inputs (subtask-level coding)"),
    ("dataset-parquet", "stitch_harness.dataset_parquet",
     "convert `stitchcuda dataset` JSONL records to Parquet in verl's nested columns (pyarrow)"),
)


def build_parser():
    parser = argparse.ArgumentParser(
        prog="python -m stitch_harness",
        description="StitchCUDA's PyTorch harness. Exit codes: 0 success, 1 failure, 2 bad usage "
                    "or a file that is not a KernelBench task.")
    subparsers = parser.add_subparsers(dest="subcommand", metavar="SUBCOMMAND")
    for name, module_name, help_text in SUBCOMMANDS:
        module = importlib.import_module(module_name)
        sub = subparsers.add_parser(name, help=help_text, description=getattr(module, "DESCRIPTION", help_text),
                                    formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(sub)
        sub.set_defaults(run=module.run)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "subcommand", None):
        parser.print_help(sys.stderr)
        return 2
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
