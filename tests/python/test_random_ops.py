"""replace_random_ops and remove_dead_nodes on small hand-written graphs (no torch.export needed)."""
from stitch_harness.graph_build import remove_dead_nodes, validate_graph
from stitch_harness.random_ops import replace_random_ops

F32 = {"shape": [4, 8], "dtype": "float32", "strides": [8, 1]}
BOOL = {"shape": [4, 8], "dtype": "bool", "strides": [8, 1]}


def node(node_id, op, args, outputs=(F32,), kwargs=None):
    return {"id": node_id, "op": op, "args": args, "kwargs": kwargs or {}, "outputs": list(outputs),
            "module": "", "module_type": ""}


def graph_of(nodes, outputs):
    return {"inputs": [{"name": "x", "kind": "user", **F32, "distribution": "randn"}], "params": [],
            "nodes": nodes, "outputs": outputs}


def test_dropout_becomes_mask_input_and_two_multiplies():
    graph = graph_of([node("native_dropout", "aten.native_dropout.default", [{"input": 0}, 0.5, True],
                           outputs=(F32, BOOL))], [{"node": "native_dropout", "out": 0}])
    rewritten, sources, notes = replace_random_ops(graph)
    assert sources == [("native_dropout", 1)] and notes == []
    mask = rewritten["inputs"][1]
    assert (mask["name"], mask["dtype"], mask["distribution"]) == ("native_dropout_mask", "bool", "bernoulli:0.5")
    assert [(n["op"], n["args"]) for n in rewritten["nodes"]] == [
        ("aten.mul.Tensor", [{"input": 0}, {"input": 1}]),
        ("aten.mul.Tensor", [{"node": "native_dropout_masked", "out": 0}, 2.0])]
    assert rewritten["outputs"] == [{"node": "native_dropout_scaled", "out": 0}]
    assert validate_graph(rewritten) == []


def test_dropout_without_dropping_is_the_identity():
    graph = graph_of([node("native_dropout", "aten.native_dropout.default", [{"input": 0}, 0.0, True],
                           outputs=(F32, BOOL)),
                      node("relu", "aten.relu.default", [{"node": "native_dropout", "out": 0}])],
                     [{"node": "relu", "out": 0}])
    rewritten, sources, _ = replace_random_ops(graph)
    assert sources == [] and len(rewritten["inputs"]) == 1
    assert [(n["id"], n["args"]) for n in rewritten["nodes"]] == [("relu", [{"input": 0}])]


def test_random_factories_become_inputs_and_dead_ones_vanish():
    graph = graph_of([
        node("randint", "aten.randint.low", [0, 5, [4, 8]], outputs=({**F32, "dtype": "int64"},)),
        node("unused", "aten.rand.default", [[4, 8]]),
        node("normal", "aten.normal_functional.default", [{"input": 0}, 0.0, 2.0]),
        node("add", "aten.add.Tensor", [{"node": "randint", "out": 0}, {"node": "normal", "out": 0}]),
        node("assert", "aten._assert_tensor_metadata.default", [{"node": "add", "out": 0}], outputs=()),
        node("dead", "aten.exp.default", [{"input": 0}]),
    ], [{"node": "add", "out": 0}])
    rewritten, sources, _ = replace_random_ops(graph)
    assert sources == [("randint", 0), ("normal", 0)]
    assert [(i["name"], i["distribution"], i["source_op"]) for i in rewritten["inputs"][1:]] == [
        ("randint", "randint:0:5", "aten.randint.low"), ("normal", "unknown", "aten.normal_functional.default")]
    live = remove_dead_nodes(rewritten)
    assert [(n["id"], n["args"]) for n in live["nodes"]] == [("add", [{"input": 1}, {"input": 2}])]
    assert validate_graph(live) == []


def test_rnn_dropout_inside_the_op_is_noted():
    lstm = node("lstm", "aten.lstm.input", [{"input": 0}, [], [], True, 2, 0.3, True, False, True],
                outputs=(F32, F32, F32))
    _, _, notes = replace_random_ops(graph_of([lstm], [{"node": "lstm", "out": 0}]))
    assert notes and "dropout 0.3" in notes[0]
