#!/usr/bin/env python3
"""Summarise a kb_coverage.sh run: results.jsonl (one record per task) and coverage.md (per-level
counts, geomean speedups, the per-task table, refusals by op).

Usage: kb_coverage_report.py RUNS_DIR --out DIR [--speed-levels "level2 level3_mlp"]
RUNS_DIR holds capture-*/<level>/<task>/ as kb_coverage.sh leaves it: plan.rc/plan.txt,
generate.rc/generate.txt, verify.json (stitchcuda verify --json), generated/plan.json.
"""
import argparse
import glob
import json
import math
import os
import re
import sys

MODES = ("eager", "compile", "reduce-overhead")
FAST_P = (0, 1, 1.5, 2)  # the thresholds of src/bench/bench_summary.h's kFastPThresholds


def read(path):
    try:
        with open(path) as handle:
            return handle.read()
    except OSError:
        return None


def last_error(text):
    lines = [l for l in (text or "").splitlines() if l.startswith("error:")]
    return lines[-1][len("error:"):].strip() if lines else (text or "").strip()[-200:]


def refusal_op(reason):
    match = re.search(r"\((aten\.[\w.]+|[\w.]+)\)", reason)
    return match.group(1) if match else reason[:60]


def task_record(directory):
    level = os.path.basename(os.path.dirname(directory))
    record = {"level": level, "task": os.path.basename(directory)}
    if not os.path.isfile(os.path.join(directory, "graph.json")):
        try:
            capture = json.loads(read(os.path.join(directory, "capture.json")) or "{}")
        except json.JSONDecodeError:
            capture = {}
        category = capture.get("category") or "capture_failed"
        return {**record, "status": "capture_failed", "refused_op": f"capture: {category}",
                "reason": (capture.get("message") or "")[:300]}
    if (read(os.path.join(directory, "plan.rc")) or "").strip() != "0":
        reason = last_error(read(os.path.join(directory, "plan.txt")))
        return {**record, "status": "refused", "reason": reason, "refused_op": refusal_op(reason)}
    plan = json.loads(read(os.path.join(directory, "generated", "plan.json")) or "{}")
    record["floor_us"] = plan.get("floor_us")
    record["subtasks"] = len(plan.get("subtasks", []))
    if (read(os.path.join(directory, "generate.rc")) or "").strip() != "0":
        return {**record, "status": "build_failed",
                "reason": last_error(read(os.path.join(directory, "generate.txt")))}
    if os.path.exists(os.path.join(directory, "verify.skipped")):
        return {**record, "status": "not_run", "reason": "past the run's deadline"}
    try:
        report = json.loads(read(os.path.join(directory, "verify.json")) or "")
    except json.JSONDecodeError:
        err = read(os.path.join(directory, "verify.err")) or ""
        return {**record, "status": "verify_failed", "reason": err.strip()[-300:]}
    record["status"] = report.get("outcome") or report.get("state")
    record["reason"] = report.get("reason", "")
    timing = report.get("timing") or {}
    basis = "protocol" if timing.get("speedup_basis") == "stream" else "synced"
    stats = timing.get(basis) or {}
    record["ours_ms"] = stats.get("median_ms")
    record["ours_p10_ms"], record["ours_p90_ms"] = stats.get("p10_ms"), stats.get("p90_ms")
    modes = (report.get("baselines") or {}).get("modes") or {}
    for mode in MODES:
        entry = modes.get(mode) or {}
        record[f"{mode}_ms"] = entry.get("median_ms")
        record[f"speedup_{mode}"] = (report.get("speedups") or {}).get(mode)
    errors = [o.get("relative_error_norm") for o in report.get("outputs") or []]
    record["rel_err_norm_max"] = max([e for e in errors if e is not None], default=None)
    record["launches_per_forward"] = (report.get("runner") or {}).get("launches_per_forward")
    if record.get("floor_us") and record.get("ours_ms"):
        record["roofline_pct"] = 100.0 * record["floor_us"] / (1000.0 * record["ours_ms"])
    return record


def geomean(values):
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def fast_p(rows, mode):
    """KernelBench's fast_p for each threshold of FAST_P: the fraction of all `rows` that passed
    and whose speedup over `mode` exceeds p (fast_0: passed, whatever the speed)."""
    if not rows:
        return [0.0 for _ in FAST_P]
    passed = [r for r in rows if r["status"] == "passed"]
    counts = [len(passed) if p == 0 else
              sum(1 for r in passed if (r.get(f"speedup_{mode}") or 0) > p) for p in FAST_P]
    return [count / len(rows) for count in counts]


