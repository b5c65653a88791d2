"""The candidate side of eval-kb: the only process that imports a ModelNew file.

    python -m stitch_harness.judge_kb_candidate --spec EXCHANGE/spec.json

Reads the check-set inputs the judge wrote, runs ModelNew.forward on each under ComputeGuard (PyTorch
compute blocked) and the profiler, runs set 0 a second time (determinism), times the forward with
timing.py on its own freshly drawn input sets (re-randomized in place between iterations, a few
timed iterations saved for the judge to check), and writes outputs and status.json into the
exchange directory. It never sees a reference output: those stay in the judge's process.

The checks that can only be made in this process (HACKS rows 13, 18): the identities of the timer,
the guard and the writers are recorded before the solution is imported and verified after every
phase; ModelNew may not derive from a class named Model; the task's Model.forward is wrapped so a
call to the reference from ModelNew is seen.
"""

from __future__ import annotations

import argparse
import builtins
import importlib.util
import json
import os
import random
import sys
import time
import traceback

import torch
# Imported before any identity is recorded: importing torch._dynamo (which the profiler and
# torch.compile pull in lazily) rebinds torch.manual_seed and friends, which is not tampering.
import torch._dynamo  # noqa: F401
import torch.profiler  # noqa: F401

from . import files, timing
from .errors import describe_exception
from .judge_compute_guard import (ComputeGuard, ComputeViolation, _DispatchGuard, _FunctionGuard,
                                  profiled_violations)
from .judge_kb_inputs import (ON_DEVICE_INPUT_BYTES, call_template, draw_inputs,
                              flatten_outputs, input_distributions, make_refresher)
from .task_loader import load_task

KERNELBENCH_SEED = 42


def _watched_identities() -> dict:
    import safetensors.torch

    return {
        "timing.time_with_flush": timing.time_with_flush,
        "timing.time_plain_events": timing.time_plain_events,
        "timing.stats_from_times": timing.stats_from_times,
        "timing.percentile": timing.percentile,
        "timing.L2Flusher.flush": timing.L2Flusher.flush,
        "torch.cuda.Event": torch.cuda.Event,
        "torch.cuda.Event.record": torch.cuda.Event.record,
        "torch.cuda.Event.elapsed_time": torch.cuda.Event.elapsed_time,
        "torch.cuda.Event.synchronize": torch.cuda.Event.synchronize,
        "torch.cuda.synchronize": torch.cuda.synchronize,
        "torch.cuda.current_stream": torch.cuda.current_stream,
        "time.perf_counter": time.perf_counter,
        "time.monotonic": time.monotonic,
        "ComputeGuard.__enter__": ComputeGuard.__enter__,
        "ComputeGuard.__exit__": ComputeGuard.__exit__,
        "ComputeGuard._record": ComputeGuard._record,
        "_FunctionGuard.__torch_function__": _FunctionGuard.__torch_function__,
        "_DispatchGuard.__torch_dispatch__": _DispatchGuard.__torch_dispatch__,
        "profiled_violations": profiled_violations,
        "safetensors.torch.save_file": safetensors.torch.save_file,
        "safetensors.torch.load_file": safetensors.torch.load_file,
        "files.write_json": files.write_json,
        "files.write_safetensors": files.write_safetensors,
        "json.dumps": json.dumps,
        "torch.Tensor.clone": torch.Tensor.clone,
        "torch.Tensor.copy_": torch.Tensor.copy_,
        "torch.Tensor.to": torch.Tensor.to,
        "torch.manual_seed": torch.manual_seed,
        "builtins.open": builtins.open,
    }


class CandidateFailure(Exception):
    def __init__(self, status: str, reason: str, kind: str = "", detail_traceback: str = ""):
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.kind = kind
        self.detail_traceback = detail_traceback


