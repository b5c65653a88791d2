"""StitchCUDA's PyTorch harness: capture KernelBench tasks into graph.json (docs/graph-format.md),
weights and reference outputs. Run `python -m stitch_harness --help`."""

from stitch_harness import task_limits as _task_limits

_task_limits.apply()
