// Work estimates per node. The formulas, with N = elements of the (first) output:
//   elementwise (unary/binary/ternary)  N flops (one per element; transcendental ops count 1 too)
//   reduction                           elements of the input (var, norms: 3x / 2x, see below)
//   scan (cumsum)                       elements of the input
//   view, copy, creation                0 flops (bilinear upsampling: 8 per output element)
//   nll_loss_forward                    elements of the target
//   mm      [M,K]x[K,N]                 2*M*N*K;        addmm adds M*N for the bias
//   bmm     [B,M,K]x[B,K,N]             2*B*M*N*K;      baddbmm adds B*M*N
//   convolution                         2 * N_out * (C_in/groups) * prod(kernel) (+ N_out bias);
//     transposed: 2 * N_in * (C_out/groups) * prod(kernel), each input element scattering to
//     C_out/groups * prod(kernel) outputs (+ N_out bias)
//   pooling                             N_out * prod(kernel); adaptive: elements of the input
//   batch/layer/group norm              8 per input element (statistics + normalize + affine)
//   softmax / log_softmax               4 per element (max, exp, sum, divide)
//   scaled_dot_product_attention        q [..,L,E], k [..,S,E], v [..,S,Ev], batch B:
//                                       2*B*L*S*E + 2*B*L*S*Ev + 5*B*L*S (scale, softmax); halved
//                                       when is_causal
//   lstm/gru/rnn                        T steps, batch B: 2*B*T*numel(W) for every weight matrix
//                                       W in the params list (input and hidden projections of
//                                       every layer and direction), B*T*numel(b) per bias, and
//                                       2*B*T*rows(W) for the gate arithmetic
//   random                              N (one draw per element)
// Bytes: every distinct tensor argument read once plus every output written once; views 0;
// creation and random ops only write. This is a floor that ignores re-reads (GEMM tiles, RNN
// weights per step) — good for ranking nodes and for a roofline, not for predicting time.
#include "ir/cost.h"

#include <algorithm>
#include <cmath>
#include <set>