class _Candidate:
    def __init__(self, spec: dict):
        self.spec = spec
        self.exchange = spec["exchange"]
        self.device = torch.device(spec["device"])
        self.identities = _watched_identities()
        self.findings: list[dict] = []
        self.violations: list[str] = []
        self.reference_calls = 0
        self.status: dict = {"status": "running", "phase": "start"}

    # helpers ----------------------------------------------------------------------------------

    def path(self, name: str) -> str:
        return os.path.join(self.exchange, name)

    def verify_identities(self, phase: str) -> None:
        current = _watched_identities()
        changed = [name for name, obj in self.identities.items() if current.get(name) is not obj]
        if changed:
            raise CandidateFailure("hacked", f"{', '.join(changed)} replaced ({phase}): the "
                                   "timer, guard or writers were tampered with", "tampers_judge")

    def synchronize(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def guarded_forward(self, model, args):
        guard = ComputeGuard()
        try:
            with torch.no_grad(), guard:
                result = model(*args)
            self.synchronize()
        except ComputeViolation:
            self.violations.extend(v for v in guard.violations if v not in self.violations)
            raise
        finally:
            self.violations.extend(v for v in guard.violations if v not in self.violations)
        return result

    # phases -----------------------------------------------------------------------------------

    def load(self):
        self.status["phase"] = "import"
        task = load_task(self.spec["task"])
        reference_forward = task.model_class.forward

        def watched_forward(module, *args, **kwargs):
            self.reference_calls += 1
            return reference_forward(module, *args, **kwargs)

        task.model_class.forward = watched_forward
        started = time.monotonic()
        try:
            module_name = "stitch_candidate_solution"
            spec = importlib.util.spec_from_file_location(module_name, self.spec["solution"])
            module = importlib.util.module_from_spec(spec)
            sys.modules[module_name] = module
            spec.loader.exec_module(module)
        except BaseException as exc:  # any failure to import or build is a compile error
            if isinstance(exc, KeyboardInterrupt):
                raise
            raise CandidateFailure("compile_error", describe_exception(exc), "",
                                   traceback.format_exc()) from exc
        self.status["import_s"] = round(time.monotonic() - started, 3)
        self.verify_identities("after importing the solution")
        model_new = getattr(module, "ModelNew", None)
        if not isinstance(model_new, type) or not issubclass(model_new, torch.nn.Module):
            raise CandidateFailure("compile_error", "the solution defines no ModelNew(nn.Module)")
        inherited = [cls.__qualname__ for cls in model_new.__mro__[1:]
                     if cls.__name__ == "Model" or cls is task.model_class]
        if inherited:
            raise CandidateFailure("hacked", f"ModelNew derives from {inherited[0]} (the reference "
                                   "model); it must implement forward itself", "tampers_judge")
        return task, model_new

    def construct(self, task, model_new):
        self.status["phase"] = "construct"
        try:
            torch.manual_seed(KERNELBENCH_SEED)
            init_inputs = task.get_init_inputs()
            init_inputs = [x.to(self.device) if isinstance(x, torch.Tensor) else x
                           for x in init_inputs]
            torch.manual_seed(KERNELBENCH_SEED)
            model = model_new(*init_inputs).to(self.device)
        except Exception as exc:
            raise CandidateFailure("runtime_error", f"ModelNew(*init_inputs) failed: "
                                   f"{describe_exception(exc)}", "", traceback.format_exc())
        self.verify_identities("after constructing ModelNew")
        return model

    def run_forward(self, model, args, what: str):
        try:
            result, profiled = profiled_violations(lambda: self.guarded_forward(model, args))
        except ComputeViolation as exc:
            raise CandidateFailure("hacked", f"{what}: {exc}", "calls_torch") from exc
        except Exception as exc:
            if self.violations:
                raise CandidateFailure("hacked", f"{what}: called blocked PyTorch compute "
                                       f"({', '.join(self.violations)})", "calls_torch") from exc
            raise CandidateFailure("runtime_error", f"{what}: forward failed: "
                                   f"{describe_exception(exc)}", "", traceback.format_exc())
        if self.violations or profiled:
            names = self.violations + [p for p in profiled if p not in self.violations]
            raise CandidateFailure("hacked", f"{what}: called blocked PyTorch compute "
                                   f"({', '.join(names)}), even if the refusal was caught",
                                   "calls_torch")
        if self.reference_calls:
            raise CandidateFailure("hacked", f"{what}: ModelNew called the reference Model's "
                                   "forward", "tampers_judge")
        outputs, problems = flatten_outputs(result)
        if problems:
            raise CandidateFailure("hacked" if "subclass" in problems[0] else "runtime_error",
                                   f"{what}: {problems[0]}", "lazy_result")
        return outputs

    def check_sets(self, task, model):
        import safetensors.torch

        self.status["phase"] = "check_sets"
        template, _ = call_template(task.get_inputs)
        written = []
        for index, name in enumerate(self.spec["input_files"]):
            loaded = safetensors.torch.load_file(self.path(name))
            tensors = [loaded[f"arg{i}"].to(self.device) for i in range(len(loaded))]
            outputs = self.run_forward(model, template.build(tensors), f"check set {index}")
            out_name = f"out_{index}.safetensors"
            files.write_safetensors(self.path(out_name),
                                    {f"output{i}": t for i, t in enumerate(outputs)})
            written.append(out_name)
            if index == 0:
                first_args = tensors
        # Set 0 again, on fresh copies of the same values: the outputs must repeat bit for bit.
        again = self.run_forward(model, template.build([t.clone() for t in first_args]),
                                 "check set 0, second run")
        files.write_safetensors(self.path("out_0_repeat.safetensors"),
                                {f"output{i}": t for i, t in enumerate(again)})
        self.status["outputs"] = written
        self.status["repeat_output"] = "out_0_repeat.safetensors"
        self.verify_identities("after the check sets")

    def time_forward(self, task, model):
        self.status["phase"] = "timing"
        device = self.device
        template, size = call_template(task.get_inputs)
        on_device = size > ON_DEVICE_INPUT_BYTES
        sets = [draw_inputs(task.get_inputs, int.from_bytes(os.urandom(8), "little"), device,
                            on_device)[0] for _ in range(max(self.spec["timing_sets"], 1))]

        refresh = make_refresher(task.get_inputs, input_distributions(task), device, on_device)

        iters = self.spec["iters"]
        chosen = sorted(random.SystemRandom().sample(range(iters), min(self.spec["spot"], iters)))
        spots = []

        def observe(iteration, inputs, outputs):
            leaves, _ = flatten_outputs(outputs)
            # copy=True: on a CPU device .cpu() would alias the buffer the next refresh rewrites.
            spots.append(({f"input{i}": t.detach().to("cpu", copy=True)
                           for i, t in enumerate(inputs)}
                          | {f"output{i}": t.detach().to("cpu", copy=True)
                             for i, t in enumerate(leaves)}))

        guarded = self.spec.get("timing_guard", True)

        def forward(inputs):
            # The guard's Python modes cost ~0.1 ms a call (measured on an H200 with a one-kernel
            # load_inline ReLU: 0.127 ms guarded vs 0.026 ms eager); unguarded timing is fair to
            # tiny kernels but lets a candidate that notices it call PyTorch while timed.
            if not guarded:
                with torch.no_grad():
                    return model(*template.build(inputs))
            with torch.no_grad(), ComputeGuard():
                return model(*template.build(inputs))

        try:
            timed = timing.time_with_flush(forward, sets, device, iters=iters,
                                           warmup=self.spec["warmup"], refresh=refresh,
                                           observe_iterations=chosen, observe=observe)
        except ComputeViolation as exc:
            raise CandidateFailure("hacked", f"timing: {exc} (only while timed: phase detection)",
                                   "calls_torch") from exc
        except Exception as exc:
            raise CandidateFailure("runtime_error", f"timing: forward failed: "
                                   f"{describe_exception(exc)}", "", traceback.format_exc())
        self.verify_identities("after timing")
        spot_names = []
        for index, tensors_by_name in enumerate(spots):
            name = f"spot_{index}.safetensors"
            files.write_safetensors(self.path(name), tensors_by_name)
            spot_names.append(name)
        self.status["spot"] = spot_names
        self.status["spot_iterations"] = chosen
        self.status["timing"] = timed.as_json()
        self.status["timing_guarded"] = guarded
        self.status["method_overhead"] = timing.method_overhead(device).as_json()

    def run(self) -> dict:
        try:
            task, model_new = self.load()
            model = self.construct(task, model_new)
            self.check_sets(task, model)
            if self.spec["iters"] > 0:
                self.time_forward(task, model)
            self.status.update(status="ok", reason="")
        except CandidateFailure as failure:
            self.status.update(status=failure.status, reason=failure.reason,
                               traceback=failure.detail_traceback)
            if failure.kind:
                self.findings.append({"kind": failure.kind, "detail": failure.reason})
        self.status["violations"] = self.violations
        self.status["findings"] = self.findings
        return self.status


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", required=True)
    args = parser.parse_args(argv)
    with open(args.spec) as handle:
        spec = json.load(handle)
    candidate = _Candidate(spec)
    status = candidate.run()
    status_path = os.path.join(spec["exchange"], "status.json")
    try:
        files.write_json(status_path, status)
    except Exception:
        # The writer itself may have been tampered with: fall back to the builtin-free path.
        with open(status_path, "w") as handle:
            handle.write(json.dumps({"status": "hacked", "reason": "status writer broken"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
