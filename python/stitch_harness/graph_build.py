"""Convert a decomposed torch.export ExportedProgram into the graph.json structure.

The structure is plain Python (dicts, lists, numbers) that matches docs/graph-format.md one to one:
references are {"input": i}, {"param": name} or {"node": id, "out": k}; getitem nodes disappear into
the `out` of the reference; torch dtypes, devices and enums become small objects. Buffer updates that
forward makes (BatchNorm's running statistics and batch counter in training mode) become
`state_updates`: the buffer's name and the value it holds after one forward (docs/graph-format.md).
"""
import operator

import torch
from torch.export.graph_signature import InputKind, OutputKind

from .errors import CaptureError, Category

FORMAT = "stitchcuda.graph"
VERSION = 1

DTYPE_NAMES = {
    torch.float32: "float32", torch.float64: "float64", torch.float16: "float16",
    torch.bfloat16: "bfloat16", torch.int64: "int64", torch.int32: "int32", torch.int16: "int16",
    torch.int8: "int8", torch.uint8: "uint8", torch.bool: "bool",
}

# Nodes that only assert facts about values at run time; they produce nothing the program needs.
ASSERTION_OPS = {
    "aten._assert_tensor_metadata.default", "aten._assert_scalar.default", "aten._assert_async.msg",
    "aten._assert_async.default", "aten.sym_constrain_range.default",
    "aten.sym_constrain_range_for_size.default",
}

_PARAM_KINDS = {InputKind.PARAMETER: "parameter", InputKind.BUFFER: "buffer",
                InputKind.CONSTANT_TENSOR: "constant"}


def dtype_name(dtype):
    try:
        return DTYPE_NAMES[dtype]
    except KeyError:
        raise CaptureError(Category.decompose_failed, f"unsupported dtype {dtype}") from None


def tensor_type(tensor):
    return {"shape": [int(size) for size in tensor.shape], "dtype": dtype_name(tensor.dtype),
            "strides": [int(stride) for stride in tensor.stride()]}


def contiguous_type(tensor):
    shape = [int(size) for size in tensor.shape]
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return {"shape": shape, "dtype": dtype_name(tensor.dtype), "strides": strides[::-1]}


def node_ref(node_id, out=0):
    return {"node": node_id, "out": out}


_REF_KEY_SETS = ({"input"}, {"param"}, {"node"}, {"node", "out"})


def is_ref(value):
    """A value reference; other objects ({"dtype": ...}, {"float": "inf"}, ...) are not."""
    return isinstance(value, dict) and set(value) in _REF_KEY_SETS


def map_refs(value, mapping):
    """Copy of an argument with every reference r replaced by mapping(r) (None: keep).
    Pass a node's kwargs as a list of values: a kwarg may be named "input"."""
    if is_ref(value):
        replaced = mapping(value)
        return value if replaced is None else replaced
    if isinstance(value, list):
        return [map_refs(item, mapping) for item in value]
    if isinstance(value, dict):
        return {key: map_refs(item, mapping) for key, item in value.items()}
    return value


