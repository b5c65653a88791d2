// What a pooling node asks for, read from its args once (lower_pooling.cc): the planner's coverage
// pass, the lowering and the PoolSpec builder share it.
#pragma once

#include <optional>
#include <vector>

#include "ir/ir.h"
#include "plan/plan.h"

namespace stitch::plan {

struct PoolParams {
  PoolOp op = PoolOp::max;
  int spatial = 2;               // trailing dims pooled: 1 to 3
  std::vector<int64_t> in, out;  // spatial sizes (out from the captured output: ceil mode in it)
  std::vector<int64_t> kernel, stride, padding, dilation;  // window pools; empty for adaptive
  bool ceil_mode = false;
  bool count_include_pad = true;
  int64_t divisor = 0;  // avg divisor_override; 0: none
  std::vector<double> scale;   // nearest, bilinear: PyTorch's float source step per output position
  bool align_corners = false;  // bilinear
};

// The params of a pooling node (max_pool2d/3d_with_indices, avg_pool1d/2d/3d,
// _adaptive_avg_pool2d/3d, adaptive_max_pool2d, upsample_nearest2d/bilinear2d.vec); nullopt for another node or malformed args.
std::optional<PoolParams> pool_params(const ir::Graph& graph, const ir::Node& node);

}  // namespace stitch::plan
