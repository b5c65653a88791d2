"""`capture TASK.py --out DIR`: capture one KernelBench task (see capture.py for what is written)."""
import os
import sys

DESCRIPTION = """Capture one KernelBench-format task file.

Writes into DIR: graph.json (docs/graph-format.md), weights.safetensors, reference/ (inputs, outputs
and reference.json, when inputs and outputs fit in --reference-limit-mb) and capture.json (status,
per-stage seconds, node count). On failure DIR/capture.json says {"status": "failed", "category",
"message", "traceback"}, no graph/weights/reference are left, and one line goes to stderr.
Exit code: 0 captured, 2 not a KernelBench task, 1 any other failure."""


def add_arguments(parser):
    parser.add_argument("task", metavar="TASK.py", help="KernelBench-format file (Model, get_inputs, get_init_inputs)")
    parser.add_argument("--out", required=True, metavar="DIR", help="output directory (created)")
    add_capture_options(parser)


def add_capture_options(parser):
    """The options that shape one capture; shared with capture-batch."""
    parser.add_argument("--inference", action="store_true",
                        help="call model.eval() (default: training mode, as KernelBench builds models)")
    parser.add_argument("--seed", type=int, default=42, help="seed for init inputs, weights and inputs (42)")
    parser.add_argument("--reference-limit-mb", type=float, default=256.0, metavar="MB",
                        help="write reference/ only when inputs+outputs take at most MB MiB (256)")
    parser.add_argument("--reference-seconds", type=float, default=20.0, metavar="S",
                        help="on the CPU, give up the reference run after S seconds and record why "
                             "(the judge computes references on the GPU anyway); 0: no limit (20)")
    parser.add_argument("--no-reference", action="store_true", help="do not run the reference")
    parser.add_argument("--device", default="auto",
                        help="device for the reference run: auto (cuda when available, else cpu), cpu, cuda")


def options_from(args):
    from .capture import Options

    return Options(seed=args.seed, inference=args.inference, reference_limit_mb=args.reference_limit_mb,
                   reference=not args.no_reference, device=args.device,
                   reference_seconds=args.reference_seconds)


def error_line(result):
    return f"error: {os.path.basename(result['file'])}: {result['message']}"


def run(args):
    from .runtime import import_torch

    import_torch()
    from .capture import run_capture
    from .errors import exit_code

    result = run_capture(args.task, args.out, options_from(args))
    if result["status"] != "captured":
        print(error_line(result), file=sys.stderr)
        return exit_code(result["category"])
    print(f"captured {os.path.basename(args.task)}: {result['nodes']} nodes, reference {result['reference']}, "
          f"{result['seconds']['total']:.2f} s -> {args.out}")
    return 0
