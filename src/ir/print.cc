// The node table and graph summary (print.h).
#include "ir/print.h"

#include <algorithm>
#include <array>
#include <map>

#include "ir/cost.h"

namespace stitch::ir {

namespace {

// `value` divided by `base` while it reaches the next unit; units carry their leading space.
std::string format_scaled(double value, double base, const std::array<const char*, 6>& units) {
  size_t unit = 0;
  while (std::abs(value) >= base && unit + 1 < units.size()) {
    value /= base;
    ++unit;
  }
  if (unit == 0) return fmt::format("{:.0f}{}", value, units[0]);
  return fmt::format("{:.2f}{}", value, units[unit]);
}

}  // namespace

std::string format_count(double value) {
  return format_scaled(value, 1000, {"", " k", " M", " G", " T", " P"});
}

std::string format_bytes(double bytes) {
  return format_scaled(bytes, 1024, {" B", " KiB", " MiB", " GiB", " TiB", " PiB"});
}

namespace {

std::string node_op_label(const Node& node) {
  return std::string(
      short_op_name(node.op == Op::opaque ? std::string_view(node.op_name) : op_name(node.op)));
}

std::string node_output_label(const Node& node) {
  if (node.outputs.empty()) return "-";
  std::string label = format_tensor_type(node.outputs[0]);
  if (node.outputs.size() > 1) label += fmt::format(" (+{})", node.outputs.size() - 1);
  return label;
}

}  // namespace

std::string format_node_table(const Graph& graph) {
  struct Row {
    std::string index, id, op, output, flops, bytes, module;
  };
  std::vector<Row> rows;
  rows.push_back({"#", "id", "op", "output", "flops", "bytes", "module"});
  GraphCost total;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& node = graph.nodes[i];
    const NodeCost cost = estimate_node_cost(graph, node);
    total.flops += cost.flops;
    total.bytes += cost.bytes;
    if (!cost.known) ++total.unknown_nodes;
    std::string op = node_op_label(node);
    if (node.op == Op::opaque) op += " (opaque)";
    rows.push_back({std::to_string(i), node.id, std::move(op), node_output_label(node),
                    cost.known ? format_count(cost.flops) : "?", format_bytes(cost.bytes),
                    node.module.empty() ? "-" : node.module});
  }

  std::array<size_t, 6> widths{};
  for (const Row& row : rows) {
    const std::array<const std::string*, 6> cells = {&row.index,  &row.id,    &row.op,
                                                     &row.output, &row.flops, &row.bytes};
    for (size_t c = 0; c < cells.size(); ++c)
      widths[c] = std::max(widths[c], cells[c]->size());
  }
  std::string out;
  for (const Row& row : rows) {
    // Numbers right-aligned, text left-aligned; the module path is last and unpadded.
    out += fmt::format("{:>{}}  {:<{}}  {:<{}}  {:<{}}  {:>{}}  {:>{}}  {}\n", row.index, widths[0],
                       row.id, widths[1], row.op, widths[2], row.output, widths[3], row.flops,
                       widths[4], row.bytes, widths[5], row.module);
  }
  out += fmt::format("total: {} nodes, {} FLOP, {} moved", graph.nodes.size(),
                     format_count(total.flops), format_bytes(total.bytes));
  if (total.bytes > 0) out += fmt::format(", {:.2f} FLOP/byte", total.flops / total.bytes);
  if (total.unknown_nodes > 0) out += fmt::format(" ({} nodes not estimated)", total.unknown_nodes);
  out += "\n";
  return out;
}

std::string format_graph_summary(const Graph& graph) {
  std::string out;
  out += fmt::format("task {} ({}), torch {}, {} mode\n",
                     graph.task.name.empty() ? "?" : graph.task.name,
                     graph.task.file.empty() ? "?" : graph.task.file,
                     graph.torch_version.empty() ? "?" : graph.torch_version,
                     graph.training ? "training" : "inference");
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    const Input& input = graph.inputs[i];
    out += fmt::format("input {} {}: {}", i, input.name, format_tensor_type(input.type));
    if (input.kind == InputKind::random)
      out += fmt::format(" (random, from {})", input.source_op.empty() ? "?" : input.source_op);
    if (!input.distribution.empty()) out += fmt::format(" ~ {}", input.distribution);
    out += "\n";
  }
  double param_bytes = 0;
  for (const Param& param : graph.params)
    param_bytes += static_cast<double>(param.type.bytes());
  out += fmt::format("params: {} tensors, {}\n", graph.params.size(), format_bytes(param_bytes));

  std::map<std::string_view, int> by_category;
  std::map<std::string, int> opaque_ops;
  for (const Node& node : graph.nodes) {
    ++by_category[op_category_name(op_category(node.op))];
    if (node.op == Op::opaque) ++opaque_ops[node.op_name];
  }
  std::vector<std::string> parts;
  for (const auto& [category, count] : by_category)
    parts.push_back(fmt::format("{} {}", count, category));
  out += fmt::format("nodes: {} ({})\n", graph.nodes.size(), fmt::join(parts, ", "));
  if (!opaque_ops.empty()) {
    parts.clear();
    for (const auto& [name, count] : opaque_ops)
      parts.push_back(fmt::format("{} x{}", name, count));
    out += fmt::format("opaque ops: {}\n", fmt::join(parts, ", "));
  }
  for (size_t i = 0; i < graph.outputs.size(); ++i)
    out += fmt::format("output {}: {} {}\n", i, graph.name_of(graph.outputs[i]),
                       format_tensor_type(graph.type_of(graph.outputs[i])));
  const GraphCost cost = estimate_graph_cost(graph);
  out += fmt::format("work: {} FLOP, {} moved", format_count(cost.flops), format_bytes(cost.bytes));
  if (cost.unknown_nodes > 0) out += fmt::format(" ({} nodes not estimated)", cost.unknown_nodes);
  out += "\n";
  return out;
}

}  // namespace stitch::ir
