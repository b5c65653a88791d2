// Concatenation written in place by its producers (cat_placement.h).
#include "plan/cat_placement.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "plan/access.h"
#include "plan/conv_geometry.h"
#include "plan/graph_edit.h"
#include "plan/kernel_choice.h"
#include "plan/op_traits.h"
#include "plan/passes.h"
#include "plan/subtasks.h"

namespace stitch::plan {
namespace {

using ir::Op;

struct CatNode {
  int index = -1;
  int64_t dim = 0;
  std::vector<ir::ValueRef> pieces;
};

std::optional<CatNode> cat_node(const ir::Graph& graph, int index) {
  const ir::Node& node = graph.nodes[index];
  if (node.op != Op::cat || node.args.empty() || !node.args[0].is_list()) return std::nullopt;
  CatNode cat;
  cat.index = index;
  for (const ir::Arg& item : *node.args[0].list()) {
    if (!item.is_ref()) return std::nullopt;
    cat.pieces.push_back(*item.ref());
  }
  const auto dim =
      wrap_dim(int_arg(node, 1, "dim", 0), static_cast<int64_t>(node.outputs[0].shape.size()));
  if (!dim) return std::nullopt;
  cat.dim = *dim;
  return cat;
}

std::vector<CatNode> cat_nodes(const ir::Graph& graph) {
  std::vector<CatNode> cats;
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    if (auto cat = cat_node(graph, static_cast<int>(i))) cats.push_back(std::move(*cat));
  return cats;
}

// A graph output is `value` or a view of it: materialize made that a buffer of its own, which an
// alias would undo.
bool reaches_output(const ir::Graph& graph, const ir::ValueRef& value) {
  std::set<std::string> chain{value_key(value)};
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const ir::Node& node = graph.nodes[i];
    const ir::Arg* self = node.args.empty() ? nullptr : &node.args[0];
    if (!ir::is_view(node.op) || self == nullptr || !self->is_ref() ||
        !chain.count(value_key(*self->ref())))
      continue;
    for (size_t out = 0; out < node.outputs.size(); ++out)
      chain.insert(value_key(node_value(static_cast<int>(i), static_cast<int>(out))));
  }
  for (const ir::ValueRef& output : graph.outputs)
    if (chain.count(value_key(output))) return true;
  return false;
}

// Where `inner` (two pieces or more, fewer than `outer`) stands side by side in `outer`; -1 if not.
int find_run(const std::vector<ir::ValueRef>& outer, const std::vector<ir::ValueRef>& inner) {
  if (inner.size() < 2 || inner.size() >= outer.size()) return -1;
  const auto found = std::search(outer.begin(), outer.end(), inner.begin(), inner.end());
  return found == outer.end() ? -1 : static_cast<int>(found - outer.begin());
}

// The value whose storage a cat piece is: the piece, or the value an alias renames where the alias
// is that value's one reader (a p = 0 dropout's clone after each DenseNet layer).
ir::ValueRef stored_piece(const ir::Graph& graph, const Uses& uses, ir::ValueRef piece) {
  while (piece.kind == ir::ValueRef::Kind::node && graph.nodes[piece.index].op == Op::alias &&
         !graph.nodes[piece.index].args.empty() && graph.nodes[piece.index].args[0].is_ref()) {
    const ir::ValueRef source = *graph.nodes[piece.index].args[0].ref();
    if (source.kind != ir::ValueRef::Kind::node || uses.consumers(source).size() != 1 ||
        uses.is_graph_output(source))
      break;
    piece = source;
  }
  return piece;
}

// Whatever engine runs a forward convolution that cannot be depthwise, it writes its result into
// a window of whole channels (the kernels through their output map, cuDNN through y's image
// stride: ConvShape::y_image); the depthwise kernel and a transposed convolution's phases write
// it dense.
bool conv_writes_windows(const ConvSpec& spec) {
  return !spec.transposed && !depthwise_conv_eligible(spec);
}

// Each value a subtask stores, and whether it can store it through strides: not the result a
// cuBLASLt call writes whole (stores[0] of a GEMM), nor a depthwise or transposed convolution's
// (stores[0]), nor the attention kernel's contiguous output.
std::vector<std::pair<ir::ValueRef, bool>> strided_writes(const Subtask& subtask) {
  const auto* conv = std::get_if<ConvSpec>(&subtask.spec);
  const bool library = std::holds_alternative<MatmulSpec>(subtask.spec) || conv != nullptr ||
                       std::holds_alternative<AttentionSpec>(subtask.spec);
  std::vector<std::pair<ir::ValueRef, bool>> writes;
  const std::vector<ir::ValueRef> values = subtask_writes(subtask);
  for (size_t k = 0; k < values.size(); ++k)
    writes.emplace_back(values[k],
                        !(library && k == 0) || (conv != nullptr && conv_writes_windows(*conv)));
  return writes;
}

// The operands a library call or a row kernel reads as dense tensors.
std::vector<Access> dense_reads(const Subtask& subtask) {
  std::vector<Access> reads;
  if (const auto* conv = std::get_if<ConvSpec>(&subtask.spec)) {
    // The implicit GEMM's copy of x through a prologue reads a window of whole channels
    // (conv_prologue_fits); the depthwise kernel (x contiguous, eligible) reads x dense.
    reads = {conv->w};
    if (!conv->prologue || depthwise_conv_eligible(*conv)) reads.push_back(conv->x);
  } else if (const auto* matmul = std::get_if<MatmulSpec>(&subtask.spec)) {
    reads = {matmul->a, matmul->b};
    if (matmul->bias) reads.push_back(*matmul->bias);
  } else if (const auto* row = std::get_if<RowSpec>(&subtask.spec)) {
    reads = {row->input};
    if (row->weight) reads.push_back(*row->weight);
    if (row->bias) reads.push_back(*row->bias);
  }
  return reads;
}

// The index space an elementwise pass stores in (stores then need strides over it); nullopt for
// kernels that store by the value's own linear index.
std::optional<std::vector<int64_t>> elementwise_space(const Subtask& subtask) {
  if (const auto* spec = std::get_if<ElementwiseSpec>(&subtask.spec)) return spec->shape;
  if (const auto* spec = std::get_if<MatmulSpec>(&subtask.spec))
    return std::vector<int64_t>{spec->batch, spec->m, spec->n};
  if (const auto* spec = std::get_if<ConvSpec>(&subtask.spec)) return conv_output_space(*spec);
  if (const auto* spec = std::get_if<CopySpec>(&subtask.spec); spec && !spec->destination)
    return spec->source.shape;  // a cat piece's copy writes its destination, a window already
  return std::nullopt;
}

// Values that cannot move into a cat's buffer: graph outputs' buffers, dense library operands,
// results a library call writes whole.
std::set<std::string> unplaceable(const ir::Graph& graph, const ValueMap& values,
                                  const std::vector<Subtask>& subtasks) {
  std::set<std::string> blocked;
  for (const ir::ValueRef& output : graph.outputs)
    blocked.insert(value_key(values.at(value_key(output)).base));
  for (const Subtask& subtask : subtasks) {
    for (const Access& read : dense_reads(subtask))
      blocked.insert(value_key(read.base));
    for (const auto& [value, strided] : strided_writes(subtask))
      if (!strided) blocked.insert(value_key(value));
  }
  return blocked;
}

// Every home is stored by a kernel that can store it there, and no dense operand is a strided
// window of a cat's buffer (a home's base; a strided view of another node, such as a weight
// broadcast over a GEMM's batch, is the operand's own business).
bool homes_hold(const ValueMap& homes, const ValueMap& values,
                const std::vector<Subtask>& subtasks) {
  std::set<std::string> home_bases;
  for (const auto& [key, home] : homes)
    if (value_key(home.base) != key) home_bases.insert(value_key(home.base));  // not channels-last
  for (const Subtask& subtask : subtasks) {
    for (const Access& read : dense_reads(subtask))
      if (home_bases.count(value_key(read.base)) && !read.is_contiguous()) return false;
    const auto space = elementwise_space(subtask);
    for (const auto& [value, strided] : strided_writes(subtask)) {
      const Access& home = values.at(value_key(value));
      if (home.base == value) continue;
      if (!strided) return false;
      if (space && home.shape != *space && !reshape_access(home, *space)) return false;
    }
  }
  return true;
}

}  // namespace

