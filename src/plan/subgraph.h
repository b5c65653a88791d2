// One subtask's subgraph as a graph of its own: what subtask-level coding checks an LLM-written
// subtask against, alone, before it is stitched into the program. The Python harness evaluates
// it (python/stitch_harness/subgraph.py: a KernelBench-form task around it, and `subgraph`,
// which evaluates it on given inputs); the built-in Planner plans it into the subtask's own
// program.
#pragma once

#include <string>

#include "ir/ir.h"
#include "plan/plan.h"
#include "util/result.h"

namespace stitch::plan {

// Inputs: every value the subtask's nodes read from outside it, in order of first use (named
// in0, in1, ...; contiguous, shape and dtype of the value read; params become inputs too). Nodes:
// the subtask's, with the views between them. Outputs: the values it stores, in store order.
// Verified (ir::verify) before it is returned.
Result<ir::Graph> subtask_subgraph(const Plan& plan, const Subtask& subtask);

// A KernelBench-form task file (task.py) whose Model evaluates `subgraph` with PyTorch's ATen ops
// (stitch_harness.subgraph_model): capture, judge and baselines treat it like any task.
std::string subgraph_task_source(const ir::Graph& subgraph, const std::string& what);

}  // namespace stitch::plan
