"""The Model of a subtask's task file (subgraph.py says what it is for): a subgraph of a graph.json
evaluated node by node with PyTorch's ATen ops, and random inputs of its shapes."""
import torch
import torch.nn as nn

from .graph_eval import _DTYPES, _Decoder, resolve_op


class SubgraphModel(nn.Module):
    """Evaluates `graph` (a graph.json document without params) on its inputs, node by node."""

    def __init__(self, graph):
        super().__init__()
        if graph.get("params"):
            raise ValueError("a subgraph task takes every value it reads as an input, not a param")
        self.graph = graph

    def forward(self, *inputs):
        # graph_eval.evaluate's loop without its no_grad block: torch.export would keep that as a
        # set_grad_enabled region around the ops instead of the ops themselves.
        values = {}
        decode = _Decoder(list(inputs), {}, values, str(inputs[0].device if inputs else "cpu"))
        for node in self.graph["nodes"]:
            op = resolve_op(node["op"])
            result = op(*decode(node["args"]), **{k: decode(v) for k, v in node["kwargs"].items()})
            values[node["id"]] = list(result) if isinstance(result, (list, tuple)) else [result]
        outputs = [decode(ref) for ref in self.graph["outputs"]]
        return outputs[0] if len(outputs) == 1 else tuple(outputs)


def subgraph_inputs(graph):
    """Random inputs of the subgraph's shapes and dtypes (get_inputs(); the judge draws its own)."""
    inputs = []
    for spec in graph["inputs"]:
        dtype = _DTYPES[spec["dtype"]]
        shape = spec["shape"]
        if dtype.is_floating_point:
            inputs.append(torch.randn(shape, dtype=dtype))
        elif dtype == torch.bool:
            inputs.append(torch.rand(shape) < 0.5)
        else:
            inputs.append(torch.randint(0, 16, shape, dtype=dtype))
    return inputs
