"""`judge serve`: hold the reference, hand the runner IPC slots, compare what it wrote.

The sequence is docs/verify-protocol.md's: build the model, draw `--sets` check sets under secret
seeds, compute their references (kept in this process's GPU memory only, never written anywhere),
export params, inputs and output slots through CUDA IPC, write slots.json atomically, print
{"event":"ready"} and answer commands read from stdin, one JSON object a line:
  {"cmd":"compare"} -> {"event":"compared","result":{...}}
  {"cmd":"exit"}    -> {"event":"bye"}, exit 0 (also on end of input)
Anything else gets {"event":"error","message":...}. Only protocol lines go to stdout: the file
descriptor is swapped for stderr at start, so prints from the task or a library cannot corrupt it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
import traceback
from typing import Callable, Optional, TextIO

import torch

from . import files
from .compare import (compare_output, needs_track_reference, recheck_against_exact,
                      undecided_outputs)
from .ipc import ExportedTensor, IpcExporter
from .judge_task import DTYPES, JudgeTask, secret_seed, tensor_bytes
from .judge_tracks import Track

SLOTS_VERSION = 1
FINGERPRINT_CHUNK = 1 << 24


def tensor_fingerprint(tensor: torch.Tensor) -> tuple[int, int]:
    """Two position-weighted byte sums: any change to a tensor's bytes changes them, unless crafted
    to cancel (the runner also checks inputs bit for bit; this is the judge's second look, and it
    needs no second copy of a 6 GB input)."""
    flat = tensor.reshape(-1).contiguous().view(torch.uint8).reshape(-1)
    plain = weighted = 0
    for start in range(0, flat.numel(), FINGERPRINT_CHUNK):
        chunk = flat[start:start + FINGERPRINT_CHUNK].to(torch.int64)
        weights = torch.arange(start, start + chunk.numel(), device=chunk.device) % 65521 + 1
        plain += int(chunk.sum())
        weighted += int((chunk * weights).sum())
    return plain, weighted


def poison(tensor: torch.Tensor) -> None:
    """Fill with a value no honest output has in bulk: NaN for floats, the minimum for integers."""
    if tensor.dtype.is_floating_point:
        tensor.fill_(float("nan"))
    elif tensor.dtype != torch.bool:
        tensor.fill_(torch.iinfo(tensor.dtype).min)


def _type_json(entry: dict) -> dict:
    return {"dtype": entry["dtype"], "shape": list(entry["shape"]),
            "strides": list(entry["strides"])}


@dataclasses.dataclass
class MemoryPlan:
    """How many check sets, spot slots and timing sets one verification holds at once, sized to
    the GPU's free memory. Each check set holds its inputs, an output slot and the references (in
    this process); a spot slot inputs and outputs; the runner holds a check, a recheck and each
    timing set's inputs and outputs, plus two more copies of the outputs (determinism, snapshot).
    Tasks with gigabyte tensors (KernelBench level 1 has 6 GB inputs) would not fit three check
    sets and four timing sets on one GPU, so the plan gives up, in this order, timing sets down to
    2, spot slots down to 1, check sets down to 2; then to 1 each. The kept fraction of free
    memory leaves room for the program's own workspace and the CUDA contexts."""
    sets: int
    spot_slots: int
    timing_sets: int
    need_bytes: int = 0
    budget_bytes: int = 0
    note: str = ""


def plan_memory(input_bytes: int, output_bytes: int, free_bytes: int, sets: int, spot_slots: int,
                timing_sets: int, keep_fraction: float = 0.85) -> MemoryPlan:
    """Pure: the largest of the requested counts, reduced in the documented order, that fit."""
    io = input_bytes + output_bytes

    def need(s: int, spot: int, timing: int) -> int:
        judge = s * (input_bytes + 2 * output_bytes) + spot * io
        runner = (2 + timing) * io + 2 * output_bytes
        return judge + runner

    budget = int(free_bytes * keep_fraction)
    counts = [sets, spot_slots, timing_sets]
    # (which count: 0 check sets, 1 spot slots, 2 timing sets; the lowest this step takes it to)
    order = [(2, 2), (1, 1), (0, 2), (2, 1), (1, 0), (0, 1)]
    for index, floor in order:
        while need(*counts) > budget and counts[index] > floor:
            counts[index] -= 1
    plan = MemoryPlan(*counts, need_bytes=need(*counts), budget_bytes=budget)
    if counts != [sets, spot_slots, timing_sets]:
        plan.note = (f"memory: {io / 2**30:.1f} GiB of inputs and outputs per set, "
                     f"{free_bytes / 2**30:.0f} GiB free: {counts[0]} check sets (of {sets}), "
                     f"{counts[1]} spot slots (of {spot_slots}), {counts[2]} timing sets "
                     f"(of {timing_sets})")
    if plan.need_bytes > budget:
        plan.note = (plan.note or "memory: ") + (
            f"; still {plan.need_bytes / 2**30:.0f} GiB against {budget / 2**30:.0f} GiB usable: "
            "an allocation may fail")
    return plan


