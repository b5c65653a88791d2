"""graph_eval.evaluate on hand-written graphs: the FP64 evaluation capture checks an
ill-conditioned model's graph with, and the FP32 one it leaves as it was."""
import torch

from stitch_harness import graph_eval

# input0 + full([3], 0.1, dtype=float32), and full([3], 2, dtype=int64).
GRAPH = {
    "nodes": [
        {"id": "full", "op": "aten.full.default", "args": [[3], 0.1],
         "kwargs": {"dtype": {"dtype": "float32"}}},
        {"id": "add", "op": "aten.add.Tensor", "args": [{"input": 0}, {"node": "full", "out": 0}],
         "kwargs": {}},
        {"id": "count", "op": "aten.full.default", "args": [[3], 2],
         "kwargs": {"dtype": {"dtype": "int64"}}},
    ],
    "outputs": [{"node": "add", "out": 0}, {"node": "count", "out": 0}],
}


def test_float32_evaluation_creates_float32():
    (total, count), _ = graph_eval.evaluate(GRAPH, [torch.ones(3)], {})
    assert total.dtype == torch.float32 and count.dtype == torch.int64
    assert torch.equal(total, torch.full((3,), 1.0 + torch.tensor(0.1).item()))


def test_float64_evaluation_creates_float64_where_the_graph_says_float32():
    (total, count), _ = graph_eval.evaluate(GRAPH, [torch.ones(3, dtype=torch.float64)], {},
                                            float32_as=torch.float64)
    assert total.dtype == torch.float64 and count.dtype == torch.int64
    # 0.1 kept at double precision: an FP32 constant would be 1.5e-9 off.
    assert torch.equal(total, torch.full((3,), 1.1, dtype=torch.float64))


# view(transpose(input0, 0, 1), [6]): the graph's view of a tensor laid out otherwise than where
# it was traced (a device's kernel chose the layout) still evaluates, to the view's values.
VIEW_OF_TRANSPOSED = {
    "nodes": [
        {"id": "t", "op": "aten.transpose.int", "args": [{"input": 0}, 0, 1], "kwargs": {}},
        {"id": "flat", "op": "aten.view.default", "args": [{"node": "t", "out": 0}, [6]],
         "kwargs": {}},
    ],
    "outputs": [{"node": "flat", "out": 0}],
}


def test_a_view_of_a_tensor_laid_out_otherwise_evaluates_to_its_values():
    x = torch.arange(6.0).reshape(2, 3)
    try:
        x.t().view(6)
    except RuntimeError as error:
        assert "view size is not compatible" in str(error)
    else:
        raise AssertionError("torch views a transposed tensor: the case this test covers is gone")
    (flat,), _ = graph_eval.evaluate(VIEW_OF_TRANSPOSED, [x], {})
    assert torch.equal(flat, torch.tensor([0.0, 3.0, 1.0, 4.0, 2.0, 5.0]))
