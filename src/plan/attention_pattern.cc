// Attention recognition (attention_pattern.h).
#include "plan/attention_pattern.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include <fmt/format.h>

#include "plan/access.h"
#include "plan/fusion.h"
#include "plan/op_traits.h"

namespace stitch::plan {

namespace {

using ir::Op;
using ir::ValueRef;

// An expand to the shape it already has copies nothing: torch's matmul emits one per operand.
bool is_transparent_view(const ir::Graph& graph, const ir::Node& node) {
  if (preserves_order(node.op)) return true;
  return node.op == Op::expand && node.args[0].is_ref() &&
         graph.type_of(*node.args[0].ref()).shape == node.outputs[0].shape;
}

// The one non-view node reading `value`, through transparent views (each with one consumer), and
// never a graph output on the way; nullopt otherwise.
std::optional<int> sole_consumer(const ir::Graph& graph, const Uses& uses, ValueRef value) {
  while (true) {
    if (uses.is_graph_output(value)) return std::nullopt;
    const std::vector<int>& consumers = uses.consumers(value);
    if (consumers.size() != 1) return std::nullopt;
    const ir::Node& node = graph.nodes[consumers[0]];
    if (!ir::is_view(node.op)) return consumers[0];
    if (!is_transparent_view(graph, node) || node.outputs.size() != 1) return std::nullopt;
    value = node_value(consumers[0]);
  }
}

// Follows transparent views from `ref` back to the value they show.
ValueRef through_transparent_views(const ir::Graph& graph, ValueRef ref) {
  while (ref.kind == ValueRef::Kind::node) {
    const ir::Node& node = graph.nodes[ref.index];
    if (!ir::is_view(node.op) || !is_transparent_view(graph, node)) break;
    ref = *node.args[0].ref();
  }
  return ref;
}

bool reads(const ir::Graph& graph, const ir::Node& node, size_t arg, const ValueRef& value) {
  return arg < node.args.size() && node.args[arg].is_ref() &&
         through_transparent_views(graph, *node.args[arg].ref()) == value;
}

// An attention operand as a [batch, heads, rows, cols] Access. A single-use clone (torch's matmul
// copies a transposed operand; the materializer copies the input of a view its strides cannot
// express) is read through the clone's source instead, its node landing in `claimed`: as the
// source reshaped when the operand is the whole clone in order, otherwise as the operand's window
// of the clone mapped onto the source's strides (through_copy_access). Else the operand's own
// Access.
std::optional<Access> operand_access(const ir::Graph& graph, const Uses& uses,
                                     const ValueMap& values, const ValueRef& operand,
                                     const std::vector<int64_t>& shape, std::vector<int>& claimed) {
  const Access& access = values.at(value_key(operand));
  std::optional<Access> own = reshape_access(access, shape);
  if (access.base.kind == ValueRef::Kind::node) {
    const int clone = access.base.index;
    const ir::Node& node = graph.nodes[clone];
    if (node.op == Op::clone && node.args[0].is_ref() && !uses.reaches_output(node_value(clone)) &&
        uses.real_consumers(node_value(clone)).size() == 1) {
      const Access& source = values.at(value_key(*node.args[0].ref()));
      std::optional<Access> read;
      if (is_full_contiguous(access, graph.type_of(node_value(clone)).numel()))
        read = reshape_access(source, shape);
      if (!read && own) read = through_copy_access(*own, source);
      if (read) {
        claimed.push_back(clone);
        return read;
      }
    }
  }
  return own;
}

// q, k and v of an attention as [batch, heads, rows, cols] Accesses, the clones they read through
// in `claimed`.
struct Operands {
  Access q, k, v;
  std::vector<int> claimed;
};

Access swap_last_two(Access access) {
  const size_t n = access.shape.size();
  std::swap(access.shape[n - 1], access.shape[n - 2]);
  std::swap(access.strides[n - 1], access.strides[n - 2]);
  return access;
}

bool head_dims_fit(const AttentionSpec& spec) {
  return spec.head_dim >= 1 && spec.head_dim <= kAttentionMaxHeadDim && spec.value_dim >= 1 &&
         spec.value_dim <= kAttentionMaxHeadDim && spec.queries >= 1 && spec.keys >= 1;
}

// A number factor of a mul/div node applied to `value`: s * c, c * s, s / c.
std::optional<double> scale_factor(const ir::Graph& graph, const ir::Node& node,
                                   const ValueRef& value) {
  if (node.args.size() != 2) return std::nullopt;
  if (node.op == Op::mul_tensor) {
    if (reads(graph, node, 0, value) && node.args[1].as_double()) return *node.args[1].as_double();
    if (reads(graph, node, 1, value) && node.args[0].as_double()) return *node.args[0].as_double();
  }
  if (node.op == Op::div_tensor && reads(graph, node, 0, value) && node.args[1].as_double() &&
      *node.args[1].as_double() != 0)
    return 1.0 / *node.args[1].as_double();
  return std::nullopt;
}

// A bmm operand that is, through transparent views, the single-use product of a tensor and a
// number (nn.MultiheadAttention scales Q so before Q·Kᵀ): the product's node, the tensor and the
// factor. The fused kernel folds the factor into its scale and reads the tensor.
struct Prescaled {
  int node = -1;
  ValueRef source;
  double factor = 1.0;
};
std::optional<Prescaled> prescaled_operand(const ir::Graph& graph, const Uses& uses,
                                           const ValueRef& operand, int bmm) {
  const ValueRef product = through_transparent_views(graph, operand);
  if (product.kind != ValueRef::Kind::node || sole_consumer(graph, uses, product) != bmm)
    return std::nullopt;
  const ir::Node& node = graph.nodes[product.index];
  for (size_t arg = 0; arg < node.args.size() && arg < 2; ++arg) {
    if (!node.args[arg].is_ref()) continue;
    const ValueRef source = through_transparent_views(graph, *node.args[arg].ref());
    if (graph.type_of(source).shape != node.outputs[0].shape) continue;  // no broadcast
    if (auto factor = scale_factor(graph, node, source))
      return Prescaled{product.index, *node.args[arg].ref(), *factor};
  }
  return std::nullopt;
}

bool is_last_dim_softmax(const ir::Node& node) {
  if (node.op != Op::softmax) return false;
  const int64_t rank = static_cast<int64_t>(node.outputs[0].shape.size());
  const int64_t dim = int_arg(node, 1, "dim", 0);
  return (dim == -1 || dim == rank - 1) && !bool_arg(node, 2, "half_to_float", false);
}

// [batch, heads] of the scores `value` ([batch * heads, queries, keys]): the 4-d view it passes
// through, when there is one.
std::pair<int64_t, int64_t> batch_heads(const ir::Graph& graph, const Uses& uses, ValueRef value,
                                        int64_t bmm_batch) {
  while (!uses.is_graph_output(value) && uses.consumers(value).size() == 1) {
    const ir::Node& node = graph.nodes[uses.consumers(value)[0]];
    if (!ir::is_view(node.op) || !is_transparent_view(graph, node)) break;
    const auto& shape = node.outputs[0].shape;
    if (shape.size() == 4 && shape[0] * shape[1] == bmm_batch) return {shape[0], shape[1]};
    value = node_value(uses.consumers(value)[0]);
  }
  return {1, bmm_batch};
}

// The chain of single-consumer nodes from a bmm to `cursor`, forwards (the bmm first): each node
// elementwise (or a softmax) with one output, one of its operands the previous node's value
// (through transparent views) and read by it alone.
std::optional<std::vector<int>> chain_from_bmm(const ir::Graph& graph, const Uses& uses,
                                               int cursor, int depth) {
  const ir::Node& node = graph.nodes[cursor];
  if (node.op == Op::bmm) return std::vector<int>{cursor};
  if (depth > 64 || (!is_elementwise(node.op) && node.op != Op::softmax) ||
      node.outputs.size() != 1)
    return std::nullopt;
  const int operands = std::max(1, operand_count(node.op));
  for (int a = 0; a < operands && a < static_cast<int>(node.args.size()); ++a) {
    if (!node.args[a].is_ref()) continue;
    const ValueRef ref = through_transparent_views(graph, *node.args[a].ref());
    if (ref.kind != ValueRef::Kind::node ||
        graph.type_of(ref).numel() != node.outputs[0].numel() ||
        sole_consumer(graph, uses, ref) != cursor)
      continue;
    if (auto chain = chain_from_bmm(graph, uses, ref.index, depth + 1)) {
      chain->push_back(cursor);
      return chain;
    }
  }
  return std::nullopt;
}

// The walk back from bmm2 (`match.anchor`) to bmm1: P, an optional clone of it (dropout with
// p = 0), the normaliser, the scale and the score chain between them. Fills match's pattern (bmm1
// last), scores and scaled and the spec's norm and scale; returns bmm1, or nullopt when the nodes
// between the two products are not an attention chain.
std::optional<int> trace_score_chain(const ir::Graph& graph, const Uses& uses,
                                     AttentionMatch& match) {
  const int anchor = match.anchor;
  AttentionSpec& spec = match.spec;
  // Walk back from P to bmm1 to find the chain, then check it forwards.
  ValueRef p = through_transparent_views(graph, *graph.nodes[anchor].args[0].ref());
  if (p.kind != ValueRef::Kind::node) return std::nullopt;
  if (sole_consumer(graph, uses, p) != anchor) return std::nullopt;
  // Dropout with p = 0 in training mode is captured as a clone of the weights: a copy the fused
  // kernel needs no more than the view it reads.
  if (graph.nodes[p.index].op == Op::clone && graph.nodes[p.index].args[0].is_ref()) {
    const int clone = p.index;
    p = through_transparent_views(graph, *graph.nodes[clone].args[0].ref());
    if (p.kind != ValueRef::Kind::node || sole_consumer(graph, uses, p) != clone)
      return std::nullopt;
    match.pattern.push_back(clone);
  }
  auto traced = chain_from_bmm(graph, uses, p.index, 0);
  if (!traced || traced->size() < 2) return std::nullopt;
  std::vector<int> chain(traced->begin() + 1, traced->end());  // the normaliser last
  const int bmm1 = traced->front();
  // Normaliser: softmax as the chain's last node, or a relu ending it.
  const ir::Node& last = graph.nodes[chain.back()];
  if (is_last_dim_softmax(last)) {
    spec.norm = AttentionNorm::softmax;
    match.pattern.push_back(chain.back());
    chain.pop_back();
  } else if (last.op == Op::relu) {
    spec.norm = AttentionNorm::none;
  } else {
    return std::nullopt;
  }
  for (int node : chain)
    if (graph.nodes[node].op == Op::softmax) return std::nullopt;
  // Scale: the first chain node, when it multiplies or divides bmm1's result by a number.
  ValueRef scaled = node_value(bmm1);
  if (!chain.empty())
    if (auto factor = scale_factor(graph, graph.nodes[chain.front()], node_value(bmm1))) {
      spec.scale = *factor;
      scaled = node_value(chain.front());
      match.pattern.push_back(chain.front());
      chain.erase(chain.begin());
    }
  match.scores = chain;
  match.scaled = scaled;
  match.pattern.push_back(bmm1);
  return bmm1;
}

std::optional<AttentionMatch> match_explicit(const ir::Graph& graph, const Uses& uses,
                                             const ValueMap& values, int anchor) {
  const ir::Node& bmm2 = graph.nodes[anchor];
  if (bmm2.op != Op::bmm || !bmm2.args[0].is_ref() || !bmm2.args[1].is_ref()) return std::nullopt;
  AttentionMatch match;
  match.anchor = anchor;
  AttentionSpec& spec = match.spec;
  spec.node = anchor;
  const std::optional<int> bmm1 = trace_score_chain(graph, uses, match);
  if (!bmm1) return std::nullopt;
  const ir::Node& first = graph.nodes[*bmm1];
  if (!first.args[0].is_ref() || !first.args[1].is_ref() ||
      first.outputs[0].dtype != ir::DType::float32 || bmm2.outputs[0].dtype != ir::DType::float32)
    return std::nullopt;
  // Geometry from the two products.
  const auto& scores = first.outputs[0].shape;  // [batch * heads, queries, keys]
  const auto& out = bmm2.outputs[0].shape;      // [batch * heads, queries, value_dim]
  const auto& a = graph.type_of(*first.args[0].ref()).shape;
  std::tie(spec.batch, spec.heads) = batch_heads(graph, uses, node_value(*bmm1), scores[0]);
  spec.queries = scores[1], spec.keys = scores[2];
  spec.head_dim = a[2], spec.value_dim = out[2];
  if (!head_dims_fit(spec)) return std::nullopt;
  ValueRef q_operand = *first.args[0].ref();
  if (auto prescaled = prescaled_operand(graph, uses, q_operand, *bmm1)) {
    spec.scale *= prescaled->factor;
    q_operand = prescaled->source;
    match.pattern.push_back(prescaled->node);
  }
  auto operands = [&](int64_t b, int64_t h) -> std::optional<Operands> {
    Operands read;
    auto q = operand_access(graph, uses, values, q_operand, {b, h, spec.queries, spec.head_dim},
                            read.claimed);
    auto kt = operand_access(graph, uses, values, *first.args[1].ref(),
                             {b, h, spec.head_dim, spec.keys}, read.claimed);
    auto v = operand_access(graph, uses, values, *bmm2.args[1].ref(),
                            {b, h, spec.keys, spec.value_dim}, read.claimed);
    if (!q || !kt || !v) return std::nullopt;
    read.q = *q, read.k = swap_last_two(*kt), read.v = *v;
    return read;
  };
  // Without a 4-d view of the scores the bmm batch is [1, batch * heads]; its elements keep their
  // order under any split [b, batch * heads / b], so the split that reads the most operands
  // through their copies' sources wins (nn.MultiheadAttention: q, k, v are slices of the
  // in-projection's [queries, batch, 3 * embed] output, one stride for the batch, one for the
  // head, which no single stride over batch * heads covers).
  std::optional<Operands> best = operands(spec.batch, spec.heads);
  if (!best) return std::nullopt;
  if (spec.batch == 1) {
    const int64_t all = spec.heads;
    for (int64_t b = 2; b <= all && best->claimed.size() < 3; ++b) {
      if (all % b != 0) continue;
      auto split = operands(b, all / b);
      if (split && split->claimed.size() > best->claimed.size()) {
        best = std::move(split);
        spec.batch = b, spec.heads = all / b;
      }
    }
  }
  spec.q = best->q, spec.k = best->k, spec.v = best->v;
  match.pattern.insert(match.pattern.end(), best->claimed.begin(), best->claimed.end());
  const int64_t b = spec.batch, h = spec.heads;
  // Every chain node sees the scores' element count; its other operands broadcast to it.
  for (int node : match.scores) {
    const ir::Node& n = graph.nodes[node];
    if (n.outputs[0].numel() != b * h * spec.queries * spec.keys) return std::nullopt;
    for (const auto& [name, arg] : n.kwargs)
      if (arg.is_ref()) return std::nullopt;
    for (size_t k = 0; k < n.args.size(); ++k)
      if (n.args[k].is_ref() && static_cast<int>(k) >= operand_count(n.op)) return std::nullopt;
  }
  std::sort(match.pattern.begin(), match.pattern.end());
  return match;
}

}  // namespace

std::string sdpa_unsupported_reason(const ir::Graph& graph, const ir::Node& node) {
  if (node.args.size() < 3 || !node.args[0].is_ref() || !node.args[1].is_ref() ||
      !node.args[2].is_ref())
    return "scaled_dot_product_attention without tensor q, k and v";
  if (double_arg(node, 4, "dropout_p", 0.0) != 0.0)
    return "scaled_dot_product_attention with dropout is not covered by the built-in Coder";
  if (bool_arg(node, 7, "enable_gqa", false))
    return "scaled_dot_product_attention with enable_gqa is not covered by the built-in Coder";
  const auto& q = graph.type_of(*node.args[0].ref());
  const auto& k = graph.type_of(*node.args[1].ref());
  const auto& v = graph.type_of(*node.args[2].ref());
  const size_t rank = q.shape.size();
  if ((rank != 3 && rank != 4) || k.shape.size() != rank || v.shape.size() != rank)
    return "scaled_dot_product_attention over other than 3-d or 4-d q, k, v is not covered";
  for (size_t d = 0; d + 2 < rank; ++d)
    if (q.shape[d] != k.shape[d] || q.shape[d] != v.shape[d])
      return "scaled_dot_product_attention with broadcast batch or head dims is not covered";
  if (q.shape[rank - 1] != k.shape[rank - 1] || k.shape[rank - 2] != v.shape[rank - 2])
    return "scaled_dot_product_attention with mismatched q/k/v dims";
  if (q.shape[rank - 1] > kAttentionMaxHeadDim || v.shape[rank - 1] > kAttentionMaxHeadDim)
    return fmt::format("scaled_dot_product_attention with head dims over {} is not covered",
                       kAttentionMaxHeadDim);
  for (const auto* type : {&q, &k, &v})
    if (type->dtype != ir::DType::float32)
      return "scaled_dot_product_attention on non-float32 data is not covered";
  if (node.args.size() > 3 && node.args[3].is_ref()) {
    const auto& mask = graph.type_of(*node.args[3].ref());
    if (mask.dtype != ir::DType::boolean && mask.dtype != ir::DType::float32)
      return "scaled_dot_product_attention with a mask that is neither bool nor float32";
    std::vector<int64_t> scores = q.shape;
    scores.back() = k.shape[rank - 2];
    if (broadcast_shapes(mask.shape, scores) != scores)
      return "scaled_dot_product_attention with a mask that does not broadcast to the scores";
  }
  return "";
}

std::optional<AttentionMatch> match_attention(const ir::Graph& graph, const Uses& uses,
                                              const ValueMap& values, int index) {
  const ir::Node& node = graph.nodes[index];
  if (node.op == Op::bmm) return match_explicit(graph, uses, values, index);
  if (node.op != Op::scaled_dot_product_attention || !sdpa_unsupported_reason(graph, node).empty())
    return std::nullopt;
  AttentionMatch match;
  match.anchor = index;
  AttentionSpec& spec = match.spec;
  spec.node = index;
  const auto& q = graph.type_of(*node.args[0].ref()).shape;
  const auto& k = graph.type_of(*node.args[1].ref()).shape;
  const auto& v = graph.type_of(*node.args[2].ref()).shape;
  const size_t rank = q.size();
  spec.batch = rank == 4 ? q[0] : 1;
  spec.heads = q[rank - 3];
  spec.queries = q[rank - 2], spec.head_dim = q[rank - 1];
  spec.keys = k[rank - 2], spec.value_dim = v[rank - 1];
  if (!head_dims_fit(spec)) return std::nullopt;
  auto shaped = [&](int arg, int64_t rows, int64_t cols) {
    return operand_access(graph, uses, values, *node.args[arg].ref(),
                          {spec.batch, spec.heads, rows, cols}, match.pattern);
  };
  auto qa = shaped(0, spec.queries, spec.head_dim);
  auto ka = shaped(1, spec.keys, spec.head_dim);
  auto va = shaped(2, spec.keys, spec.value_dim);
  if (!qa || !ka || !va) return std::nullopt;
  spec.q = *qa, spec.k = *ka, spec.v = *va;
  spec.causal = bool_arg(node, 5, "is_causal", false);
  spec.scale = double_arg(node, 6, "scale", 1.0 / std::sqrt(static_cast<double>(spec.head_dim)));
  if (node.args.size() > 3 && node.args[3].is_ref()) {
    const ValueRef mask = *node.args[3].ref();
    auto full = broadcast_access(values.at(value_key(mask)),
                                 {spec.batch, spec.heads, spec.queries, spec.keys});
    if (!full) return std::nullopt;
    spec.mask = *full;
    spec.mask_kind = graph.type_of(mask).dtype == ir::DType::boolean ? AttentionMask::boolean
                                                                     : AttentionMask::additive;
  }
  std::sort(match.pattern.begin(), match.pattern.end());
  return match;
}

}  // namespace stitch::plan
