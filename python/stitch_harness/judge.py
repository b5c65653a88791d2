"""`python -m stitch_harness.judge`: the judge process of docs/verify-protocol.md.

Subcommands (one table, like the package's __main__):
  serve          hold the reference, export IPC slots, compare the runner's outputs (judge_serve)
  baseline       time eager / torch.compile / reduce-overhead, each in a fresh process, cached
  baseline-mode  one mode in this process (what `baseline` runs in its children)
  baseline-batch baselines of many tasks: parallel torch.compile warm-up, then serial timing
  baseline-batch-mode  one mode for many tasks in this process (what `baseline-batch` runs)
Exit codes: 0 success, 1 failure, 2 bad usage.
"""

from __future__ import annotations

import argparse
import sys

from .runtime import quiet_torch


def _add_task_arguments(parser, with_device=True):
    parser.add_argument("--graph-dir", required=True, metavar="DIR",
                        help="capture directory (graph.json, weights.safetensors)")
    parser.add_argument("--task", metavar="TASK.py",
                        help="the task file (default: task.py beside graph.json, or the file "
                             "capture.json names)")
    parser.add_argument("--track", default="fp32", choices=("fp32", "tf32", "bf16"))
    if with_device:
        parser.add_argument("--device", default="cuda", help="device (cuda, cuda:N, cpu)")


def add_serve_arguments(parser):
    _add_task_arguments(parser)
    parser.add_argument("--work-dir", required=True, metavar="W", help="slots.json goes here")
    parser.add_argument("--sets", type=int, default=3, help="correctness input sets (3)")
    parser.add_argument("--timing-sets", type=int, default=4,
                        help="timing sets the runner should rotate (recorded in slots.json)")
    parser.add_argument("--spot-slots", type=int, default=2,
                        help="slots for outputs of timed iterations (2)")
    parser.add_argument("--fake-ipc", action="store_true",
                        help="tests only: CPU tensors with made-up handles instead of CUDA IPC")


def run_serve(args) -> int:
    import torch

    from .ipc import CudaIpcExporter, FakeIpcExporter
    from .judge_serve import JudgeSession, ProtocolWriter, run_serve as serve
    from .judge_task import JudgeTask
    from .judge_tracks import get_track

    writer = ProtocolWriter()
    try:
        device = torch.device(args.device)
        if device.type == "cuda" and device.index is None:
            device = torch.device("cuda", torch.cuda.current_device())
        exporter = FakeIpcExporter(device) if args.fake_ipc else CudaIpcExporter(device)
        task = JudgeTask(args.graph_dir, device, args.task)
        session = JudgeSession(task, get_track(args.track), exporter, sets=args.sets,
                               spot_slots=args.spot_slots, timing_sets=args.timing_sets)
    except Exception as error:
        writer.send({"event": "error", "message": f"setup failed: {type(error).__name__}: {error}"})
        return 1
    return serve(session, args.work_dir, writer, sys.stdin)


def add_baseline_arguments(parser):
    from .judge_baseline import DEFAULT_CACHE_DIR

    _add_task_arguments(parser)
    parser.add_argument("--out", required=True, metavar="B.json")
    parser.add_argument("--modes", default="eager,compile,reduce-overhead",
                        help="comma-separated: eager, compile, reduce-overhead")
    parser.add_argument("--info-modes", default="eager",
                        help="modes also timed with PyTorch's default precision flags, for "
                             "information ('' for none)")
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--timing-sets", type=int, default=4)
    parser.add_argument("--cache-dir", default=DEFAULT_CACHE_DIR)
    parser.add_argument("--no-cache", action="store_true")
    parser.add_argument("--cache-only", action="store_true",
                        help="time nothing: write what the cache holds, with the modes it lacks "
                             "under \"missing\"")
    parser.add_argument("--child-timeout", type=float, default=1800.0, metavar="S",
                        help="seconds allowed per mode's process (1800)")


def _split_modes(text):
    from .judge_baseline import MODES

    modes = tuple(m for m in (part.strip() for part in text.split(",")) if m)
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        raise SystemExit(f"error: unknown modes {unknown} (known: {', '.join(MODES)})")
    return modes


def run_baseline(args) -> int:
    from .judge_baseline import BaselineOptions, run_baseline as baseline

    options = BaselineOptions(graph_dir=args.graph_dir, track=args.track,
                              modes=_split_modes(args.modes),
                              info_modes=_split_modes(args.info_modes), iters=args.iters,
                              warmup=args.warmup, timing_sets=args.timing_sets,
                              device=args.device, task=args.task,
                              cache_dir=None if args.no_cache else args.cache_dir,
                              child_timeout_s=args.child_timeout, cache_only=args.cache_only)
    result = baseline(options, args.out, log=lambda line: print(line, file=sys.stderr))
    if args.cache_only:
        missing = result["missing"]
        print(f"cache: {'lacks ' + ', '.join(missing) if missing else 'complete'}",
              file=sys.stderr)
        return 0
    failed = [m for m, e in result["modes"].items() if "error" in e]
    for mode, entry in result["modes"].items():
        if "error" in entry:
            print(f"{mode}: error: {entry['error']}", file=sys.stderr)
        else:
            stats = entry["timing"]["stats"]
            print(f"{mode}: median {stats['median_ms']:.4f} ms (p10 {stats['p10_ms']:.4f}, "
                  f"p90 {stats['p90_ms']:.4f}), compile {entry['compile_s']:.1f} s",
                  file=sys.stderr)
    return 1 if failed else 0


def add_baseline_mode_arguments(parser):
    _add_task_arguments(parser)
    parser.add_argument("--mode", required=True, choices=("eager", "compile", "reduce-overhead"))
    parser.add_argument("--flags", default="track", choices=("track", "pytorch-default"))
    parser.add_argument("--out", required=True)
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--timing-sets", type=int, default=4)


