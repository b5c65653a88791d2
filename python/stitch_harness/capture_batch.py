"""`capture-batch --out DIR TASK.py...`: capture many tasks, each in a forked child with a timeout.

The parent imports torch once; every child is a fork of it, so a task pays for its own capture only.
Each task goes to DIR/<task stem>/ (see capture.py). One JSON line per task goes to stdout as it
finishes; progress goes to stderr. A child that runs past --timeout is killed with its process group.
"""
import json
import os
import signal
import sys
import time

DESCRIPTION = """Capture many KernelBench-format task files into DIR/<task stem>/.

Torch is imported once; each task runs in a forked child (--jobs at a time) with a wall-clock limit.
stdout gets one JSON line per task as it finishes:
  {"task", "file", "status": "captured"|"failed", "category", "message", "seconds", "nodes"}
Exit code: 0 when every task captured, 1 when any failed, 2 for bad usage."""


def add_arguments(parser):
    parser.add_argument("tasks", nargs="+", metavar="TASK.py", help="task files")
    parser.add_argument("--out", required=True, metavar="DIR", help="output directory; one folder per task")
    parser.add_argument("--jobs", type=int, default=2, help="tasks captured at once (2)")
    parser.add_argument("--timeout", type=float, default=300.0, metavar="S", help="seconds per task (300)")
    from .capture_cmd import add_capture_options

    add_capture_options(parser)

def _stem(path):
    return os.path.splitext(os.path.basename(path))[0]


def _child(task, out_dir, options, threads):
    """Runs in the forked child; never returns."""
    code = 1
    try:
        os.setpgid(0, 0)
        os.dup2(2, 1)  # whatever the task prints must not mix with the JSON lines on stdout
        import torch

        torch.set_num_threads(threads)
        from .capture import run_capture

        result = run_capture(task, out_dir, options)
        code = 0 if result["status"] == "captured" else 1
    except BaseException:  # noqa: BLE001  (the child must reach os._exit whatever happens)
        import traceback

        traceback.print_exc()
    finally:
        sys.stderr.flush()
        os._exit(code)


def _failed_record(task, out_dir, category, message, seconds):
    from . import files
    from .capture import ARTEFACTS

    for name in ARTEFACTS:
        files.remove_if_present(os.path.join(out_dir, name))
    for folder in (out_dir, os.path.join(out_dir, "reference")):
        if os.path.isdir(folder):
            for name in os.listdir(folder):
                if name.startswith(".") and name.endswith(".tmp"):
                    files.remove_if_present(os.path.join(folder, name))
    record = {"status": "failed", "task": _stem(task), "file": os.path.abspath(task), "category": category,
              "message": message, "traceback": "", "seconds": {"total": round(seconds, 3)}}
    files.write_json(os.path.join(out_dir, "capture.json"), record)
    return record


def _line(task, record):
    return {"task": _stem(task), "file": os.path.abspath(task), "status": record["status"],
            "category": record.get("category"), "message": record.get("message", ""),
            "seconds": record.get("seconds", {}).get("total"), "nodes": record.get("nodes")}


def _finished(task, out_dir, status, seconds):
    """The capture.json the child wrote, or a failure record when it died without one."""
    path = os.path.join(out_dir, "capture.json")
    record = None
    if os.path.exists(path):
        with open(path, encoding="utf-8") as handle:
            record = json.load(handle)
    if os.WIFSIGNALED(status):
        if record is None or record.get("status") != "captured":
            signame = signal.Signals(os.WTERMSIG(status)).name
            record = _failed_record(task, out_dir, "internal", f"capture process died with {signame}", seconds)
    elif record is None:
        record = _failed_record(task, out_dir, "internal",
                                f"capture process exited with {os.WEXITSTATUS(status)} and no capture.json",
                                seconds)
    return record


def run(args):
    if args.jobs < 1:
        print("error: --jobs must be at least 1", file=sys.stderr)
        return 2
    stems = {}
    for task in args.tasks:
        if _stem(task) in stems:
            print(f"error: {task} and {stems[_stem(task)]} would both write {args.out}/{_stem(task)}",
                  file=sys.stderr)
            return 2
        stems[_stem(task)] = task
    from .runtime import import_torch

    import_torch()  # no torch op runs in the parent, so forking is safe
    from .capture_cmd import options_from

    options = options_from(args)
    threads = max(1, (os.cpu_count() or 1) // args.jobs)
    running = {}  # pid -> (task, out_dir, start time)
    try:
        failures = _run_all(args, options, threads, running)
    finally:
        # Interrupted (Ctrl-C) or crashed: children run in their own process groups, so end them.
        for child in running:
            try:
                os.killpg(child, signal.SIGKILL)
                os.waitpid(child, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
    print(f"captured {len(args.tasks) - failures} of {len(args.tasks)} tasks into {args.out}", file=sys.stderr)
    return 0 if failures == 0 else 1


def _run_all(args, options, threads, running):
    """Fork up to --jobs children at a time until every task is done; returns the failure count."""
    pending = list(args.tasks)
    total, done, failures = len(pending), 0, 0
    while pending or running:
        while pending and len(running) < args.jobs:
            task = pending.pop(0)
            out_dir = os.path.join(args.out, _stem(task))
            os.makedirs(out_dir, exist_ok=True)
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                _child(task, out_dir, options, threads)
            try:
                os.setpgid(pid, pid)  # also in the parent, so that killpg works from the first moment
            except (PermissionError, ProcessLookupError):
                pass  # the child already did it, or already exited
            running[pid] = (task, out_dir, time.monotonic())
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            now = time.monotonic()
            for child, (task, out_dir, start) in list(running.items()):
                if now - start > args.timeout:
                    try:
                        os.killpg(child, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    os.waitpid(child, 0)
                    del running[child]
                    record = _failed_record(task, out_dir, "timeout",
                                            f"capture took longer than {args.timeout:g} s", now - start)
                    done, failures = done + 1, failures + 1
                    _report(task, record, done, total)
            time.sleep(0.05)
            continue
        if pid not in running:
            continue
        task, out_dir, start = running.pop(pid)
        record = _finished(task, out_dir, status, time.monotonic() - start)
        done += 1
        failures += record["status"] != "captured"
        _report(task, record, done, total)
    return failures


def _report(task, record, done, total):
    line = _line(task, record)
    print(json.dumps(line), flush=True)
    detail = f"{line['nodes']} nodes" if line["status"] == "captured" else f"{line['category']}: {line['message']}"
    print(f"[{done}/{total}] {line['status']} {line['task']} ({line['seconds']} s, {detail})",
          file=sys.stderr, flush=True)
