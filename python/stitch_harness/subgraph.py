"""A subgraph of a graph.json as something PyTorch can run: subtask-level coding checks an
LLM-written subtask against the reference outputs of its subgraph, alone.

The C++ side (src/plan/subgraph.h) cuts a subtask's nodes out of the plan's graph into a graph.json
of its own (inputs in0, in1, ... for the values it reads, outputs for the values it stores) and
writes a KernelBench-form task file around it whose Model is subgraph_model.SubgraphModel: capture,
judge and baselines then treat the subtask like any task. `python -m stitch_harness subgraph` evaluates such
a graph on given inputs (a safetensors file holding in0, in1, ...) and writes out0, out1, ...
"""
import json

DESCRIPTION = """Evaluate a graph.json (a subtask's subgraph) with PyTorch's ATen ops on the inputs
in a safetensors file (tensors in0, in1, ... in graph input order); the outputs are written as
out0, out1, ... to --out."""


def evaluate_file(graph_path, inputs_path, out_path, device="cpu"):
    """Evaluates the graph at graph_path on the tensors of inputs_path; writes the outputs."""
    from safetensors.torch import load_file

    from .files import write_safetensors
    from .graph_eval import evaluate
    with open(graph_path, encoding="utf-8") as f:
        graph = json.load(f)
    tensors = load_file(inputs_path, device=device)
    missing = [f"in{i}" for i in range(len(graph["inputs"])) if f"in{i}" not in tensors]
    if missing:
        raise ValueError(f"{inputs_path} lacks {', '.join(missing)}")
    inputs = [tensors[f"in{i}"] for i in range(len(graph["inputs"]))]
    outputs, _ = evaluate(graph, inputs, {}, device=device)
    write_safetensors(out_path, {f"out{i}": t.detach().contiguous().cpu() for i, t in enumerate(outputs)})
    return len(outputs)


def add_arguments(parser):
    parser.add_argument("--graph", required=True, help="the subgraph's graph.json")
    parser.add_argument("--inputs", required=True, help="safetensors with in0, in1, ...")
    parser.add_argument("--out", required=True, help="where out0, out1, ... are written")
    parser.add_argument("--device", default="cpu")


def run(args):
    count = evaluate_file(args.graph, args.inputs, args.out, args.device)
    print(json.dumps({"outputs": count, "out": args.out}))
    return 0