def run_baseline_mode(args) -> int:
    from . import files
    from .judge_baseline import time_one_mode

    result = time_one_mode(args.graph_dir, args.track, args.mode, args.flags, args.iters,
                           args.warmup, args.timing_sets, args.device, args.task)
    files.write_json(args.out, result)
    return 0


def add_baseline_batch_arguments(parser):
    from .judge_baseline import DEFAULT_CACHE_DIR

    parser.add_argument("--graph-dir", action="append", required=True, metavar="DIR",
                        dest="graph_dirs", help="a capture directory (repeat for each task)")
    parser.add_argument("--out-dir", required=True, metavar="D",
                        help="one <task name>.json per task, as `baseline --out` writes it")
    parser.add_argument("--track", default="fp32", choices=("fp32", "tf32", "bf16"))
    parser.add_argument("--device", default="cuda", help="device (cuda, cuda:N, cpu)")
    parser.add_argument("--modes", default="eager,compile,reduce-overhead")
    parser.add_argument("--info-modes", default="eager")
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--timing-sets", type=int, default=4)
    parser.add_argument("--warm-jobs", type=int, default=8, metavar="N",
                        help="tasks compiled side by side before timing (8; 0: no warm-up)")
    parser.add_argument("--warm-only", action="store_true",
                        help="only warm the torch.compile caches (time nothing); a later run "
                             "times against them")
    parser.add_argument("--cache-dir", default=DEFAULT_CACHE_DIR)
    parser.add_argument("--no-cache", action="store_true")
    parser.add_argument("--child-timeout", type=float, default=1800.0, metavar="S",
                        help="seconds allowed per task and mode (1800)")


def run_baseline_batch(args) -> int:
    from .judge_baseline import BaselineOptions, run_baseline_batch as batch

    options = BaselineOptions(graph_dir="", track=args.track, modes=_split_modes(args.modes),
                              info_modes=_split_modes(args.info_modes), iters=args.iters,
                              warmup=args.warmup, timing_sets=args.timing_sets,
                              device=args.device,
                              cache_dir=None if args.no_cache else args.cache_dir,
                              child_timeout_s=args.child_timeout)
    results = batch(options, args.graph_dirs, args.out_dir, warm_jobs=args.warm_jobs,
                    log=lambda line: print(line, file=sys.stderr, flush=True),
                    warm_only=args.warm_only)
    failed = 0
    for result in results:
        line = []
        for mode, entry in result["modes"].items():
            if "error" in entry:
                failed += 1
                line.append(f"{mode} error")
            else:
                line.append(f"{mode} {entry['timing']['stats']['median_ms']:.4f} ms")
        print(f"{result['task']}: {', '.join(line)}", file=sys.stderr)
    return 1 if failed else 0


def add_baseline_batch_mode_arguments(parser):
    parser.add_argument("--jobs-file", required=True,
                        help="JSON list of {index, graph_dir, task}")
    parser.add_argument("--out-dir", required=True, help="<index>.json per job")
    parser.add_argument("--track", default="fp32", choices=("fp32", "tf32", "bf16"))
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--mode", required=True,
                        help="a mode; with --warm-only, a comma-separated list")
    parser.add_argument("--flags", default="track", choices=("track", "pytorch-default"))
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--timing-sets", type=int, default=4)
    parser.add_argument("--warm-only", action="store_true",
                        help="compile and call each job's model a few times; time nothing")


def run_baseline_batch_mode(args) -> int:
    import json
    import os

    from . import files
    from .judge_baseline import batch_time_mode, warm_one_task

    with open(args.jobs_file) as handle:
        jobs = json.load(handle)
    modes = _split_modes(args.mode)
    if args.warm_only:
        for job in jobs:
            result = warm_one_task(job["graph_dir"], args.track, modes, args.device,
                                   job.get("task"))
            files.write_json(os.path.join(args.out_dir, f"{job['index']}.json"), result)
        return 0
    if len(modes) != 1:
        raise SystemExit("error: --mode takes one mode unless --warm-only")
    batch_time_mode(jobs, modes[0], args.flags, args.track, args.iters, args.warmup,
                    args.timing_sets, args.device, args.out_dir)
    return 0


# (name, add_arguments, run, help)
SUBCOMMANDS = (
    ("serve", add_serve_arguments, run_serve,
     "hold the reference, export IPC slots, answer compare/exit on stdin"),
    ("baseline", add_baseline_arguments, run_baseline,
     "time eager/compile/reduce-overhead baselines, each in a fresh process (cached)"),
    ("baseline-mode", add_baseline_mode_arguments, run_baseline_mode,
     "time one baseline mode in this process (used by baseline)"),
    ("baseline-batch", add_baseline_batch_arguments, run_baseline_batch,
     "baselines of many tasks: torch.compile warmed side by side, then timed serially (cached)"),
    ("baseline-batch-mode", add_baseline_batch_mode_arguments, run_baseline_batch_mode,
     "one mode for many tasks in this process (used by baseline-batch)"),
)


def build_parser():
    parser = argparse.ArgumentParser(prog="python -m stitch_harness.judge",
                                     description=__doc__.splitlines()[0])
    subparsers = parser.add_subparsers(dest="subcommand", metavar="SUBCOMMAND")
    for name, add_arguments, run, help_text in SUBCOMMANDS:
        sub = subparsers.add_parser(name, help=help_text, description=help_text)
        add_arguments(sub)
        sub.set_defaults(run=run)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "subcommand", None):
        parser.print_help(sys.stderr)
        return 2
    quiet_torch()
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
