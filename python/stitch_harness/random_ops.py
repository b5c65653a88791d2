"""Random ops inside forward become graph inputs of kind `random` (docs/graph-format.md).

A generated program must not draw its own random numbers (its results could never be checked), so
each random op is cut out of the graph and its value becomes an input that the judge supplies: the
reference run records the value, and `distribution` says how to draw fresh ones. Dropout in training
mode (aten.native_dropout) becomes a boolean keep-mask input and two multiplies, the same arithmetic
the ATen kernel does: output = input * mask * (1 / (1 - p)).
"""
from .graph_build import iter_refs, map_refs, node_ref

# op -> function(args, kwargs) giving the distribution of its output 0.
def _randint_low(args, kwargs):
    return f"randint:{args[0]}:{args[1]}"


def _randint_high(args, kwargs):
    return f"randint:0:{args[0]}"


def _randint_like_low(args, kwargs):
    return f"randint:{args[1]}:{args[2]}"


def _randint_like_high(args, kwargs):
    return f"randint:0:{args[1]}"


def _normal(args, kwargs):
    mean = args[1] if len(args) > 1 else kwargs.get("mean", 0.0)
    std = args[2] if len(args) > 2 else kwargs.get("std", 1.0)
    return "randn" if (mean, std) == (0.0, 1.0) else "unknown"


def _uniform(args, kwargs):
    low = args[1] if len(args) > 1 else kwargs.get("from", 0.0)
    high = args[2] if len(args) > 2 else kwargs.get("to", 1.0)
    return "rand" if (low, high) == (0.0, 1.0) else "unknown"


def _bernoulli_p(args, kwargs):
    p = args[1] if len(args) > 1 else kwargs.get("p", 0.5)
    return f"bernoulli:{float(p)}"


def _fixed(distribution):
    return lambda args, kwargs: distribution


RANDOM_OPS = {
    "aten.rand.default": _fixed("rand"),
    "aten.rand.generator": _fixed("rand"),
    "aten.rand_like.default": _fixed("rand"),
    "aten.randn.default": _fixed("randn"),
    "aten.randn.generator": _fixed("randn"),
    "aten.randn_like.default": _fixed("randn"),
    "aten.randint.low": _randint_low,
    "aten.randint.default": _randint_high,
    "aten.randint_like.low_dtype": _randint_like_low,
    "aten.randint_like.default": _randint_like_high,
    "aten.normal_functional.default": _normal,
    "aten.normal.Tensor_Tensor": _fixed("unknown"),
    "aten.normal.Tensor_float": _fixed("unknown"),
    "aten.normal.float_Tensor": _fixed("unknown"),
    "aten.normal.float_float": _fixed("unknown"),
    "aten.uniform.default": _uniform,
    "aten.bernoulli.p": _bernoulli_p,
    "aten.bernoulli.default": _fixed("unknown"),
    "aten.bernoulli.Tensor": _fixed("unknown"),
    "aten.randperm.default": _fixed("unknown"),
    "aten.multinomial.default": _fixed("unknown"),
    "aten.exponential.default": _fixed("unknown"),
    "aten.poisson.default": _fixed("unknown"),
}
DROPOUT_OP = "aten.native_dropout.default"
def _unique_id(base, taken):
    candidate, suffix = base, 1
    while candidate in taken:
        candidate, suffix = f"{base}_{suffix}", suffix + 1
    taken.add(candidate)
    return candidate


def _internal_randomness(node):
    """A note when a kept-whole op draws random numbers inside itself (dropout > 0 in training)."""
    if node["op"].startswith(("aten.lstm", "aten.gru", "aten.rnn_")):
        args = node["args"]
        # (input, hx, params, has_biases, num_layers, dropout, train, ...)
        dropout, train = (args[5], args[6]) if len(args) > 6 else (0.0, False)
        if train is True and dropout not in (0, 0.0):
            return f"{node['id']} ({node['op']}) applies dropout {dropout} between layers internally"
    if node["op"] == "aten.scaled_dot_product_attention.default":
        dropout = node["args"][4] if len(node["args"]) > 4 else node["kwargs"].get("dropout_p", 0.0)
        if dropout not in (0, 0.0):
            return f"{node['id']} (scaled_dot_product_attention) applies dropout {dropout} internally"
    return None