Result<ir::Graph> nest_cats(const ir::Graph& graph) {
  const std::vector<CatNode> cats = cat_nodes(graph);  // the pieces as captured
  ir::Graph result = graph;
  for (const CatNode& cat : cats) {
    const ir::Node& node = graph.nodes[cat.index];
    if (cat.pieces.size() == 1 && graph.type_of(cat.pieces[0]) == node.outputs[0] &&
        !reaches_output(graph, node_value(cat.index))) {
      // A cat of one tensor is that tensor (DenseNet's first layer reads cat([x])).
      result.nodes[cat.index] =
          new_node(node.id, Op::alias, {ref_arg(cat.pieces[0])}, node.outputs, node);
      continue;
    }
    const auto rank = node.outputs[0].shape.size();
    const CatNode* best = nullptr;
    int at = -1;
    for (const CatNode& earlier : cats) {
      if (earlier.index >= cat.index) break;
      if (earlier.dim != cat.dim || graph.nodes[earlier.index].outputs[0].shape.size() != rank)
        continue;
      const int found = find_run(cat.pieces, earlier.pieces);
      if (found >= 0 && (best == nullptr || earlier.pieces.size() > best->pieces.size()))
        best = &earlier, at = found;
    }
    if (best == nullptr) continue;
    ir::ArgList pieces;
    for (int k = 0; k < at; ++k)
      pieces.push_back(ref_arg(cat.pieces[k]));
    pieces.push_back(ref_arg(node_value(best->index)));
    for (size_t k = at + best->pieces.size(); k < cat.pieces.size(); ++k)
      pieces.push_back(ref_arg(cat.pieces[k]));
    result.nodes[cat.index].args[0] = ir::Arg{std::move(pieces)};
  }
  return result;
}

