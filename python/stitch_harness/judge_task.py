"""The judge's view of a captured task: the model, fresh inputs under secret seeds, and references.

Built on the capture's own loader (task_loader, task_inputs, graph_eval) so the judge constructs the
model exactly as capture and KernelBench do (seed, get_init_inputs(), seed, Model(*init_inputs)),
then loads weights.safetensors so the reference and the runner see identical parameters. Where the
weights give a value to every tensor the model holds, the seeded initialisation is skipped: the model
is built on the meta device and filled from the weights alone (JudgeTask._build_model).

References: without random inputs, the eager model (the program the user wrote); with random inputs
(random ops in forward, dropout masks), the captured graph evaluated with the random values as inputs,
the same rule capture uses for reference/outputs.safetensors, since the eager model would draw its
own random numbers. References are always computed with TF32 off (judge_tracks.STRICT_FLAGS);
only the recheck of a failed check on a loose track also computes them under the track's flags
(reference_on_track).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from typing import Any, Optional

import torch
from torch.utils._pytree import tree_flatten, tree_unflatten

from . import graph_eval
from .graph_build import DTYPE_NAMES, state_values, value_type
from .ipc import contiguous_strides
from .judge_kb_inputs import refresh_in_place
from .judge_tracks import STRICT_FLAGS, Track, baseline_flags, precision_flags
from .task_loader import build_model, load_task

DTYPES = {name: dtype for dtype, name in DTYPE_NAMES.items()}
KERNELBENCH_SEED = 42
# Inputs larger than this are made by get_inputs() directly on the GPU (torch.device context)
# instead of on the CPU and copied: a 6 GB CPU tensor per set costs host memory and seconds.
ON_DEVICE_INPUT_BYTES = 1 << 30


class JudgeTaskError(RuntimeError):
    pass


def secret_seed() -> int:
    """A seed nobody else can know: drawn from the OS, never written anywhere."""
    return int.from_bytes(os.urandom(8), "little")


def _state_value(model, name):
    """The value after a call of the state `name` names: a registered buffer, or a plain tensor
    attribute (capture registers those as buffers to export them; a fresh model holds them as
    attributes, which forward may rebind)."""
    buffers = dict(model.named_buffers())
    if name in buffers:
        return buffers[name]
    owner, _, attribute = name.rpartition(".")
    return getattr(model.get_submodule(owner) if owner else model, attribute)


def _restore_buffers(model: torch.nn.Module, snapshot: dict) -> None:
    with torch.no_grad():
        for name, buffer in model.named_buffers():
            if name in snapshot:
                buffer.copy_(snapshot[name])


def _weights_cover(model: torch.nn.Module, params: dict[str, torch.Tensor]) -> bool:
    """True when `params` gives a value to every tensor `model` holds: each state_dict entry is in
    `params` with its shape and dtype, no buffer is left out of the state_dict (non-persistent), and
    no module keeps a tensor outside its registered parameters and buffers (plain attributes, also
    inside lists, tuples and dicts)."""
    state = model.state_dict(keep_vars=True)
    for name, tensor in state.items():
        source = params.get(name)
        if source is None or source.shape != tensor.shape or source.dtype != tensor.dtype:
            return False
    registered = {id(t) for t in model.parameters()} | {id(t) for t in model.buffers()}
    if any(name not in state for name, _ in model.named_buffers()):
        return False
    for module in model.modules():
        for key, value in vars(module).items():
            if key in ("_parameters", "_buffers", "_modules"):
                continue
            leaves = tree_flatten(value)[0]
            if any(isinstance(leaf, torch.Tensor) and id(leaf) not in registered for leaf in leaves):
                return False
    return True


def _promote(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.to(torch.float64) if tensor.is_floating_point() else tensor


def tensor_bytes(entry: dict) -> int:
    itemsize = torch.empty((), dtype=DTYPES[entry["dtype"]]).element_size()
    return math.prod(entry["shape"]) * itemsize


def find_task_file(graph_dir: str, graph: dict, explicit: Optional[str]) -> str:
    """--task if given; else task.py beside graph.json (the run directory layout), the file named in
    graph.json, or the path capture.json recorded."""
    if explicit:
        return explicit
    candidates = [os.path.join(graph_dir, "task.py"),
                  os.path.join(graph_dir, graph.get("task", {}).get("file", "task.py"))]
    capture_json = os.path.join(graph_dir, "capture.json")
    if os.path.isfile(capture_json):
        with open(capture_json) as handle:
            recorded = json.load(handle).get("file")
        if recorded:
            candidates.append(recorded)
    for candidate in candidates:
        if os.path.isfile(candidate):
            return candidate
    raise JudgeTaskError(f"no task file found for {graph_dir} (tried {', '.join(candidates)}); "
                         "pass --task")


class JudgeTask:
    def __init__(self, graph_dir: str, device: torch.device, task_path: Optional[str] = None,
                 quick_construction: bool = True):
        self.graph_dir = graph_dir
        self.device = device
        with open(os.path.join(graph_dir, "graph.json")) as handle:
            self.graph = json.load(handle)
        self.task_path = find_task_file(graph_dir, self.graph, task_path)
        self.task = load_task(self.task_path)
        expected_sha = self.graph.get("task", {}).get("sha256")
        if expected_sha and expected_sha != self.task.sha256:
            raise JudgeTaskError(f"{self.task_path} (sha256 {self.task.sha256[:12]}…) is not the "
                                 f"file graph.json was captured from ({expected_sha[:12]}…)")
        self.training = bool(self.graph.get("training", True))
        self.params = self._load_params()
        # "weights": built on the meta device and filled from weights.safetensors alone;
        # "seeded": built as capture built it, then the weights loaded over it (_build_model).
        self.construction = ""
        self.model = self._build_model(quick_construction)
        self.model.train(self.training)
        # Training-mode BatchNorm updates running statistics on every call; restore them before each
        # reference call so every set sees the state the runner's params describe.
        self._buffer_snapshot = {name: buffer.detach().clone()
                                 for name, buffer in self.model.named_buffers()}
        # Buffers forward updates: after the user outputs, the ABI has one output per update, the
        # buffer's value after the call (docs/verify-protocol.md, "State updates").
        self.state_updates = self.graph.get("state_updates", [])
        self.user_inputs = [entry for entry in self.graph["inputs"] if entry["kind"] == "user"]
        self.random_inputs = [entry for entry in self.graph["inputs"] if entry["kind"] == "random"]
        self._call_spec = None  # pytree spec and non-tensor leaves of get_inputs(), once seen
        self._recorded_inputs: Optional[dict] = None
        self._fp64 = None  # (model, params, buffer snapshot) in FP64: reference_exact

    # Parameters -------------------------------------------------------------------------------

    def _load_params(self) -> dict[str, torch.Tensor]:
        import safetensors.torch

        path = os.path.join(self.graph_dir, "weights.safetensors")
        tensors = safetensors.torch.load_file(path) if os.path.isfile(path) else {}
        missing = [p["name"] for p in self.graph["params"] if p["name"] not in tensors]
        if missing:
            raise JudgeTaskError(f"weights.safetensors lacks params {missing[:5]}")
        return {p["name"]: tensors[p["name"]] for p in self.graph["params"]}

    def _build_model(self, quick: bool) -> torch.nn.Module:
        """The model on the judge's device with the captured weights.

        The seeded construction draws every parameter's initial values on the CPU (seconds for a
        GiB of weights) only for the weights to be loaded over them. When every tensor the model
        holds is a parameter or buffer that weights.safetensors holds too, those values are never
        seen, so the model is built on the meta device (no values at all), given uninitialised
        storage and filled from the weights. Anything else (a plain tensor attribute, a
        non-persistent buffer, a state entry the weights lack, a constructor that fails on meta)
        takes the seeded path, which is exact by construction."""
        inference = not self.training
        if quick:
            try:
                with torch.device("meta"):
                    model, _ = build_model(self.task, KERNELBENCH_SEED, inference=inference)
            except Exception:  # noqa: BLE001: the seeded path reports real failures
                model = None
            if model is not None and _weights_cover(model, self.params):
                model.to_empty(device=self.device)
                with torch.no_grad():
                    for name, tensor in model.state_dict().items():
                        tensor.copy_(self.params[name])
                self.construction = "weights"
                return model
        model, _ = build_model(self.task, KERNELBENCH_SEED, inference=inference)
        state = model.state_dict()
        with torch.no_grad():
            for name, tensor in self.params.items():
                if name in state and tuple(state[name].shape) == tuple(tensor.shape):
                    state[name].copy_(tensor)
        self.construction = "seeded"
        return model.to(self.device)

    def reset_buffers(self) -> None:
        _restore_buffers(self.model, self._buffer_snapshot)

    # Inputs -----------------------------------------------------------------------------------

    def input_bytes(self) -> int:
        return sum(tensor_bytes(entry) for entry in self.graph["inputs"])

    def _get_inputs_leaves(self, seed: int) -> list:
        on_device = self.device.type == "cuda" and self.input_bytes() > ON_DEVICE_INPUT_BYTES
        torch.manual_seed(seed)
        if on_device:
            with torch.device(self.device):
                raw = self.task.get_inputs()
        else:
            raw = self.task.get_inputs()
        leaves, spec = tree_flatten(list(raw))
        if self._call_spec is None:
            self._call_spec = (spec, [None if isinstance(leaf, torch.Tensor) else leaf
                                      for leaf in leaves])
        return leaves

    def draw_user_inputs(self, seed: int) -> list[torch.Tensor]:
        leaves = self._get_inputs_leaves(seed)
        tensors = [leaf for leaf in leaves if isinstance(leaf, torch.Tensor)]
        if len(tensors) != len(self.user_inputs):
            raise JudgeTaskError(f"get_inputs() returned {len(tensors)} tensors, graph.json has "
                                 f"{len(self.user_inputs)} user inputs")
        out = []
        for tensor, entry in zip(tensors, self.user_inputs):
            if list(tensor.shape) != entry["shape"] or tensor.dtype != DTYPES[entry["dtype"]]:
                raise JudgeTaskError(f"get_inputs() gave {entry['name']} {list(tensor.shape)} "
                                     f"{tensor.dtype}; graph.json says {entry['shape']} "
                                     f"{entry['dtype']}")
            out.append(tensor.to(self.device))
        return out

    def refresh_user_inputs(self, tensors: list[torch.Tensor]) -> None:
        """Re-randomizes user inputs in place for timing: on the device per their distribution,
        through get_inputs() only when one has none to redraw from (see refresh_in_place)."""
        redraw = [not refresh_in_place(t, e.get("distribution", "unknown"))
                  for t, e in zip(tensors, self.user_inputs)]
        if any(redraw):
            fresh = self.draw_user_inputs(secret_seed())
            for target, value, needed in zip(tensors, fresh, redraw):
                if needed:
                    target.copy_(value)

    def _recorded(self, index: int) -> torch.Tensor:
        if self._recorded_inputs is None:
            import safetensors.torch

            path = os.path.join(self.graph_dir, "reference", "inputs.safetensors")
            if not os.path.isfile(path):
                raise JudgeTaskError(f"input {index} is 'fixed' but {path} does not exist")
            self._recorded_inputs = safetensors.torch.load_file(path)
        return self._recorded_inputs[f"input{index}"]

    def draw_random_input(self, index: int, generator: torch.Generator) -> torch.Tensor:
        entry = self.graph["inputs"][index]
        dtype = DTYPES[entry["dtype"]]
        shape = entry["shape"]
        kind, _, rest = entry["distribution"].partition(":")
        device = self.device
        if kind == "rand":
            return torch.rand(shape, dtype=dtype, device=device, generator=generator)
        if kind == "randn":
            return torch.randn(shape, dtype=dtype, device=device, generator=generator)
        if kind == "randint":
            low, high = (int(v) for v in rest.split(":"))
            return torch.randint(low, high, shape, dtype=dtype, device=device, generator=generator)
        if kind == "bernoulli":
            keep = torch.rand(shape, device=device, generator=generator) < float(rest)
            return keep.to(dtype)
        if kind == "fixed":
            return self._recorded(index).to(device)
        raise JudgeTaskError(f"cannot draw input {entry['name']}: distribution "
                             f"'{entry['distribution']}'")

    def draw_inputs(self, seed: int) -> list[torch.Tensor]:
        """All graph inputs in graph.json order: user inputs from get_inputs() under `seed`, random
        inputs drawn per their distribution from a generator seeded from `seed`."""
        by_name = dict(zip((e["name"] for e in self.user_inputs), self.draw_user_inputs(seed)))
        generator = torch.Generator(device=self.device)
        generator.manual_seed(seed ^ 0x5DEECE66D)
        out = []
        for index, entry in enumerate(self.graph["inputs"]):
            if entry["kind"] == "user":
                out.append(by_name[entry["name"]])
            else:
                out.append(self.draw_random_input(index, generator))
        return out

    # References -------------------------------------------------------------------------------

    def call_args(self, user_tensors: list[torch.Tensor]) -> list:
        """get_inputs()'s structure with its tensors replaced by `user_tensors`."""
        if self._call_spec is None:
            self._get_inputs_leaves(secret_seed())
        spec, template = self._call_spec
        tensors = iter(user_tensors)
        leaves = [next(tensors) if leaf is None else leaf for leaf in template]
        return tree_unflatten(leaves, spec)

    def output_types(self) -> list[dict]:
        """The outputs as the program ABI has them (include/stitch/program.h): the reference's
        dtype and shape with contiguous strides. A reference that returns a view (a permute, a
        transpose) is compared by value; its strides are no part of what a program must write."""
        types = []
        for ref in self.graph["outputs"]:
            entry = value_type(self.graph, ref)
            types.append({**entry, "strides": contiguous_strides(entry["shape"])})
        for update in self.state_updates:
            entry = value_type(self.graph, update["value"])
            types.append({**entry, "strides": contiguous_strides(entry["shape"]),
                          "state": update["param"]})
        return types

    def device_params(self) -> dict[str, torch.Tensor]:
        if not hasattr(self, "_device_params"):
            self._device_params = {n: t.to(self.device) for n, t in self.params.items()}
        return self._device_params

    def reference(self, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
        """Reference outputs for graph-order `inputs` (not modified: the model gets clones)."""
        with precision_flags(STRICT_FLAGS):
            return self._evaluate(inputs, self.model, self.device_params(), self._buffer_snapshot,
                                  lambda t: t)

    def reference_exact(self, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
        """The reference computed in FP64 (floating inputs, params and buffers promoted), for
        compare.recheck_against_exact; outputs in graph order, as `reference`'s. The FP64 copies
        of the model and params are made on first use and kept."""
        if self._fp64 is None:
            import copy

            self.reset_buffers()
            self._fp64 = (copy.deepcopy(self.model).to(torch.float64),
                          {n: _promote(t) for n, t in self.device_params().items()},
                          {n: _promote(b) for n, b in self._buffer_snapshot.items()})
        return self._evaluate(inputs, *self._fp64, _promote)

    def reference_on_track(self, inputs: list[torch.Tensor], track: Track) -> list[torch.Tensor]:
        """The reference as PyTorch computes it on `track`: under its baseline flags and autocast
        dtype, as the baseline timer runs the model (judge_baseline), each output cast to the
        strict reference's dtype. compare.recheck_against_exact sizes a loose track's allowances
        by its error as well as the strict reference's (compare.needs_track_reference)."""
        autocast = (contextlib.nullcontext() if track.baseline_autocast_dtype is None
                    else torch.autocast(self.device.type, dtype=track.baseline_autocast_dtype))
        with precision_flags(baseline_flags(track)), autocast:
            outputs = self._evaluate(inputs, self.model, self.device_params(),
                                     self._buffer_snapshot, lambda t: t)
        return [output.to(DTYPES[entry["dtype"]])
                for output, entry in zip(outputs, self.output_types(), strict=True)]

    def _evaluate(self, inputs, model, params, buffer_snapshot, convert) -> list[torch.Tensor]:
        """The graph (with random inputs, which the model would draw itself) or the model on
        clones of `inputs`, each passed through `convert`, buffers restored first. After the
        outputs, the value of each updated buffer after this one call from the captured state."""
        with torch.no_grad():
            if self.random_inputs:
                graph = {**self.graph, "outputs": self.graph["outputs"] + state_values(self.graph)}
                outputs, _ = graph_eval.evaluate(graph, [convert(t.clone()) for t in inputs],
                                                 params, self.device)
            else:
                _restore_buffers(model, buffer_snapshot)
                user = [convert(t.clone()) for t, e in zip(inputs, self.graph["inputs"])
                        if e["kind"] == "user"]
                result = model(*self.call_args(user))
                outputs = [leaf for leaf in tree_flatten(result)[0]
                           if isinstance(leaf, torch.Tensor)]
                outputs += [_state_value(model, update["param"]).clone()
                            for update in self.state_updates]
        return [output.detach() for output in outputs]

    def forward_eager(self, user_tensors: list[torch.Tensor]) -> Any:
        """One eager call of the model (baselines): the model draws its own random numbers."""
        return self.model(*self.call_args(user_tensors))
