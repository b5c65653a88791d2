// The fusion rows of the differential table (op_table.h has the per-op rows): one or more small
// graphs per fusion rule of src/plan/fusion.h (F1..F9), each declaring once the subtasks the rule
// gives (kernel names, plan order), a reference (plain C++ in double over the inputs, then the
// params) and a tolerance. fusion_table_test.cc checks the plans on the CPU and that every rule
// has a row; op_table_gpu_test.cc runs each row plan → emit → runner.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "op_table.h"

namespace stitch::codegen::testing {

using Values = std::vector<std::vector<double>>;  // one vector per tensor, row-major

struct FusionCase {
  std::string name;
  std::string rule;  // "F3"
  ir::Graph graph;   // float32 inputs and params, contiguous
  std::vector<std::string> kernels;  // Subtask::kernel of each subtask, in plan order
  // Graph outputs from the graph's inputs followed by its params.
  std::function<Values(const Values&)> reference;
  Tolerance tolerance;
};

const std::vector<FusionCase>& fusion_cases();

// Deterministic values in [-1, 1] for tensor `index` of a case.
std::vector<double> fusion_values(int64_t count, int index);

}  // namespace stitch::codegen::testing