@dataclasses.dataclass
class _CheckSet:
    inputs: list[ExportedTensor]
    outputs: list[ExportedTensor]
    references: list[torch.Tensor]
    fingerprints: list[tuple[int, int]]


@dataclasses.dataclass
class _SpotSlot:
    inputs: list[ExportedTensor]
    outputs: list[ExportedTensor]


class JudgeSession:
    def __init__(self, task: JudgeTask, track: Track, exporter: IpcExporter, sets: int = 3,
                 spot_slots: int = 2, timing_sets: int = 4,
                 seed_source: Callable[[], int] = secret_seed):
        if sets < 1:
            raise ValueError("--sets must be at least 1")
        self.task = task
        self.track = track
        self.exporter = exporter
        self.n_sets = sets
        self.n_spot = spot_slots
        self.timing_sets = timing_sets
        self.seed_source = seed_source
        self.user_outputs = len(task.graph["outputs"])  # the state outputs follow
        self.params: list[tuple[dict, ExportedTensor]] = []
        self.check_sets: list[_CheckSet] = []
        self.spot_slots: list[_SpotSlot] = []
        self.setup_s = 0.0
        self.memory_note = ""

    def _allocate(self, entry: dict) -> ExportedTensor:
        return self.exporter.allocate(entry["shape"], DTYPES[entry["dtype"]], entry["strides"])

    def _fit_to_memory(self) -> None:
        """On a GPU, reduces the set counts to what its free memory holds (plan_memory)."""
        device = self.exporter.device
        if device.type != "cuda":
            return
        input_bytes = self.task.input_bytes()
        output_bytes = sum(tensor_bytes(e) for e in self.task.output_types())
        free_bytes, _ = torch.cuda.mem_get_info(device)
        plan = plan_memory(input_bytes, output_bytes, free_bytes, self.n_sets, self.n_spot,
                           self.timing_sets)
        self.n_sets, self.n_spot, self.timing_sets = plan.sets, plan.spot_slots, plan.timing_sets
        self.memory_note = plan.note
        if plan.note:
            print(f"judge: {plan.note}", file=sys.stderr, flush=True)

    def prepare(self) -> dict:
        """Everything up to slots.json; returns its content."""
        started = time.monotonic()
        self._fit_to_memory()
        graph = self.task.graph
        for entry in graph["params"]:
            exported = self._allocate(entry)
            exported.tensor.copy_(self.task.params[entry["name"]])
            self.params.append((entry, exported))
        output_types = self.task.output_types()
        for _ in range(self.n_sets):
            inputs = self.task.draw_inputs(self.seed_source())
            references = self.task.reference(inputs)
            exported_inputs = []
            for entry, value in zip(graph["inputs"], inputs):
                exported = self._allocate(entry)
                exported.tensor.copy_(value)
                exported_inputs.append(exported)
            del inputs
            outputs = [self._allocate(entry) for entry in output_types]
            for exported in outputs:
                poison(exported.tensor)
            fingerprints = [tensor_fingerprint(e.tensor) for e in exported_inputs]
            self.check_sets.append(_CheckSet(exported_inputs, outputs, references, fingerprints))
        for _ in range(self.n_spot):
            slot = _SpotSlot([self._allocate(e) for e in graph["inputs"]],
                             [self._allocate(e) for e in output_types])
            for exported in slot.inputs + slot.outputs:
                poison(exported.tensor)
            self.spot_slots.append(slot)
        if self.exporter.device.type == "cuda":
            torch.cuda.synchronize(self.exporter.device)
            torch.cuda.empty_cache()  # give the runner the memory the references no longer need
        self.setup_s = time.monotonic() - started
        return self.slots_json()

    def slots_json(self) -> dict:
        graph = self.task.graph
        device = self.exporter.device
        return {
            "version": SLOTS_VERSION,
            "device": device.index if device.index is not None else 0,
            "track": self.track.name,
            "timing_sets": self.timing_sets,
            "params": [{"name": entry["name"], **_type_json(entry), **exported.slot_json()}
                       for entry, exported in self.params],
            "inputs": [{"name": entry["name"], "kind": entry["kind"], **_type_json(entry),
                        "distribution": entry.get("distribution", "unknown")}
                       for entry in graph["inputs"]],
            "outputs": [{**_type_json(entry), **({"state": entry["state"]} if "state" in entry
                                                  else {})}
                        for entry in self.task.output_types()],
            "check_sets": [{"inputs": [e.slot_json() for e in s.inputs],
                            "outputs": [e.slot_json() for e in s.outputs]}
                           for s in self.check_sets],
            "spot_slots": [{"inputs": [e.slot_json() for e in s.inputs],
                            "outputs": [e.slot_json() for e in s.outputs]}
                           for s in self.spot_slots],
        }

    def _compare_all(self, outputs: list[ExportedTensor], references: list[torch.Tensor],
                     inputs: list[torch.Tensor], with_state: bool = False):
        """Checks of the outputs against their references; the state outputs (updated buffers)
        only `with_state`: their reference is the state after one call from the captured one,
        which only the program's first call (check set 0) starts from."""
        if not with_state:
            outputs, references = outputs[:self.user_outputs], references[:self.user_outputs]
        checks = [compare_output(exported.tensor, reference, self.track, output_index=index)
                  for index, (exported, reference) in enumerate(zip(outputs, references))]
        if any(c.exact_may_overturn for c in checks):
            # A second opinion from an FP64 reference (compare.recheck_against_exact), computed
            # only when some output failed numerically (elements outside atol/rtol, or the error
            # norm without NaN/Inf). On a loose track PyTorch's own result there (TF32, autocast)
            # is computed then too: a program may round as it does.
            try:
                exact = self.task.reference_exact(inputs)
            except Exception as error:  # an op without FP64 support: the FP32 verdict stands
                print(f"judge: no FP64 reference ({type(error).__name__}: {error})",
                      file=sys.stderr, flush=True)
                return checks
            on_track = [None] * len(checks)
            if needs_track_reference(self.track):
                try:
                    on_track = self.task.reference_on_track(inputs, self.track)
                except Exception as error:  # the recheck sizes its allowances by FP32 alone
                    print(f"judge: no reference on track {self.track.name} "
                          f"({type(error).__name__}: {error})", file=sys.stderr, flush=True)
            for check, exported, reference, value, value_on_track in zip(
                    checks, outputs, references, exact, on_track):
                recheck_against_exact(check, exported.tensor, reference, value, self.track,
                                      track_reference=value_on_track)
        return checks

    def compare(self) -> dict:
        started = time.monotonic()
        if self.exporter.device.type == "cuda":
            torch.cuda.synchronize(self.exporter.device)
        messages: list[str] = []
        findings: list[dict] = []
        sets_json = []
        seen: list[tuple[str, list[torch.Tensor], list[torch.Tensor]]] = []
        every_check = []
        for index, check_set in enumerate(self.check_sets):
            checks = self._compare_all(check_set.outputs, check_set.references,
                                       [e.tensor for e in check_set.inputs], with_state=index == 0)
            every_check.extend(checks)
            unchanged = [tensor_fingerprint(e.tensor) == fp
                         for e, fp in zip(check_set.inputs, check_set.fingerprints)]
            if not all(unchanged):
                messages.append(f"check set {index}: inputs changed after the runner ran")
            passed = all(c.passed for c in checks) and all(unchanged)
            sets_json.append({"set": index, "passed": passed, "inputs_unchanged": all(unchanged),
                              "outputs": [c.as_json() for c in checks]})
            seen.append((f"check set {index}",
                         [e.tensor for e in check_set.outputs][:self.user_outputs],
                         check_set.references[:self.user_outputs]))
        spots_json = []
        for index, slot in enumerate(self.spot_slots):
            filled = not any(e.tensor.dtype.is_floating_point and bool(torch.isnan(e.tensor).all())
                             and e.tensor.numel() > 0 for e in slot.inputs)
            entry = {"slot": index, "filled": filled, "passed": False, "outputs": []}
            if not filled:
                entry["message"] = "the runner did not fill this spot slot's inputs"
                messages.append(f"spot slot {index}: not filled")
            else:
                references = self.task.reference([e.tensor for e in slot.inputs])
                checks = self._compare_all(slot.outputs, references,
                                           [e.tensor for e in slot.inputs])
                every_check.extend(checks)
                entry["passed"] = all(c.passed for c in checks)
                entry["outputs"] = [c.as_json() for c in checks]
                seen.append((f"spot slot {index}", [e.tensor for e in slot.outputs][:self.user_outputs],
                             references[:self.user_outputs]))
            spots_json.append(entry)
        findings.extend(_repeated_outputs(seen))
        undecided = undecided_outputs(every_check)
        for index in undecided:
            messages.append(f"output {index}: undecided: it passed only where its FP32 reference "
                            f"was too ill-conditioned to tell a correct program from a wrong one")
        all_checks = [o for s in sets_json + spots_json for o in s["outputs"]]
        degenerate = sorted({o["degenerate_reason"] for o in all_checks
                             if o["degenerate_reference"]})
        passed = (all(s["passed"] for s in sets_json) and all(s["passed"] for s in spots_json)
                  and not findings and not undecided)
        return {
            "passed": passed,
            "track": self.track.name,
            "atol": self.track.atol,
            "rtol": self.track.rtol,
            "rel_err_norm_max": self.track.rel_err_norm_max,
            "check_sets": sets_json,
            "spot_slots": spots_json,
            "degenerate_reference": bool(degenerate),
            "degenerate_reasons": degenerate,
            "findings": findings,
            "messages": messages,
            "compare_s": round(time.monotonic() - started, 3),
        }


