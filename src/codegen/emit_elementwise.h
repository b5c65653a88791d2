// Rendering of elementwise ops as CUDA C++ expressions over float values (STYLE.md item 5: one small
// emit_<op> per op, in emit_elementwise.cc). Generated functors compute every body step in float:
// booleans are 0.0f / 1.0f, integer results are exact in float up to 2^24 (the kernel library loads
// and stores other dtypes through float, see kernels/elementwise.cuh).
#pragma once

#include <string>
#include <vector>

#include "ir/ir.h"
#include "util/result.h"

namespace stitch::codegen {

// `operands` are the expressions of the node's tensor arguments, in argument order (scalar
// arguments are read from the node itself). Fails, naming the node, for an op or an argument
// this renderer does not know — never a silently different expression.
Result<std::string> render_elementwise(const ir::Node& node,
                                       const std::vector<std::string>& operands);

// Whether render_elementwise knows the op (the Planner may ask before fusing).
bool can_render_elementwise(ir::Op op);

// A float literal that round-trips: "0.5f", "-3.40282347e+38f", "__int_as_float(0x7f800000)".
std::string float_literal(double value);

}  // namespace stitch::codegen
