"""Evaluate a graph.json structure with PyTorch's ATen ops, node by node.

This runs exactly what the file says (op names, arguments, references), so comparing its result with
the eager model checks the captured graph end to end. Values are freed after their last use, which
keeps the peak memory of a deep network near that of eager execution. In FP64 (evaluate's
`float32_as`), the graph computes what it says at double precision: capture checks the graph of an
ill-conditioned model that way (reference.py), where FP32 rounding alone separates graph and model.
"""
import torch

from .graph_build import is_ref

_DTYPES = {"float32": torch.float32, "float64": torch.float64, "float16": torch.float16,
           "bfloat16": torch.bfloat16, "int64": torch.int64, "int32": torch.int32,
           "int16": torch.int16, "int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool}
_FLOATS = {"inf": float("inf"), "-inf": float("-inf"), "nan": float("nan")}


def resolve_op(name):
    """'aten.relu.default' -> torch.ops.aten.relu.default."""
    namespace, op, overload = name.split(".")
    return getattr(getattr(getattr(torch.ops, namespace), op), overload)


# The graph was traced on the CPU, whose kernels laid its tensors out as it recorded; another
# device's kernels may lay an op's result out otherwise (the same shape, other strides), and a view
# the graph took of it then fails ("view size is not compatible with input tensor's size and
# stride": ViT's captured graph on the GPU). reshape gives the view's values whatever the layout
# (a view where one can be taken, else a copy).
_VIEWS = {torch.ops.aten.view.default, torch.ops.aten._unsafe_view.default}


def _node_op(name):
    op = resolve_op(name)
    return torch.ops.aten.reshape.default if op in _VIEWS else op


class _Decoder:
    def __init__(self, inputs, params, values, device, float32_as=torch.float32):
        self.inputs = inputs
        self.params = params
        self.values = values
        self.device = device
        self.float32_as = float32_as

    def __call__(self, arg):
        if isinstance(arg, list):
            return [self(item) for item in arg]
        if not isinstance(arg, dict):
            return arg
        if is_ref(arg):
            if "input" in arg:
                return self.inputs[arg["input"]]
            if "param" in arg:
                return self.params[arg["param"]]
            return self.values[arg["node"]][arg.get("out", 0)]
        if "dtype" in arg:
            dtype = _DTYPES[arg["dtype"]]
            return self.float32_as if dtype == torch.float32 else dtype
        if "device" in arg:
            # The graph was traced on the CPU; it runs wherever the caller evaluates it.
            return torch.device(self.device)
        if "float" in arg:
            return _FLOATS[arg["float"]]
        if "enum" in arg:
            owner, _, name = arg["enum"].rpartition(".")
            if owner != "torch":
                raise ValueError(f"unknown enum {arg['enum']}")
            return getattr(torch, name)
        raise ValueError(f"unknown argument object {arg}")


def _last_uses(graph):
    last = {}
    for index, node in enumerate(graph["nodes"]):
        for ref in _refs([node["args"], list(node["kwargs"].values())]):
            if "node" in ref:
                last[ref["node"]] = index
    return last


def _refs(value):
    if is_ref(value):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _refs(item)


def evaluate(graph, inputs, params, device="cpu", record=(), float32_as=torch.float32):
    """Run `graph` on `inputs` (list of tensors, graph input order) and `params` (name -> tensor).

    record: (node id, out) pairs whose values to keep. float32_as: the dtype every float32 the graph
    names stands for (a tensor it creates, a conversion); torch.float64, with float64 inputs and
    params, evaluates the graph in FP64. Returns (outputs, recorded dict).
    """
    values = {}
    decode = _Decoder(inputs, params, values, device, float32_as)
    keep = {node_id for node_id, _ in record} | {ref["node"] for ref in _refs(graph["outputs"]) if "node" in ref}
    last_use = _last_uses(graph)
    recorded = {}
    with torch.no_grad():
        for index, node in enumerate(graph["nodes"]):
            op = _node_op(node["op"])
            result = op(*decode(node["args"]), **{key: decode(value) for key, value in node["kwargs"].items()})
            if isinstance(result, (list, tuple)):
                values[node["id"]] = list(result)
            elif result is None:
                values[node["id"]] = []
            else:
                values[node["id"]] = [result]
            for ref in _refs([node["args"], list(node["kwargs"].values())]):
                name = ref.get("node")
                if name is not None and last_use.get(name) == index and name not in keep:
                    values.pop(name, None)
        for node_id, out in record:
            recorded[(node_id, out)] = values[node_id][out]
        outputs = [decode(ref) for ref in graph["outputs"]]
    return outputs, recorded
