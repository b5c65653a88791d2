// What the Planner reads off an aten.convolution node (args: input, weight, bias, stride, padding,
// dilation, transposed, output_padding, groups), and the one rewrite around it that fusion does: a
// zero constant_pad_nd of only the spatial dims, read by nothing but one forward convolution, is
// folded into that convolution's padding (how PyTorch passes asymmetric padding, e.g.
// padding='same' with an even kernel).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "plan/graph_edit.h"
#include "plan/plan.h"
#include "util/result.h"

namespace stitch::plan {

struct ConvGeometry {
  int64_t batch = 1, in_channels = 0, out_channels = 0, groups = 1;
  std::vector<int64_t> input, output, kernel;  // spatial sizes, 1 to 3 dims
  std::vector<int64_t> stride, padding, dilation, output_padding;
  bool transposed = false;
  int spatial() const { return static_cast<int>(input.size()); }
};

// nullopt when the node is not a convolution of 1 to 3 spatial dims with consistent args and
// shapes (the output sizes must follow from the rest).
std::optional<ConvGeometry> conv_geometry(const ir::Graph& graph, const ir::Node& node);

// A zero constant_pad_nd that pads only the trailing `spatial` dims, by non-negative amounts.
struct SpatialPad {
  std::vector<int64_t> before, after;  // per spatial dim, first to last
};
std::optional<SpatialPad> spatial_pad(const ir::Graph& graph, const ir::Node& pad, int spatial);

// The constant_pad_nd node the convolution `conv` folds (its input is that pad's value, the pad's
// only use, not a graph output, the convolution not transposed); nullopt for none.
std::optional<int> foldable_pad(const ir::Graph& graph, const Uses& uses, int conv);

// The pad node `pad` folds into the convolution that reads it (the coverage pass's question).
bool pad_folds_into_conv(const ir::Graph& graph, const Uses& uses, int pad);

// The ConvSpec of convolution `conv` without its epilogue and stores: geometry, the x and w
// Accesses from `values` (keyed by value_key), and the pad node `pad` folded into its padding.
Result<ConvSpec> conv_spec(const ir::Graph& graph, const std::map<std::string, Access>& values,
                           int conv, std::optional<int> pad);

// The index space of a convolution's input, [batch, in_channels, input...]: its prologue's. Of a
// ConvSpec or a ConvGeometry.
template <class Conv>
std::vector<int64_t> conv_input_space(const Conv& conv) {
  std::vector<int64_t> space{conv.batch, conv.in_channels};
  space.insert(space.end(), conv.input.begin(), conv.input.end());
  return space;
}

// The index space of a convolution's output, [batch, out_channels, output...]: its epilogue's.
inline std::vector<int64_t> conv_output_space(const ConvSpec& spec) {
  std::vector<int64_t> space{spec.batch, spec.out_channels};
  space.insert(space.end(), spec.output.begin(), spec.output.end());
  return space;
}

// Whether `access`, with the shape `space` (a convolution's input or output space), holds one
// value per (n, c) plane: zero strides over every spatial dim larger than 1.
bool per_plane(const Access& access, const std::vector<int64_t>& space);

// The subtask name: "conv2d_4x16x32x32_k16x3x3", with "_t" (transposed), "_g<groups>",
// "_s<stride>", "_d<dilation>", "_p<before>-<after>" (asymmetric) where they apply.
std::string conv_name(const ConvSpec& spec);

}  // namespace stitch::plan
