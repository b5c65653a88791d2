// Pass "merge-gemms": pointwise convolutions of one input (the GEMMs lower_conv.cc makes of them,
// bmm(W viewed [1, K, C] expanded over N, x viewed [N, C, S])) become one GEMM over their weights
// concatenated along K, each convolution's result a channel slice of its product. The input is
// read once instead of once per convolution, and the few-row GEMMs (an inception module's 16-
// and 96-channel reductions) run as rows of a larger one. The weights' concatenation reads only
// params: it is done once at init.
//
// Only GEMMs whose results elementwise ops alone read (through views) are merged: a slice of the
// product has the product's row stride, which an elementwise kernel reads as it is, while a GEMM or
// convolution reading it would need a copy (pass "materialize") costing what the merge saves.
#include <map>
#include <set>
#include <tuple>

#include "plan/graph_edit.h"
#include "plan/op_traits.h"
#include "plan/passes.h"

namespace stitch::plan {
namespace {

using ir::Op;
using ir::ValueRef;

// One pointwise-convolution GEMM: bmm(expand(view(param, [1, K, C]), [N, K, C]), columns).
struct WeightGemm {
  int node = -1;
  ValueRef weight;   // the param
  int64_t rows = 0;  // K
};

// What siblings share: the columns (the value under its view, and their shape) and the dtype.
using ColumnsKey = std::tuple<std::string, std::vector<int64_t>, ir::DType>;

bool is_reshape(Op op) {
  return op == Op::view || op == Op::reshape || op == Op::unsafe_view;
}

// `state`: the params forward updates (state_param_indices), which are no weights.
std::optional<WeightGemm> weight_gemm(const ir::Graph& graph, const Uses& uses,
                                      const std::set<int32_t>& state, int index) {
  const ir::Node& node = graph.nodes[index];
  if (node.op != Op::bmm || !node.kwargs.empty() || node.args.size() != 2 ||
      !node.args[0].is_ref() || !node.args[1].is_ref())
    return std::nullopt;
  const ValueRef a = *node.args[0].ref();
  if (a.kind != ValueRef::Kind::node || graph.nodes[a.index].op != Op::expand) return std::nullopt;
  const ir::Node& expand = graph.nodes[a.index];
  if (!expand.args[0].is_ref() || expand.args[0].ref()->kind != ValueRef::Kind::node)
    return std::nullopt;
  const ir::Node& view = graph.nodes[expand.args[0].ref()->index];
  if (!is_reshape(view.op) || !view.args[0].is_ref() ||
      view.args[0].ref()->kind != ValueRef::Kind::param)
    return std::nullopt;
  const ValueRef param = *view.args[0].ref();
  if (state.count(param.index)) return std::nullopt;
  const std::vector<int64_t>& shape = view.outputs[0].shape;
  if (shape.size() != 3 || shape[0] != 1) return std::nullopt;
  const ValueRef result = node_value(index);
  if (uses.reaches_output(result)) return std::nullopt;
  for (int consumer : uses.real_consumers(result))
    if (!is_elementwise(graph.nodes[consumer].op)) return std::nullopt;
  return WeightGemm{index, param, shape[1]};
}

ColumnsKey columns_key(const ir::Graph& graph, const ValueRef& columns) {
  ValueRef base = columns;
  if (base.kind == ValueRef::Kind::node && is_reshape(graph.nodes[base.index].op) &&
      graph.nodes[base.index].args[0].is_ref())
    base = *graph.nodes[base.index].args[0].ref();
  const ir::TensorType& type = graph.type_of(columns);
  return {value_key(base), type.shape, type.dtype};
}

// Emits the merged GEMM and maps every sibling's result to its slice of it.
void emit_merged(GraphRewriter& rewriter, const ir::Graph& graph,
                 const std::vector<WeightGemm>& siblings) {
  const ir::Node& first = graph.nodes[siblings[0].node];
  const ir::TensorType& columns = graph.type_of(*first.args[1].ref());
  const int64_t batch = columns.shape[0], channels = columns.shape[1], positions = columns.shape[2];
  const ir::DType dtype = first.outputs[0].dtype;
  auto add = [&](const std::string& suffix, Op op, std::vector<ir::Arg> args,
                 std::vector<int64_t> shape) {
    return rewriter.add(new_node(first.id + "_merged_" + suffix, op, std::move(args),
                                 {contiguous_type(std::move(shape), dtype)}, first));
  };
  ir::ArgList matrices;
  int64_t rows = 0;
  for (const WeightGemm& sibling : siblings) {
    matrices.push_back(ref_arg(
        add("matrix", Op::view,
            {ref_arg(rewriter.mapped(sibling.weight)), int_list_arg({1, sibling.rows, channels})},
            {1, sibling.rows, channels})));
    rows += sibling.rows;
  }
  const ValueRef matrix = add(
      "weights", Op::cat, {ir::Arg{std::move(matrices)}, ir::Arg{int64_t{1}}}, {1, rows, channels});
  const ValueRef weights =
      add("expand", Op::expand, {ref_arg(matrix), int_list_arg({batch, rows, channels})},
          {batch, rows, channels});
  const ValueRef product =
      add("gemm", Op::bmm, {ref_arg(weights), ref_arg(rewriter.mapped(*first.args[1].ref()))},
          {batch, rows, positions});
  int64_t start = 0;
  for (const WeightGemm& sibling : siblings) {
    const ValueRef slice =
        add("slice", Op::slice_tensor,
            {ref_arg(product), ir::Arg{int64_t{1}}, ir::Arg{start}, ir::Arg{start + sibling.rows}},
            {batch, sibling.rows, positions});
    rewriter.map_value(node_value(sibling.node), slice);
    start += sibling.rows;
  }
}

}  // namespace

ir::Graph merge_sibling_gemms(const ir::Graph& graph) {
  const Uses uses(graph);
  const std::set<int32_t> state = state_param_indices(graph);
  std::map<ColumnsKey, std::vector<WeightGemm>> groups;
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    if (auto gemm = weight_gemm(graph, uses, state, static_cast<int>(i)))
      groups[columns_key(graph, *graph.nodes[i].args[1].ref())].push_back(*gemm);
  std::map<int, const std::vector<WeightGemm>*> merged_at;  // first sibling → its group
  std::set<int> merged_away;                                // the later siblings
  for (const auto& [key, siblings] : groups) {
    if (siblings.size() < 2) continue;
    merged_at[siblings[0].node] = &siblings;
    for (size_t s = 1; s < siblings.size(); ++s)
      merged_away.insert(siblings[s].node);
  }
  if (merged_at.empty()) return graph;
  GraphRewriter rewriter(graph);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const int index = static_cast<int>(i);
    if (const auto group = merged_at.find(index); group != merged_at.end())
      emit_merged(rewriter, graph, *group->second);
    else if (!merged_away.count(index))
      rewriter.keep(index);
  }
  // The siblings' own weight views and column views are left unread.
  return eliminate_dead_code(std::move(rewriter).finish(), nullptr);
}

}  // namespace stitch::plan