ValueMap cat_homes(const ir::Graph& graph, const ValueMap& values,
                   const std::vector<Subtask>& subtasks) {
  const std::vector<CatNode> cats = cat_nodes(graph);
  const std::set<std::string> blocked = unplaceable(graph, values, subtasks);
  const Uses uses(graph);
  std::set<std::string> conv_results;  // placed only in a window of whole channels
  for (const Subtask& subtask : subtasks)
    if (const auto* conv = std::get_if<ConvSpec>(&subtask.spec); conv && !conv->stores.empty())
      conv_results.insert(value_key(conv->stores[0].value));
  std::map<std::string, int> piece_uses;
  for (const CatNode& cat : cats)
    for (const ir::ValueRef& piece : cat.pieces)
      ++piece_uses[value_key(piece)];
  ValueMap homes;
  // Outer cats first: a nested cat's window is known before its pieces are placed in it.
  for (auto cat = cats.rbegin(); cat != cats.rend(); ++cat) {
    const ir::ValueRef target = node_value(cat->index);
    const auto placed = homes.find(value_key(target));
    const Access home = placed != homes.end() ? placed->second : values.at(value_key(target));
    const ir::TensorType& target_type = graph.type_of(target);
    int64_t offset = 0;
    for (const ir::ValueRef& piece : cat->pieces) {
      const ir::TensorType& type = graph.type_of(piece);
      if (type.shape.size() != target_type.shape.size()) continue;  // torch skips empty 1-D
      const int64_t size = type.shape[cat->dim];
      const ir::ValueRef stored = stored_piece(graph, uses, piece);
      const std::string key = value_key(stored);
      const bool owns_storage = stored.kind == ir::ValueRef::Kind::node &&
                                values.at(key) == contiguous_access(stored, type.shape);
      const Access window = slice_access(home, cat->dim, offset, offset + size, 1);
      if (owns_storage && !blocked.count(key) && piece_uses[value_key(piece)] == 1 &&
          !homes.count(key) && type.dtype == target_type.dtype &&
          (!conv_results.count(key) || is_dense_per_image(window)))
        homes[key] = window;
      offset += size;
    }
  }
  return homes;
}

Status place_cat_pieces(const ir::Graph& graph, ValueMap& values, std::vector<Subtask>& subtasks,
                        const ValueMap& fixed_homes, const ConvPrologueRule& conv_takes_prologue) {
  ValueMap homes = cat_homes(graph, values, subtasks);
  if (homes.empty()) return {};
  homes.insert(fixed_homes.begin(), fixed_homes.end());
  auto placed_values = fold_views(graph, &homes);
  if (!placed_values.ok()) return {};  // a view of a piece the strides cannot express
  auto placed = build_subtasks(graph, *placed_values,
                               fuse(graph, *placed_values, false, conv_takes_prologue));
  if (!placed.ok() || !homes_hold(homes, *placed_values, *placed)) return {};
  values = std::move(*placed_values);
  subtasks = std::move(*placed);
  return {};
}

ir::ValueRef stored_buffer(const ValueMap& values, const ir::ValueRef& value) {
  const auto found = values.find(value_key(value));
  return found == values.end() ? value : found->second.base;
}

ir::ValueRef stored_buffer_by_name(const ir::Graph& graph,
                                   const std::map<std::string, Access>& values,
                                   const ir::ValueRef& value) {
  const auto found = values.find(graph.name_of(value));
  return found == values.end() ? value : found->second.base;
}

}  // namespace stitch::plan
