// The per-op differential table (in the spirit of ggml's test-backend-ops): for every op the
// emitter renders (src/codegen/emit_elementwise.cc) one or more cases, each declaring once its
// node arguments, its inputs (a domain per operand), a reference (plain C++ in double) and a
// tolerance. op_table_test.cc checks the rendered expressions compiled for the host (cpu) and that
// every rendered op has a row; op_table_gpu_test.cc runs each case plan → emit → runner (gpu).
// Fusion rules (src/plan/fusion.h F1..F9) have their rows in fusion_table.h.
#pragma once

#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/ir.h"

namespace stitch::codegen::testing {

// Where a case's operand values come from (op_table.cc lists each domain's values).
enum class Domain : uint8_t {
  any,         // finite values of both signs, zeros included
  nonzero,     // finite, no zero (divisors)
  positive,    // (0, 1000]
  unit,        // (-1, 1)
  above_one,   // [1, 100]
  special,     // NaN, ±inf, ±0, tiny and huge values
  halves,      // ±k.5 and values near them (rounding)
  booleans,    // 0 and 1
};

// |actual - reference| <= abs + rel * |reference|; NaN matches only NaN, ±inf only itself.
struct Tolerance {
  double abs = 0;
  double rel = 0;
};

struct OpCase {
  std::string name;  // unique, e.g. "gelu_tanh"
  ir::Op op = ir::Op::opaque;
  std::vector<ir::Arg> args;  // tensor operand k is ValueRef{input, k}
  std::vector<std::pair<std::string, ir::Arg>> kwargs;
  std::vector<Domain> domains;  // one per tensor operand
  std::function<double(const std::vector<double>&)> reference;
  Tolerance tolerance;
  ir::DType out_dtype = ir::DType::float32;  // what the op stores (bool for comparisons)
  // Tensor-Scalar ops: the Planner may hand the number in operand position (plan.h's
  // Operand::Kind::scalar). When set, the case is also rendered that way, the scalar inserted at
  // operand position `scalar_position`.
  std::optional<double> scalar;
  int scalar_position = 1;
  // Set when the Planner refuses the node (coverage): the GPU mode cannot run the row, and the CPU
  // mode asserts the refusal still holds (so a covered op gets its GPU run).
  std::string planner_refuses;
};

// The rows the Planner plans (planner_refuses empty): what the GPU mode runs.
std::vector<OpCase> planned_cases();

const std::vector<OpCase>& op_cases();

inline constexpr int64_t kCaseValues = 16;  // elements per operand

// The case's node (id "n_<name>", one float32 output of `shape` unless out_dtype says otherwise).
ir::Node case_node(const OpCase& c, const std::vector<int64_t>& shape = {kCaseValues});

// Every case as one node of one graph: case r reads inputs x_<name>_<k> (its domains' values)
// and writes output r.
ir::Graph op_table_graph(const std::vector<OpCase>& cases);

// The values of a domain (kCaseValues of them); operand k of a case is rotated by 5 k, so pairs
// vary.
std::vector<float> domain_values(Domain domain, int operand);

// Whether `actual` is within `tolerance` of `reference`.
bool within(float actual, double reference, const Tolerance& tolerance);

}  // namespace stitch::codegen::testing