def replace_random_ops(graph):
    """Cut random ops out of `graph`.

    Returns (new_graph, sources, notes): sources[i] is the (node id, out) of the *input* graph whose
    value the i-th new random input takes, so a run of the input graph can record the values.
    """
    taken = {node["id"] for node in graph["nodes"]}  # node ids (new dropout nodes need fresh ones)
    input_names = {item["name"] for item in graph["inputs"]}
    inputs = list(graph["inputs"])
    sources = []
    notes = []
    substitutions = {}  # (node id, out) -> replacement reference
    nodes = []

    used = set()
    for ref in iter_refs([[n["args"], list(n["kwargs"].values())] for n in graph["nodes"]] + [graph["outputs"]]):
        if "node" in ref:
            used.add((ref["node"], ref.get("out", 0)))

    def substitute(ref):
        if "node" in ref:
            return substitutions.get((ref["node"], ref.get("out", 0)))
        return None

    def add_input(name, node, out_type, distribution):
        inputs.append({"name": _unique_id(name, input_names), "kind": "random", **out_type,
                       "distribution": distribution, "source_op": node["op"]})
        return {"input": len(inputs) - 1}

    for node in graph["nodes"]:
        node = {**node, "args": map_refs(node["args"], substitute),
                "kwargs": dict(zip(node["kwargs"], map_refs(list(node["kwargs"].values()), substitute)))}
        op = node["op"]
        if op in RANDOM_OPS:
            if (node["id"], 0) not in used:
                continue  # a dead random op: nothing to record
            distribution = RANDOM_OPS[op](node["args"], node["kwargs"])
            substitutions[(node["id"], 0)] = add_input(node["id"], node, node["outputs"][0], distribution)
            sources.append((node["id"], 0))
        elif op == DROPOUT_OP:
            mask_used = (node["id"], 1) in used
            nodes.extend(_replace_dropout(node, mask_used, add_input, substitutions, sources, taken))
        else:
            note = _internal_randomness(node)
            if note:
                notes.append(note)
            nodes.append(node)
    outputs = map_refs(graph["outputs"], substitute)
    return {**graph, "inputs": inputs, "nodes": nodes, "outputs": outputs}, sources, notes


def _replace_dropout(node, mask_used, add_input, substitutions, sources, taken):
    """native_dropout(x, p, train) -> (x * mask * scale, mask) with mask a random bool input.
    Without dropping (p == 0 or not training) the output is x itself and no mask is drawn unless
    something uses it."""
    x, p = node["args"][0], float(node["args"][1])
    train = node["args"][2] if len(node["args"]) > 2 else node["kwargs"].get("train")
    out_type, mask_type = node["outputs"][0], node["outputs"][1]
    node_id = node["id"]
    if train is False:
        p = 0.0
    if p == 0.0:
        substitutions[(node_id, 0)] = x
        if not mask_used:
            return []
    keep = 1.0 - p
    mask = add_input(f"{node_id}_mask", node, mask_type, f"bernoulli:{keep}")
    sources.append((node_id, 1))
    substitutions[(node_id, 1)] = mask
    if (node_id, 0) in substitutions:
        return []
    masked_id = _unique_id(f"{node_id}_masked", taken)
    scaled_id = _unique_id(f"{node_id}_scaled", taken)
    scale = 1.0 / keep if keep > 0.0 else 0.0
    common = {"kwargs": {}, "outputs": [out_type], "module": node["module"], "module_type": node["module_type"]}
    substitutions[(node_id, 0)] = node_ref(scaled_id)
    return [{"id": masked_id, "op": "aten.mul.Tensor", "args": [x, mask], **common},
            {"id": scaled_id, "op": "aten.mul.Tensor", "args": [node_ref(masked_id), scale], **common}]
