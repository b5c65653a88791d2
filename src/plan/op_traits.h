// What the Planner needs to know about ops beyond ir::OpCategory: operand counts of elementwise
// ops, result dtypes (torch's type promotion), broadcasting, reduction dims and constant scalars.
#pragma once

#include <optional>
#include <vector>

#include "ir/ir.h"

namespace stitch::plan {

bool is_elementwise(ir::Op op);  // the three elementwise categories
// Leading args that are operands (tensor or number): 1/2/3 for elementwise ops, 0 for creation
// ops, -1 otherwise.
int operand_count(ir::Op op);
bool returns_bool(ir::Op op);  // comparisons, isnan/isinf, logical ops
bool float_result(ir::Op op);  // transcendental ops: integer inputs give float32
// How many special-function evaluations (exp, log, tanh, erf, sin ...: libm sequences of tens of
// instructions each) the generated code of one element of `op` makes: softplus and pow 2, the
// other transcendental ops 1 (mish too: one exp, kernels/scalar_ops.cuh), everything else
// (arithmetic, comparisons, clamps, ReLU-like activations, sqrt, division) 0.
int special_functions(ir::Op op);

// The value of a constant scalar tensor (scalar_tensor, or full with an empty size, with a number
// fill value); nullopt for anything else.
std::optional<double> constant_scalar(const ir::Node& node);

// torch's broadcasting of two shapes (right-aligned); nullopt when they do not broadcast.
std::optional<std::vector<int64_t>> broadcast_shapes(const std::vector<int64_t>& a,
                                                     const std::vector<int64_t>& b);

// torch's type promotion over an op's operands: dimensioned tensors, zero-dim tensors, and Python
// numbers (bool/int/float) each rank below the previous within a category (bool < int < float).
struct PromotionInputs {
  std::vector<ir::DType> tensors;   // dimensioned tensors
  std::vector<ir::DType> zero_dim;  // 0-dim tensors
  std::vector<ir::DType> scalars;   // Python numbers, as bool / int64 / float64
};
ir::DType promote_types(ir::DType a, ir::DType b);
ir::DType result_type(const PromotionInputs& inputs);

// A reduction's dims argument normalized: sorted, wrapped, duplicates dropped; an empty or absent
// list means every dim. nullopt when a dim is out of range.
std::optional<std::vector<int64_t>> reduction_dims(const ir::Arg* dims, int64_t rank);
// The output shape of reducing `dims` of `shape`.
std::vector<int64_t> reduced_shape(const std::vector<int64_t>& shape,
                                   const std::vector<int64_t>& dims, bool keepdim);

// Reads an optional int/bool/double arg (args[index] or kwargs[name]) with a default.
int64_t int_arg(const ir::Node& node, size_t index, std::string_view name, int64_t fallback);
double double_arg(const ir::Node& node, size_t index, std::string_view name, double fallback);
bool bool_arg(const ir::Node& node, size_t index, std::string_view name, bool fallback);

}  // namespace stitch::plan
