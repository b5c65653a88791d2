"""Subtask-level coding's harness side: a subtask's subgraph (as src/plan/subgraph.cc writes it) run
by SubgraphModel, exported like any task, and evaluated on given inputs by `stitch_harness
subgraph`."""
import json

import torch
from safetensors.torch import load_file, save_file

from conftest import REPO, run_harness
from stitch_harness.subgraph_model import SubgraphModel, subgraph_inputs


def logcumsumexp_subgraph():
    """The cumsum node of tests/tasks/hybrid_logcumsumexp.py cut out as the C++ side does: its argument
    is input in0, its value the output."""
    graph = json.loads((REPO / "tests" / "plan" / "data" / "hybrid_logcumsumexp.graph.json").read_text())
    node = next(n for n in graph["nodes"] if n["op"] == "aten.logcumsumexp.default")
    node = dict(node, args=[{"input": 0}] + node["args"][1:])
    spec = {"shape": [32, 128], "dtype": "float32", "strides": [128, 1]}
    return dict(graph, inputs=[dict(spec, name="in0", kind="user", distribution="randn")],
                params=[], nodes=[node], outputs=[{"node": node["id"]}])


def test_subgraph_model_computes_the_nodes():
    graph = logcumsumexp_subgraph()
    (x,) = subgraph_inputs(graph)
    assert x.shape == (32, 128) and x.dtype == torch.float32
    assert torch.equal(SubgraphModel(graph)(x), torch.logcumsumexp(x, dim=1))


def test_subgraph_model_exports_like_a_task():
    graph = logcumsumexp_subgraph()
    exported = torch.export.export(SubgraphModel(graph), tuple(subgraph_inputs(graph)), strict=False)
    ops = [str(node.target) for node in exported.graph.nodes if node.op == "call_function"]
    assert ops == ["aten.logcumsumexp.default"]


def test_subgraph_command_evaluates_given_inputs(tmp_path):
    graph_path = tmp_path / "graph.json"
    graph_path.write_text(json.dumps(logcumsumexp_subgraph()))
    x = torch.randn(32, 128)
    save_file({"in0": x}, tmp_path / "in.safetensors")
    process = run_harness("subgraph", "--graph", graph_path, "--inputs", tmp_path / "in.safetensors",
                          "--out", tmp_path / "out.safetensors")
    assert process.returncode == 0, process.stderr
    assert json.loads(process.stdout)["outputs"] == 1
    assert torch.equal(load_file(tmp_path / "out.safetensors")["out0"], torch.logcumsumexp(x, dim=1))


def test_subgraph_command_names_missing_inputs(tmp_path):
    graph_path = tmp_path / "graph.json"
    graph_path.write_text(json.dumps(logcumsumexp_subgraph()))
    save_file({"other": torch.zeros(1)}, tmp_path / "in.safetensors")
    process = run_harness("subgraph", "--graph", graph_path, "--inputs", tmp_path / "in.safetensors",
                          "--out", tmp_path / "out.safetensors")
    assert process.returncode != 0
    assert "lacks in0" in process.stderr
