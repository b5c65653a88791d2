"""The files capture writes: graph.json against docs/graph-format.md, weights, reference, and a
re-run of every captured graph from its files that must reproduce the reference outputs."""
import json
import math
import re

import pytest
import torch
from safetensors.torch import load_file

from conftest import GOOD_TASKS, read_json
from stitch_harness import files, graph_eval
from stitch_harness.graph_build import is_ref, iter_refs, validate_graph

TOP_KEYS = ["format", "version", "task", "torch_version", "training", "inputs", "params", "nodes", "outputs"]
DTYPES = {"float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool"}


def _tensor_type_ok(entry):
    return (entry["dtype"] in DTYPES and all(isinstance(x, int) for x in entry["shape"])
            and len(entry["strides"]) == len(entry["shape"]))


def _check_value(value, where):
    """Every argument is one of the kinds the format lists."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return
    if isinstance(value, list):
        for item in value:
            _check_value(item, where)
        return
    assert isinstance(value, dict), where
    if is_ref(value):
        return
    assert len(value) == 1, (where, value)
    (key, item), = value.items()
    if key == "float":
        assert item in ("inf", "-inf", "nan"), where
    elif key == "dtype":
        assert item in DTYPES, where
    else:
        assert key in ("device", "enum") and isinstance(item, str), (where, value)


@pytest.mark.parametrize("task", [path.stem for path in GOOD_TASKS])
def test_graph_json_follows_the_format(batch, task):
    graph = batch.graph(task)
    # state_updates (buffers forward writes), when there are any, come last.
    assert list(graph) == TOP_KEYS + (["state_updates"] if "state_updates" in graph else [])
    assert graph["format"] == "stitchcuda.graph" and graph["version"] == 1
    assert validate_graph(graph) == []
    for item in graph["inputs"]:
        assert item["kind"] in ("user", "random") and _tensor_type_ok(item)
        assert ("source_op" in item) == (item["kind"] == "random")
    for param in graph["params"]:
        assert param["kind"] in ("parameter", "buffer", "constant") and _tensor_type_ok(param)
    for node in graph["nodes"]:
        assert set(node) == {"id", "op", "args", "kwargs", "outputs", "module", "module_type"}
        assert re.fullmatch(r"aten\.\w+\.\w+", node["op"]), node["op"]
        assert all(out is None or _tensor_type_ok(out) for out in node["outputs"])
        _check_value(node["args"], node["id"])
        _check_value(list(node["kwargs"].values()), node["id"])
        assert not any(op in node["op"] for op in ("getitem", "rand", "dropout", "_assert"))
    assert graph["outputs"] and all(is_ref(ref) for ref in graph["outputs"])


@pytest.mark.parametrize("task", [path.stem for path in GOOD_TASKS])
def test_weights_match_params(batch, task):
    graph = batch.graph(task)
    weights = load_file(str(batch.dir(task) / "weights.safetensors"))
    assert set(weights) == {param["name"] for param in graph["params"]}
    for param in graph["params"]:
        tensor = weights[param["name"]]
        assert list(tensor.shape) == param["shape"]
        assert str(tensor.dtype).replace("torch.", "") == param["dtype"]


@pytest.mark.parametrize("task", [path.stem for path in GOOD_TASKS])
def test_graph_reproduces_reference_from_files(batch, task):
    folder = batch.dir(task)
    graph = batch.graph(task)
    record = read_json(folder / "reference" / "reference.json")
    assert record["precision"]["tf32_matmul"] is False and record["seed"] == 42
    inputs = load_file(str(folder / "reference" / "inputs.safetensors"))
    outputs = load_file(str(folder / "reference" / "outputs.safetensors"))
    assert sorted(inputs) == [f"input{i}" for i in range(len(graph["inputs"]))]
    assert sorted(outputs) == [f"output{i}" for i in range(len(graph["outputs"]))]
    weights = load_file(str(folder / "weights.safetensors"))
    ordered = [inputs[f"input{i}"] for i in range(len(graph["inputs"]))]
    for tensor, item in zip(ordered, graph["inputs"]):
        assert list(tensor.shape) == item["shape"]
    results, _ = graph_eval.evaluate(graph, ordered, weights)
    for index, result in enumerate(results):
        expected = outputs[f"output{index}"]
        assert result.shape == expected.shape
        torch.testing.assert_close(result, expected, rtol=1e-4, atol=1e-4)


def test_random_values_change_the_output(batch):
    """The recorded noise is really used: other noise gives other outputs."""
    folder = batch.dir("random_in_forward")
    graph = batch.graph("random_in_forward")
    inputs = load_file(str(folder / "reference" / "inputs.safetensors"))
    weights = load_file(str(folder / "weights.safetensors"))
    expected = load_file(str(folder / "reference" / "outputs.safetensors"))["output0"]
    other_noise = torch.randn_like(inputs["input1"])
    results, _ = graph_eval.evaluate(graph, [inputs["input0"], other_noise], weights)
    assert not torch.allclose(results[0], expected)
    torch.testing.assert_close(results[0] - expected, 0.1 * (other_noise - inputs["input1"]),
                               rtol=1e-4, atol=1e-5)


def test_floats_are_written_with_a_decimal_point():
    text = files.dumps_json({"a": 1.0, "b": 1e-05, "c": 3, "d": float("inf"), "e": [float("-inf"), float("nan")]})
    assert json.loads(text) == {"a": 1.0, "b": 1e-05, "c": 3, "d": {"float": "inf"},
                                "e": [{"float": "-inf"}, {"float": "nan"}]}
    assert '"a": 1.0' in text and '"c": 3' in text


def test_float_arguments_in_graph_json_keep_their_decimal_point(batch):
    text = (batch.dir("conv_bn_relu") / "graph.json").read_text()
    bn_args = next(node["args"] for node in json.loads(text)["nodes"]
                   if "batch_norm" in node["op"])
    assert bn_args[6:] == [0.1, 1e-05]
    assert re.search(r"\b0\.1\b", text) and "1e-05" in text
    for node in json.loads(text)["nodes"]:
        for value in node["args"]:
            if isinstance(value, float):
                assert math.isfinite(value)


def test_references_are_topological(batch):
    """Every node reference points to an earlier node, checked directly on the file."""
    for path in GOOD_TASKS:
        graph = batch.graph(path.stem)
        seen = set()
        for node in graph["nodes"]:
            for ref in iter_refs([node["args"], list(node["kwargs"].values())]):
                if "node" in ref:
                    assert ref["node"] in seen, (path.stem, node["id"], ref)
            seen.add(node["id"])


def test_validate_graph_finds_bad_references():
    graph = {"inputs": [], "params": [], "outputs": [{"node": "b", "out": 0}],
             "nodes": [{"id": "a", "op": "aten.relu.default", "args": [{"node": "b", "out": 0}], "kwargs": {},
                        "outputs": [{"shape": [1], "dtype": "float32", "strides": [1]}]},
                       {"id": "b", "op": "aten.relu.default", "args": [{"input": 3}], "kwargs": {},
                        "outputs": [{"shape": [1], "dtype": "float32", "strides": [1]}]}]}
    problems = validate_graph(graph)
    assert any("not defined before" in problem for problem in problems)
    assert any("no input 3" in problem for problem in problems)