namespace stitch::ir {

namespace {

double numel_of(const TensorType& type) {
  return static_cast<double>(type.numel());
}

const TensorType* tensor_arg(const Graph& graph, const Node& node, size_t index,
                             std::string_view name) {
  const Arg* arg = node.arg_or_kwarg(index, name);
  if (arg == nullptr || !arg->is_ref()) return nullptr;
  return &graph.type_of(*arg->ref());
}

double first_output_numel(const Node& node) {
  return node.outputs.empty() ? 0.0 : numel_of(node.outputs[0]);
}

// Collects every tensor reference in an argument, lists included.
void collect_refs(const Arg& arg, std::set<std::tuple<int, int32_t, int32_t>>& refs) {
  if (const ValueRef* ref = arg.ref()) {
    refs.emplace(static_cast<int>(ref->kind), ref->index, ref->out);
  } else if (const ArgList* items = arg.list()) {
    for (const Arg& item : *items)
      collect_refs(item, refs);
  }
}

double bytes_read(const Graph& graph, const Node& node) {
  std::set<std::tuple<int, int32_t, int32_t>> refs;
  for (const Arg& arg : node.args)
    collect_refs(arg, refs);
  for (const auto& [name, arg] : node.kwargs)
    collect_refs(arg, refs);
  double bytes = 0;
  for (const auto& [kind, index, out] : refs)
    bytes += static_cast<double>(
        graph.type_of(ValueRef{static_cast<ValueRef::Kind>(kind), index, out}).bytes());
  return bytes;
}

double bytes_written(const Node& node) {
  double bytes = 0;
  for (const TensorType& type : node.outputs)
    bytes += static_cast<double>(type.bytes());
  return bytes;
}

double product(const std::vector<int64_t>& dims, size_t from = 0) {
  double result = 1;
  for (size_t i = from; i < dims.size(); ++i)
    result *= static_cast<double>(dims[i]);
  return result;
}

double matmul_flops(const Graph& graph, const Node& node) {
  switch (node.op) {
    case Op::mm: {  // self [M,K], mat2 [K,N]
      const TensorType* a = tensor_arg(graph, node, 0, "self");
      if (a == nullptr || a->rank() != 2) return 0;
      return 2.0 * first_output_numel(node) * static_cast<double>(a->shape[1]);
    }
    case Op::addmm: {  // self (bias), mat1 [M,K], mat2 [K,N]
      const TensorType* a = tensor_arg(graph, node, 1, "mat1");
      if (a == nullptr || a->rank() != 2) return 0;
      return (2.0 * static_cast<double>(a->shape[1]) + 1.0) * first_output_numel(node);
    }
    case Op::bmm: {  // self [B,M,K], mat2 [B,K,N]
      const TensorType* a = tensor_arg(graph, node, 0, "self");
      if (a == nullptr || a->rank() != 3) return 0;
      return 2.0 * first_output_numel(node) * static_cast<double>(a->shape[2]);
    }
    case Op::baddbmm: {  // self, batch1 [B,M,K], batch2 [B,K,N]
      const TensorType* a = tensor_arg(graph, node, 1, "batch1");
      if (a == nullptr || a->rank() != 3) return 0;
      return (2.0 * static_cast<double>(a->shape[2]) + 1.0) * first_output_numel(node);
    }
    default:
      return 0;
  }
}

// aten.convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
// groups). weight is [C_out, C_in/groups, k...], or [C_in, C_out/groups, k...] when transposed.
double convolution_flops(const Graph& graph, const Node& node) {
  const TensorType* input = tensor_arg(graph, node, 0, "input");
  const TensorType* weight = tensor_arg(graph, node, 1, "weight");
  if (input == nullptr || weight == nullptr || weight->rank() < 2) return 0;
  const Arg* transposed_arg = node.arg_or_kwarg(6, "transposed");
  const bool transposed = transposed_arg != nullptr && transposed_arg->as_int().value_or(0) != 0;
  const Arg* bias = node.arg_or_kwarg(2, "bias");
  const double n_out = first_output_numel(node);
  const double per_element = static_cast<double>(weight->shape[1]) * product(weight->shape, 2);
  double flops = 2.0 * (transposed ? numel_of(*input) : n_out) * per_element;
  if (bias != nullptr && bias->is_ref()) flops += n_out;
  return flops;
}

double pooling_flops(const Graph& graph, const Node& node) {
  // Bilinear upsampling blends 4 neighbours per output element; nearest does no math.
  if (node.op == Op::upsample_bilinear2d_vec) return 8 * first_output_numel(node);
  if (node.op == Op::upsample_nearest2d_vec) return 0;
  const TensorType* input = tensor_arg(graph, node, 0, "self");
  if (node.op == Op::adaptive_avg_pool2d || node.op == Op::adaptive_avg_pool3d ||
      node.op == Op::adaptive_max_pool2d)
    return input != nullptr ? numel_of(*input) : 0;
  const Arg* kernel_arg = node.arg_or_kwarg(1, "kernel_size");
  std::optional<std::vector<int64_t>> kernel;
  if (kernel_arg != nullptr) kernel = kernel_arg->as_int_list();
  if (!kernel || kernel->empty()) return first_output_numel(node);
  const size_t spatial = node.op == Op::max_pool3d_with_indices || node.op == Op::avg_pool3d ? 3
                         : node.op == Op::avg_pool1d                                         ? 1
                                                                                             : 2;
  // A single value stands for every spatial dim (kernel_size=[3] means 3x3).
  double window =
      kernel->size() == 1 ? std::pow(static_cast<double>((*kernel)[0]), spatial) : product(*kernel);
  return first_output_numel(node) * window;
}

double attention_flops(const Graph& graph, const Node& node) {
  const TensorType* q = tensor_arg(graph, node, 0, "query");
  const TensorType* k = tensor_arg(graph, node, 1, "key");
  const TensorType* v = tensor_arg(graph, node, 2, "value");
  if (q == nullptr || k == nullptr || v == nullptr) return 0;
  if (q->rank() < 2 || k->rank() < 2 || v->rank() < 2) return 0;
  const double batch = product(std::vector<int64_t>(q->shape.begin(), q->shape.end() - 2));
  const double l = static_cast<double>(q->shape[q->shape.size() - 2]);
  const double e = static_cast<double>(q->shape.back());
  const double s = static_cast<double>(k->shape[k->shape.size() - 2]);
  const double ev = static_cast<double>(v->shape.back());
  double flops = batch * l * s * (2.0 * e + 2.0 * ev + 5.0);
  const Arg* causal = node.arg_or_kwarg(4, "is_causal");
  if (causal != nullptr && causal->as_int().value_or(0) != 0) flops /= 2;
  return flops;
}

// aten.lstm.input(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
// batch_first); gru.input and rnn_*.input have the same positions with hx a tensor.
double recurrent_flops(const Graph& graph, const Node& node) {
  const TensorType* input = tensor_arg(graph, node, 0, "input");
  const Arg* params = node.arg_or_kwarg(2, "params");
  if (input == nullptr || params == nullptr || params->list() == nullptr) return 0;
  const Arg* batch_first_arg = node.arg_or_kwarg(8, "batch_first");
  const bool batch_first = batch_first_arg != nullptr && batch_first_arg->as_int().value_or(0);
  double steps = 0, batch = 1;
  if (input->rank() == 3) {
    steps = static_cast<double>(input->shape[batch_first ? 1 : 0]);
    batch = static_cast<double>(input->shape[batch_first ? 0 : 1]);
  } else if (input->rank() == 2) {  // unbatched [T, I]
    steps = static_cast<double>(input->shape[0]);
  }
  double flops = 0;
  for (const Arg& item : *params->list()) {
    if (!item.is_ref()) continue;
    const TensorType& type = graph.type_of(*item.ref());
    if (type.rank() == 2)
      flops += 2.0 * numel_of(type) + 2.0 * static_cast<double>(type.shape[0]);
    else
      flops += numel_of(type);
  }
  return flops * batch * steps;
}

double reduction_flops(const Graph& graph, const Node& node) {
  const TensorType* input = tensor_arg(graph, node, 0, "self");
  const double n = input != nullptr ? numel_of(*input) : first_output_numel(node);
  switch (node.op) {
    case Op::var_correction:
    case Op::var_mean_correction:
      return 3 * n;
    case Op::linalg_vector_norm:
      return 2 * n;
    case Op::logsumexp:
      return 4 * n;
    case Op::nll_loss_forward: {  // gathers one value per target element, then sums
      const TensorType* target = tensor_arg(graph, node, 1, "target");
      return target != nullptr ? numel_of(*target) : n;
    }
    default:
      return n;
  }
}

}  // namespace

NodeCost estimate_node_cost(const Graph& graph, const Node& node) {
  NodeCost cost;
  const OpCategory category = op_category(node.op);
  if (category == OpCategory::view) return cost;
  cost.bytes = bytes_written(node);
  if (category != OpCategory::creation && category != OpCategory::random)
    cost.bytes += bytes_read(graph, node);

  const double n_out = first_output_numel(node);
  switch (category) {
    case OpCategory::elementwise_unary:
    case OpCategory::elementwise_binary:
    case OpCategory::elementwise_ternary:
    case OpCategory::random:
      cost.flops = n_out;
      break;
    case OpCategory::reduction:
      cost.flops = reduction_flops(graph, node);
      break;
    case OpCategory::scan:
      cost.flops = n_out;
      break;
    case OpCategory::copy:
      cost.flops = 0;
      break;
    case OpCategory::view:
    case OpCategory::creation:
      cost.flops = 0;
      break;
    case OpCategory::matmul:
      cost.flops = matmul_flops(graph, node);
      break;
    case OpCategory::convolution:
      cost.flops = convolution_flops(graph, node);
      break;
    case OpCategory::pooling:
      cost.flops = pooling_flops(graph, node);
      break;
    case OpCategory::normalization: {
      const TensorType* input = tensor_arg(graph, node, 0, "input");
      const double n = input != nullptr ? numel_of(*input) : n_out;
      cost.flops = (node.op == Op::softmax || node.op == Op::log_softmax ? 4 : 8) * n;
      break;
    }
    case OpCategory::recurrent:
      cost.flops = recurrent_flops(graph, node);
      break;
    case OpCategory::attention:
      cost.flops = attention_flops(graph, node);
      break;
    case OpCategory::other:
      if (node.op == Op::assert_tensor_metadata) return NodeCost{};  // checks metadata only
      cost.known = node.op == Op::embedding;                         // a gather: no arithmetic
      break;
  }
  return cost;
}

GraphCost estimate_graph_cost(const Graph& graph) {
  GraphCost total;
  for (const Node& node : graph.nodes) {
    const NodeCost cost = estimate_node_cost(graph, node);
    total.flops += cost.flops;
    total.bytes += cost.bytes;
    if (!cost.known) ++total.unknown_nodes;
  }
  return total;
}

}  // namespace stitch::ir
