// Convolution geometry, pad folding and the ConvSpec (conv_geometry.h).
#include "plan/conv_geometry.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "plan/access.h"

namespace stitch::plan {

namespace {

// A per-spatial-dim list arg: `spatial` values, or one value for all.
std::optional<std::vector<int64_t>> spatial_list(const ir::Node& node, size_t index, int spatial) {
  if (index >= node.args.size()) return std::nullopt;
  auto values = node.args[index].as_int_list();
  if (!values) return std::nullopt;
  if (values->size() == 1) values->assign(spatial, values->front());
  if (static_cast<int>(values->size()) != spatial) return std::nullopt;
  return values;
}

// The output size of one spatial dim from the rest (PyTorch's formulas).
int64_t output_size(const ConvGeometry& g, int d) {
  const int64_t span = g.dilation[d] * (g.kernel[d] - 1) + 1;
  if (g.transposed)
    return (g.input[d] - 1) * g.stride[d] - 2 * g.padding[d] + span + g.output_padding[d];
  return (g.input[d] + 2 * g.padding[d] - span) / g.stride[d] + 1;
}

bool positive(const std::vector<int64_t>& values) {
  for (int64_t v : values)
    if (v <= 0) return false;
  return true;
}

}  // namespace

std::optional<ConvGeometry> conv_geometry(const ir::Graph& graph, const ir::Node& node) {
  if (node.op != ir::Op::convolution || node.args.size() < 9 || node.outputs.size() != 1)
    return std::nullopt;
  const ir::Arg& x_arg = node.args[0];
  const ir::Arg& w_arg = node.args[1];
  if (!x_arg.is_ref() || !w_arg.is_ref()) return std::nullopt;
  const auto& x = graph.type_of(*x_arg.ref()).shape;
  const auto& w = graph.type_of(*w_arg.ref()).shape;
  const auto& y = node.outputs[0].shape;
  const int spatial = static_cast<int>(x.size()) - 2;
  if (spatial < 1 || spatial > 3 || w.size() != x.size() || y.size() != x.size())
    return std::nullopt;
  ConvGeometry g;
  const auto transposed = node.args[6].as_bool();
  const auto groups = node.args[8].as_int();
  auto stride = spatial_list(node, 3, spatial), padding = spatial_list(node, 4, spatial);
  auto dilation = spatial_list(node, 5, spatial), output_padding = spatial_list(node, 7, spatial);
  if (!transposed || !groups || *groups <= 0 || !stride || !padding || !dilation || !output_padding)
    return std::nullopt;
  g.transposed = *transposed;
  g.groups = *groups;
  g.stride = *stride, g.padding = *padding, g.dilation = *dilation;
  g.output_padding = *output_padding;
  g.batch = x[0], g.in_channels = x[1], g.out_channels = y[1];
  g.input.assign(x.begin() + 2, x.end());
  g.output.assign(y.begin() + 2, y.end());
  g.kernel.assign(w.begin() + 2, w.end());
  // Weight: [out, in / groups, k...] forward, [in, out / groups, k...] transposed.
  const int64_t w_out = g.transposed ? g.in_channels : g.out_channels;
  const int64_t w_in = (g.transposed ? g.out_channels : g.in_channels) / g.groups;
  if (g.in_channels % g.groups != 0 || g.out_channels % g.groups != 0 || w[0] != w_out ||
      w[1] != w_in || y[0] != g.batch)
    return std::nullopt;
  if (!positive(g.stride) || !positive(g.dilation) || !positive(g.kernel) || !positive(g.input) ||
      !positive(g.output))
    return std::nullopt;
  for (int d = 0; d < spatial; ++d) {
    if (g.padding[d] < 0 || g.output_padding[d] < 0) return std::nullopt;
    if (!g.transposed && g.output_padding[d] != 0) return std::nullopt;
    if (output_size(g, d) != g.output[d]) return std::nullopt;
  }
  if (node.args[2].is_ref() && graph.type_of(*node.args[2].ref()).numel() != g.out_channels)
    return std::nullopt;
  return g;
}

std::optional<SpatialPad> spatial_pad(const ir::Graph& graph, const ir::Node& pad, int spatial) {
  if (pad.op != ir::Op::constant_pad_nd || pad.args.size() < 2 || !pad.args[0].is_ref())
    return std::nullopt;
  if (pad.args.size() > 2 && !pad.args[2].is_none() && pad.args[2].as_double().value_or(1) != 0)
    return std::nullopt;
  if (const ir::Arg* value = pad.kwarg("value");
      value != nullptr && !value->is_none() && value->as_double().value_or(1) != 0)
    return std::nullopt;
  const auto amounts = pad.args[1].as_int_list();
  const int64_t rank = graph.type_of(*pad.args[0].ref()).rank();
  // (last before, last after, second-last before, ...), at most the spatial dims.
  if (!amounts || amounts->size() % 2 != 0 || static_cast<int>(amounts->size()) > 2 * spatial ||
      rank != spatial + 2)
    return std::nullopt;
  SpatialPad result;
  result.before.assign(spatial, 0);
  result.after.assign(spatial, 0);
  for (size_t i = 0; i < amounts->size(); i += 2) {
    const int d = spatial - 1 - static_cast<int>(i / 2);
    if ((*amounts)[i] < 0 || (*amounts)[i + 1] < 0) return std::nullopt;
    result.before[d] = (*amounts)[i];
    result.after[d] = (*amounts)[i + 1];
  }
  return result;
}

std::optional<int> foldable_pad(const ir::Graph& graph, const Uses& uses, int conv) {
  const ir::Node& node = graph.nodes[conv];
  const auto geometry = conv_geometry(graph, node);
  if (!geometry || geometry->transposed) return std::nullopt;
  const ir::ValueRef x = *node.args[0].ref();
  if (x.kind != ir::ValueRef::Kind::node) return std::nullopt;
  const ir::Node& pad = graph.nodes[x.index];
  if (!spatial_pad(graph, pad, geometry->spatial())) return std::nullopt;
  if (uses.is_graph_output(x) || uses.consumers(x) != std::vector<int>{conv}) return std::nullopt;
  return x.index;
}

bool pad_folds_into_conv(const ir::Graph& graph, const Uses& uses, int pad) {
  const std::vector<int>& consumers = uses.consumers(node_value(pad));
  return consumers.size() == 1 && foldable_pad(graph, uses, consumers[0]) == pad;
}

Result<ConvSpec> conv_spec(const ir::Graph& graph, const std::map<std::string, Access>& values,
                           int conv, std::optional<int> pad) {
  const ir::Node& node = graph.nodes[conv];
  const auto g = conv_geometry(graph, node);
  if (!g) return make_error("node '{}': not a convolution the planner understands", node.id);
  ConvSpec spec;
  spec.node = conv;
  spec.batch = g->batch, spec.in_channels = g->in_channels, spec.out_channels = g->out_channels;
  spec.groups = g->groups;
  spec.input = g->input, spec.output = g->output, spec.kernel = g->kernel;
  spec.stride = g->stride, spec.dilation = g->dilation;
  spec.pad_before = g->padding, spec.pad_after = g->padding;
  spec.transposed = g->transposed;
  ir::ValueRef x = *node.args[0].ref();
  if (pad) {
    const ir::Node& pad_node = graph.nodes[*pad];
    const auto amounts = spatial_pad(graph, pad_node, g->spatial());
    if (!amounts || g->transposed)
      return make_error("node '{}': pad '{}' does not fold into it", node.id, pad_node.id);
    x = *pad_node.args[0].ref();
    const auto& shape = graph.type_of(x).shape;
    spec.input.assign(shape.begin() + 2, shape.end());
    for (int d = 0; d < g->spatial(); ++d) {
      spec.pad_before[d] += amounts->before[d];
      spec.pad_after[d] += amounts->after[d];
    }
  }
  spec.x = values.at(value_key(x));
  spec.w = values.at(value_key(*node.args[1].ref()));
  // A channels-last x: a value layout.h chose so, for the implicit GEMM's gather.
  const bool x_ok = spec.x.is_contiguous() || (!spec.transposed && is_channels_last(spec.x));
  if (!x_ok || !spec.w.is_contiguous())
    return make_error("node '{}': input or weight is not contiguous", node.id);
  return spec;
}

std::string conv_name(const ConvSpec& spec) {
  auto all = [](const std::vector<int64_t>& values, int64_t value) {
    return std::all_of(values.begin(), values.end(), [&](int64_t v) { return v == value; });
  };
  std::string name = fmt::format("conv{}d{}", spec.input.size(), spec.transposed ? "_t" : "");
  if (spec.groups != 1) name += fmt::format("_g{}", spec.groups);
  if (!all(spec.stride, 1)) name += fmt::format("_s{}", fmt::join(spec.stride, "x"));
  if (!all(spec.dilation, 1)) name += fmt::format("_d{}", fmt::join(spec.dilation, "x"));
  if (spec.pad_before != spec.pad_after)
    name += fmt::format("_p{}-{}", fmt::join(spec.pad_before, "x"), fmt::join(spec.pad_after, "x"));
  const int64_t w_out = spec.transposed ? spec.in_channels : spec.out_channels;
  return name + fmt::format("_{}x{}x{}_k{}x{}", spec.batch, spec.in_channels,
                            fmt::join(spec.input, "x"), w_out, fmt::join(spec.kernel, "x"));
}

bool per_plane(const Access& access, const std::vector<int64_t>& space) {
  if (access.shape != space || access.strides.size() != space.size()) return false;
  for (size_t d = 2; d < space.size(); ++d)
    if (space[d] > 1 && access.strides[d] != 0) return false;
  return true;
}

}  // namespace stitch::plan
