"""Unusual get_inputs(): plain values and nested tuples beside tensors, non-contiguous tensors, and a
get_inputs() that reads tensor values (so it cannot run on fake tensors and runs for real)."""
import json
import textwrap

import torch
from safetensors.torch import load_file

from conftest import read_json, run_harness

MIXED = """\
    import torch
    import torch.nn as nn
    class Model(nn.Module):
        def forward(self, x, n, pair):
            a, b = pair
            return x * n + a - b, x.sum(dim=1)
    def get_inputs():
        return [torch.randn(4, 8), 3, (torch.ones(4, 8), torch.arange(8.0).expand(4, 8))]
    def get_init_inputs():
        return []
    """
READS_VALUES = """\
    import torch
    import torch.nn as nn
    class Model(nn.Module):
        def forward(self, x):
            return x + 1
    def get_inputs():
        rows = int(torch.randint(3, 5, (1,)).item())
        return [torch.randn(rows, 8).t()]
    def get_init_inputs():
        return []
    """


def test_mixed_and_value_reading_inputs(tmp_path):
    (tmp_path / "mixed.py").write_text(textwrap.dedent(MIXED))
    (tmp_path / "reads_values.py").write_text(textwrap.dedent(READS_VALUES))
    out = tmp_path / "out"
    process = run_harness("capture-batch", "--out", out, tmp_path / "mixed.py", tmp_path / "reads_values.py")
    assert process.returncode == 0, process.stderr
    assert {json.loads(line)["status"] for line in process.stdout.splitlines()} == {"captured"}

    graph = read_json(out / "mixed" / "graph.json")
    # The int is baked into the graph; the tuple's tensors are inputs in pytree order, contiguous.
    assert [(item["name"], item["distribution"], item["strides"]) for item in graph["inputs"]] == [
        ("x", "randn", [8, 1]), ("pair_0", "fixed", [8, 1]), ("pair_1", "fixed", [8, 1])]
    assert read_json(out / "mixed" / "capture.json")["specialized_inputs"] == [
        {"position": 1, "name": "n", "value": 3}]
    assert len(graph["outputs"]) == 2
    inputs = load_file(str(out / "mixed" / "reference" / "inputs.safetensors"))
    outputs = load_file(str(out / "mixed" / "reference" / "outputs.safetensors"))
    expected = inputs["input0"] * 3 + inputs["input1"] - inputs["input2"]
    torch.testing.assert_close(outputs["output0"], expected)
    torch.testing.assert_close(inputs["input2"][1], torch.arange(8.0))

    graph = read_json(out / "reads_values" / "graph.json")
    assert graph["inputs"][0]["shape"] in ([8, 3], [8, 4])
    assert graph["inputs"][0]["strides"] == [graph["inputs"][0]["shape"][1], 1]
    assert graph["inputs"][0]["distribution"] == "randn"  # .t() keeps the distribution