def iter_refs(value):
    if is_ref(value):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from iter_refs(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from iter_refs(item)


def _module_of(node):
    """Innermost nn.Module path and type from the node's nn_module_stack ('' for the root)."""
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return "", ""
    path, module_type = list(stack.values())[-1]
    if not path:
        return "", ""
    if isinstance(module_type, type):
        module_type = f"{module_type.__module__}.{module_type.__qualname__}"
    return str(path), str(module_type)


# An index range with constant bounds (the masks of torch.tril/triu, position ids) is data, not
# computation: it is folded into a constant param, so the program loads it like any other tensor
# and its consumers fuse as plain elementwise ops. Bounded, so a huge range stays a node.
_FOLDED_RANGES = {"aten.arange.default", "aten.arange.start", "aten.arange.start_step"}
MAX_FOLDED_RANGE_ELEMENTS = 1 << 22


def _op_name(node):
    target = node.target
    if isinstance(target, torch._ops.OpOverload):
        return str(target)  # "aten.relu.default"
    name = getattr(target, "__name__", repr(target))
    raise CaptureError(Category.decompose_failed,
                       f"node {node.name} calls {name}, which is not an ATen operator")


class _Converter:
    def __init__(self, exported):
        self.exported = exported
        self.refs = {}        # fx node name -> reference
        self.inputs = []
        self.params = []
        self.tensors = {}     # param name -> tensor (for weights.safetensors)
        self.input_positions = []  # graph input i is get_inputs()[input_positions[i]]
        self.specialized = []  # non-tensor user inputs baked into the graph
        self.nodes = []
        self.notes = []
        self.state_updates = []  # {"param": buffer, "value": ref}: what forward writes to buffers

    def value(self, arg):
        """One FX argument as a graph.json value."""
        if isinstance(arg, torch.fx.Node):
            try:
                return dict(self.refs[arg.name])
            except KeyError:
                raise CaptureError(Category.decompose_failed,
                                   f"node refers to {arg.name}, which is not defined before it") from None
        if arg is None or isinstance(arg, (bool, int, float, str)):
            return arg
        if isinstance(arg, (list, tuple, torch.Size)):
            return [self.value(item) for item in arg]
        if isinstance(arg, torch.dtype):
            return {"dtype": dtype_name(arg)}
        if isinstance(arg, torch.device):
            return {"device": str(arg)}
        if isinstance(arg, (torch.layout, torch.memory_format)):
            return {"enum": str(arg)}
        raise CaptureError(Category.decompose_failed,
                           f"cannot write an argument of type {type(arg).__name__} ({arg!r})")

    def placeholders(self):
        signature = self.exported.graph_signature
        state = self.exported.state_dict
        constants = self.exported.constants
        by_name = {node.name: node for node in self.exported.graph.nodes if node.op == "placeholder"}
        position = 0
        for spec in signature.input_specs:
            node = by_name[spec.arg.name]
            if spec.kind == InputKind.USER_INPUT:
                val = node.meta.get("val")
                if isinstance(val, torch.Tensor):
                    self.refs[node.name] = {"input": len(self.inputs)}
                    self.inputs.append({"name": node.name, "kind": "user", **tensor_type(val)})
                    self.input_positions.append(position)
                else:
                    self.specialized.append({"position": position, "name": node.name,
                                             "value": val if isinstance(val, (int, float, bool, str)) else repr(val)})
                position += 1
            elif spec.kind in _PARAM_KINDS:
                name = spec.target
                tensor = state[name] if name in state else constants[name]
                self.refs[node.name] = {"param": name}
                self.params.append({"name": name, "kind": _PARAM_KINDS[spec.kind], **contiguous_type(tensor)})
                self.tensors[name] = tensor
            else:
                raise CaptureError(Category.decompose_failed, f"unsupported graph input kind {spec.kind.name}")

    def call(self, node):
        if node.target is operator.getitem:
            source, index = node.args
            producer = self.refs[source.name]
            if "node" not in producer or producer.get("out", 0) != 0:
                raise CaptureError(Category.decompose_failed, f"getitem {node.name} of a non-node value")
            self.refs[node.name] = node_ref(producer["node"], int(index))
            return
        op = _op_name(node)
        val = node.meta.get("val")
        if isinstance(val, torch.Tensor):
            outputs = [tensor_type(val)]
        elif isinstance(val, (list, tuple)):
            outputs = [tensor_type(item) if isinstance(item, torch.Tensor) else None for item in val]
        elif val is None:
            outputs = []
        else:
            raise CaptureError(Category.decompose_failed,
                               f"node {node.name} ({op}) produces a {type(val).__name__}, not tensors")
        if self._fold_range(node, op, val):
            return
        module, module_type = _module_of(node)
        self.nodes.append({"id": node.name, "op": op, "args": self.value(list(node.args)),
                           "kwargs": {key: self.value(item) for key, item in node.kwargs.items()},
                           "outputs": outputs, "module": module, "module_type": module_type})
        self.refs[node.name] = node_ref(node.name)

    def _fold_range(self, node, op, val) -> bool:
        """A constant-bounded arange becomes the constant param `_range_<node>` (see _FOLDED_RANGES)."""
        if op not in _FOLDED_RANGES or not isinstance(val, torch.Tensor):
            return False
        bounds = list(node.args)
        if val.numel() > MAX_FOLDED_RANGE_ELEMENTS or not all(
                isinstance(b, (int, float)) and not isinstance(b, bool) for b in bounds):
            return False
        tensor = torch.arange(*bounds, dtype=val.dtype)
        if tuple(tensor.shape) != tuple(val.shape):
            return False
        name = f"_range_{node.name}"
        self.refs[node.name] = {"param": name}
        self.params.append({"name": name, "kind": "constant", **contiguous_type(tensor)})
        self.tensors[name] = tensor
        self.notes.append(f"{node.name} ({op}) folded into the constant {name}")
        return True

    def graph_outputs(self, node):
        outputs = []
        for spec, arg in zip(self.exported.graph_signature.output_specs, node.args[0]):
            if spec.kind == OutputKind.USER_OUTPUT:
                if not isinstance(arg, torch.fx.Node):
                    raise CaptureError(Category.decompose_failed,
                                       f"forward returns a non-tensor value ({arg!r})")
                outputs.append(self.value(arg))
            elif spec.kind == OutputKind.BUFFER_MUTATION:
                self._state_update(spec.target, arg)
            elif spec.kind == OutputKind.USER_INPUT_MUTATION:
                self.notes.append(f"dropped the in-place update of input {spec.target}")
            else:
                raise CaptureError(Category.decompose_failed, f"unsupported graph output kind {spec.kind.name}")
        return outputs

    def _state_update(self, buffer, arg):
        if not isinstance(arg, torch.fx.Node) or not any(p["name"] == buffer for p in self.params):
            raise CaptureError(Category.decompose_failed,
                               f"forward updates buffer {buffer} with a value that is not a tensor")
        value = self.value(arg)
        if value == {"param": buffer}:
            return  # written back unchanged
        self.state_updates.append({"param": buffer, "value": value})


def build_graph(exported, task, training):
    """The graph.json structure of `exported`, plus the param tensors and conversion notes.

    Random ops are still in the graph (see random_ops.replace_random_ops); dead nodes are too.
    Returns (graph, tensors, info): info has 'input_positions' (the get_inputs() index of each graph
    input), 'specialized_inputs' (non-tensor inputs, baked in) and 'notes'.
    """
    converter = _Converter(exported)
    converter.placeholders()
    outputs = None
    for node in exported.graph.nodes:
        if node.op == "call_function":
            converter.call(node)
        elif node.op == "output":
            outputs = converter.graph_outputs(node)
        elif node.op != "placeholder":
            raise CaptureError(Category.decompose_failed, f"unsupported FX node {node.op} ({node.name})")
    graph = {
        "format": FORMAT,
        "version": VERSION,
        "task": {"name": task.name, "file": task.file, "sha256": task.sha256, "constants": task.constants},
        "torch_version": torch.__version__.split("+")[0],
        "training": bool(training),
        "inputs": converter.inputs,
        "params": converter.params,
        "nodes": converter.nodes,
        "outputs": outputs or [],
    }
    if converter.state_updates:
        graph["state_updates"] = converter.state_updates
    info = {"input_positions": converter.input_positions, "specialized_inputs": converter.specialized,
            "notes": converter.notes}
    return graph, converter.tensors, info


def remove_dead_nodes(graph):
    """Drop assertion nodes and every node no output depends on (a new graph; nodes keep order)."""
    live = set()
    for ref in iter_refs(graph["outputs"] + state_values(graph)):
        if "node" in ref:
            live.add(ref["node"])
    kept = []
    for node in reversed(graph["nodes"]):
        if node["id"] in live and node["op"] not in ASSERTION_OPS:
            kept.append(node)
            for ref in iter_refs([node["args"], list(node["kwargs"].values())]):
                if "node" in ref:
                    live.add(ref["node"])
    return {**graph, "nodes": kept[::-1]}


def state_values(graph):
    """The values of the graph's state updates (buffers forward writes), in their order."""
    return [update["value"] for update in graph.get("state_updates", [])]


def value_type(graph, ref):
    """The tensor type (shape, dtype, strides) of a reference, or None if it has none."""
    if "input" in ref:
        return graph["inputs"][ref["input"]]
    if "param" in ref:
        return next((param for param in graph["params"] if param["name"] == ref["param"]), None)
    node = next((node for node in graph["nodes"] if node["id"] == ref["node"]), None)
    outputs = node["outputs"] if node else []
    out = ref.get("out", 0)
    return outputs[out] if 0 <= out < len(outputs) else None


def validate_graph(graph):
    """Problems with the graph's references and order (empty when valid): every reference names an
    existing input, param or *earlier* node output that is a tensor; node ids are unique."""
    problems = []
    params = {param["name"] for param in graph["params"]}
    outputs_of = {}

    def check(ref, where):
        if "input" in ref:
            if not (isinstance(ref["input"], int) and 0 <= ref["input"] < len(graph["inputs"])):
                problems.append(f"{where}: no input {ref['input']}")
        elif "param" in ref:
            if ref["param"] not in params:
                problems.append(f"{where}: no param {ref['param']}")
        else:
            outputs = outputs_of.get(ref["node"])
            out = ref.get("out", 0)
            if outputs is None:
                problems.append(f"{where}: node {ref['node']} is not defined before its use")
            elif not (0 <= out < len(outputs)) or outputs[out] is None:
                problems.append(f"{where}: node {ref['node']} has no tensor output {out}")

    for node in graph["nodes"]:
        if node["id"] in outputs_of:
            problems.append(f"node id {node['id']} appears twice")
        for ref in iter_refs([node["args"], list(node["kwargs"].values())]):
            check(ref, f"node {node['id']}")
        outputs_of[node["id"]] = node["outputs"]
    for ref in graph["outputs"]:
        if not is_ref(ref):
            problems.append(f"graph output {ref!r} is not a reference")
        else:
            check(ref, "graph outputs")
    buffers = {param["name"]: param for param in graph["params"] if param["kind"] == "buffer"}
    for update in graph.get("state_updates", []):
        where = f"state update of {update.get('param')!r}"
        buffer = buffers.get(update.get("param"))
        value = update.get("value")
        if buffer is None:
            problems.append(f"{where}: no buffer of that name")
        elif not is_ref(value):
            problems.append(f"{where}: value {value!r} is not a reference")
        else:
            known = len(problems)
            check(value, where)
            found = value_type(graph, value) if len(problems) == known else None
            if found and (found["shape"], found["dtype"]) != (buffer["shape"], buffer["dtype"]):
                problems.append(f"{where}: value is {found['dtype']}{found['shape']}, the buffer "
                                f"{buffer['dtype']}{buffer['shape']}")
    return problems