def fmt(value, pattern="{:.4f}"):
    return "-" if value is None else pattern.format(value)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs_dir")
    parser.add_argument("--out", required=True)
    parser.add_argument("--speed-levels", default="level2 level3_mlp")
    args = parser.parse_args(argv)
    speed_levels = set(args.speed_levels.split())
    directories = sorted(d for d in glob.glob(os.path.join(args.runs_dir, "capture-*", "*", "*"))
                         if os.path.isdir(d))
    records = [task_record(d) for d in directories]
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "results.jsonl"), "w") as handle:
        for record in records:
            handle.write(json.dumps(record) + "\n")

    lines = ["# Built-in Coder on KernelBench", ""]
    levels = sorted({r["level"] for r in records})
    lines += ["| level | tasks | covered | refused | built | passed | other outcomes |",
              "|---|---|---|---|---|---|---|"]
    for level in levels:
        rows = [r for r in records if r["level"] == level]
        refused = [r for r in rows if r["status"] in ("refused", "capture_failed")]
        covered = [r for r in rows if r not in refused]
        built = [r for r in covered if r["status"] != "build_failed"]
        passed = [r for r in covered if r["status"] == "passed"]
        others = {}
        for r in covered:
            if r["status"] != "passed":
                others[r["status"]] = others.get(r["status"], 0) + 1
        lines.append(f"| {level} | {len(rows)} | {len(covered)} | {len(refused)} | {len(built)} | "
                     f"{len(passed)} | {', '.join(f'{k} {v}' for k, v in sorted(others.items())) or '-'} |")
    lines.append("")
    timed_levels = [level for level in levels if level in speed_levels]
    if timed_levels:
        lines += ["Speed per level: the geomean over the passing tasks; fast_p, KernelBench's "
                  "measure, is the fraction of all the level's tasks (refused ones included) that "
                  "passed and ran more than p times as fast as the baseline (fast_0: passed).", "",
                  "| level | baseline | passed | geomean | " +
                  " | ".join(f"fast_{p:g}" for p in FAST_P) + " |",
                  "|---|---|---|---|" + "---|" * len(FAST_P)]
    for level in timed_levels:
        rows = [r for r in records if r["level"] == level]
        passed = [r for r in rows if r["status"] == "passed"]
        for mode in MODES:
            fractions = fast_p(rows, mode)
            lines.append(f"| {level} | {mode} | {len(passed)} of {len(rows)} | "
                         f"{fmt(geomean([r.get(f'speedup_{mode}') for r in passed]), '{:.2f}x')} | " +
                         " | ".join(f"{100 * f:.0f}%" for f in fractions) + " |")
    lines.append("")
    summary_end = len(lines)  # the counts and the speed table: what the terminal shows
    for level in levels:
        rows = [r for r in records if r["level"] == level and r["status"] not in
                ("refused", "capture_failed")]
        if not rows:
            continue
        lines += [f"## {level}", ""]
        if level in speed_levels:
            lines += ["| task | outcome | eager ms | compile ms | reduce-overhead ms | ours ms | "
                      "vs eager | vs compile | vs r-o | % of roofline floor |",
                      "|---|---|---|---|---|---|---|---|---|---|"]
            for r in rows:
                lines.append(
                    f"| {r['task']} | {r['status']} | {fmt(r.get('eager_ms'))} | "
                    f"{fmt(r.get('compile_ms'))} | {fmt(r.get('reduce-overhead_ms'))} | "
                    f"{fmt(r.get('ours_ms'))} | {fmt(r.get('speedup_eager'), '{:.2f}x')} | "
                    f"{fmt(r.get('speedup_compile'), '{:.2f}x')} | "
                    f"{fmt(r.get('speedup_reduce-overhead'), '{:.2f}x')} | "
                    f"{fmt(r.get('roofline_pct'), '{:.0f}%')} |")
        else:
            lines += ["| task | outcome | ours ms | rel. error norm | launches | % of roofline floor |",
                      "|---|---|---|---|---|---|"]
            for r in rows:
                lines.append(f"| {r['task']} | {r['status']} | {fmt(r.get('ours_ms'))} | "
                             f"{fmt(r.get('rel_err_norm_max'), '{:.1e}')} | "
                             f"{fmt(r.get('launches_per_forward'), '{:g}')} | "
                             f"{fmt(r.get('roofline_pct'), '{:.0f}%')} |")
        failed = [r for r in rows if r["status"] != "passed"]
        if failed:
            lines += ["", "Not passing:"]
            lines += [f"- {r['task']}: {r['status']}: {(r.get('reason') or '')[:200]}"
                      for r in failed]
        lines.append("")
    refused = [r for r in records if r["status"] in ("refused", "capture_failed")]
    if refused:
        lines += ["## Refused (the op that is outside the covered families)", ""]
        for level in levels:
            by_op = {}
            for r in refused:
                if r["level"] == level:
                    by_op.setdefault(r.get("refused_op", r["status"]), []).append(r["task"])
            for op, tasks in sorted(by_op.items(), key=lambda item: -len(item[1])):
                lines.append(f"- {level}: {op}: {len(tasks)} ({', '.join(sorted(tasks)[:6])}"
                             f"{', ...' if len(tasks) > 6 else ''})")
    with open(os.path.join(args.out, "coverage.md"), "w") as handle:
        handle.write("\n".join(lines) + "\n")
    print("\n".join(lines[:summary_end]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