def _repeated_outputs(seen) -> list[dict]:
    """An output bit-identical to an earlier call's while the references differ means a result was
    reused across calls (HACKS rows 5/6): reported as an output_cache finding."""
    findings = []
    for later in range(len(seen)):
        for earlier in range(later):
            name_a, outs_a, refs_a = seen[earlier]
            name_b, outs_b, refs_b = seen[later]
            for index, (a, b) in enumerate(zip(outs_a, outs_b)):
                if a.numel() == 0 or a.shape != b.shape:
                    continue
                if torch.equal(a, b) and not torch.equal(refs_a[index], refs_b[index]):
                    findings.append({"kind": "output_cache", "fatal": True,
                                     "detail": f"output {index} of {name_b} is bit-identical to "
                                               f"{name_a}'s although their inputs differ"})
    return findings


class ProtocolWriter:
    """Owns the real stdout; everything else printed by this process goes to stderr."""

    def __init__(self, stream: Optional[TextIO] = None):
        if stream is None:
            sys.stdout.flush()
            stream = os.fdopen(os.dup(1), "w", buffering=1)
            os.dup2(2, 1)
            sys.stdout = sys.stderr
        self.stream = stream

    def send(self, event: dict) -> None:
        self.stream.write(files.dumps_json(event))
        self.stream.flush()


def serve_loop(session: JudgeSession, commands: TextIO, writer: ProtocolWriter) -> int:
    for line in commands:
        line = line.strip()
        if not line:
            continue
        try:
            command = json.loads(line)
            name = command.get("cmd") if isinstance(command, dict) else None
        except json.JSONDecodeError as error:
            writer.send({"event": "error", "message": f"not JSON: {error}"})
            continue
        if name == "compare":
            try:
                writer.send({"event": "compared", "result": session.compare()})
            except Exception as error:
                writer.send({"event": "error", "message": f"compare failed: {error}",
                             "traceback": traceback.format_exc()})
        elif name == "exit":
            writer.send({"event": "bye"})
            return 0
        else:
            writer.send({"event": "error", "message": f"unknown command {name!r}"})
    return 0


def run_serve(session: JudgeSession, work_dir: str, writer: ProtocolWriter,
              commands: TextIO) -> int:
    try:
        slots = session.prepare()
        os.makedirs(work_dir, exist_ok=True)
        files.write_json(os.path.join(work_dir, "slots.json"), slots)
    except Exception as error:
        writer.send({"event": "error", "message": f"setup failed: {error}",
                     "traceback": traceback.format_exc()})
        return 1
    writer.send({"event": "ready", "slots": os.path.join(work_dir, "slots.json"),
                 "sets": len(session.check_sets), "spot_slots": len(session.spot_slots),
                 "timing_sets": session.timing_sets, "memory_note": session.memory_note,
                 "setup_s": round(session.setup_s, 3)})
    return serve_loop(session, commands, writer)
