// A convolution's epilogue folded into its kernel (conv_epilogue.h).
#include "plan/conv_epilogue.h"

#include <algorithm>
#include <optional>
#include <string>

#include "plan/access.h"
#include "plan/conv_geometry.h"
#include "plan/graph_edit.h"
#include "plan/kernel_choice.h"
#include "plan/op_traits.h"
#include "plan/subtasks.h"

namespace stitch::plan {
namespace {

using ir::Op;

constexpr Operand kRawResult{Operand::Kind::load, 0, 0};

Operand step_result(int step) {
  return Operand{Operand::Kind::step, step, 0};
}

// The steps that read `operand`.
std::vector<int> readers(const Body& body, const Operand& operand) {
  std::vector<int> found;
  for (size_t s = 0; s < body.steps.size(); ++s) {
    const auto& operands = body.steps[s].operands;
    if (std::find(operands.begin(), operands.end(), operand) != operands.end())
      found.push_back(static_cast<int>(s));
  }
  return found;
}

bool stored(const std::vector<Store>& stores, const Operand& operand) {
  return std::any_of(stores.begin(), stores.end(),
                     [&](const Store& store) { return store.from == operand; });
}

// "relu" or "gelu" where the step applies one to `input` (GELU in the tanh form only: the
// kernels' GELU, as cuBLASLt's), else empty.
std::string activation_of(const ir::Graph& graph, const BodyStep& step, const Operand& input) {
  if (step.operands.size() != 1 || step.operands[0] != input) return "";
  const ir::Node& node = graph.nodes[step.node];
  if (node.op == Op::relu) return "relu";
  const ir::Arg* approximate = node.kwarg("approximate");
  if (node.op == Op::gelu && approximate != nullptr && approximate->as_string() != nullptr &&
      *approximate->as_string() == "tanh")
    return "gelu";
  return "";
}

// The load a step adds to `input` (alpha 1), where it is a contiguous vector over the channels
// (dim 1 of the output space) broadcast over every other dim; -1 otherwise.
int channel_bias_load(const ir::Graph& graph, const Body& body, const BodyStep& step,
                      const Operand& input, int64_t channels) {
  const ir::Node& node = graph.nodes[step.node];
  if (node.op != Op::add_tensor || step.operands.size() != 2 ||
      double_arg(node, 2, "alpha", 1.0) != 1.0)
    return -1;
  const Operand& other = step.operands[0] == input ? step.operands[1] : step.operands[0];
  if ((step.operands[0] != input && step.operands[1] != input) || other == input ||
      other.kind != Operand::Kind::load)
    return -1;
  const Access& load = body.loads[other.index];
  if (load.shape.size() < 3 || load.shape[1] != channels ||
      graph.type_of(load.base).dtype != ir::DType::float32)
    return -1;
  for (size_t d = 0; d < load.shape.size(); ++d)
    if (load.shape[d] != 1 && load.strides[d] != (d == 1 ? 1 : 0)) return -1;
  return other.index;
}

// The chain's head the kernel can take: the bias step (or -1) and the activation step (or -1).
struct Head {
  int bias_load = -1, bias_step = -1, activation_step = -1;
  std::string activation;
  int last() const { return activation_step >= 0 ? activation_step : bias_step; }
};

// The head of `body` (load 0 the raw result of a convolution of `channels` output channels;
// `stores` its stores past the raw result's).
std::optional<Head> foldable_head(const ir::Graph& graph, const Body& body, int64_t channels,
                                  const std::vector<Store>& stores) {
  const std::vector<int> first = readers(body, kRawResult);
  if (first.size() != 1 || stored(stores, kRawResult)) return std::nullopt;
  Head head;
  const BodyStep& step = body.steps[first[0]];
  head.activation = activation_of(graph, step, kRawResult);
  if (!head.activation.empty()) {
    head.activation_step = first[0];
    return head;
  }
  head.bias_load = channel_bias_load(graph, body, step, kRawResult, channels);
  if (head.bias_load < 0) return std::nullopt;
  head.bias_step = first[0];
  // An activation after the bias folds in too where it is the sum's only use.
  const Operand sum = step_result(head.bias_step);
  const std::vector<int> next = readers(body, sum);
  if (next.size() == 1 && !stored(stores, sum)) {
    head.activation = activation_of(graph, body.steps[next[0]], sum);
    if (!head.activation.empty()) head.activation_step = next[0];
  }
  return head;
}

// The operand after the head's steps (and its bias load, when unread) leave the body: the folded
// result becomes load 0, later steps and loads move down.
Operand renumbered(const Operand& operand, const Head& head, bool bias_load_dropped) {
  Operand out = operand;
  if (operand.kind == Operand::Kind::step) {
    if (operand.index == head.last()) return kRawResult;
    for (int removed : {head.bias_step, head.activation_step})
      if (removed >= 0 && removed < operand.index) --out.index;
  } else if (operand.kind == Operand::Kind::load && bias_load_dropped &&
             operand.index > head.bias_load) {
    --out.index;
  }
  return out;
}

// `body` without the head's steps, and without its bias load where nothing else (`stores`
// included) reads it: the head's result is load 0 now. Returns whether the bias load went.
bool strip_head(Body& body, const Head& head, const std::vector<Store>& stores) {
  std::vector<BodyStep> steps;
  for (size_t s = 0; s < body.steps.size(); ++s)
    if (static_cast<int>(s) != head.bias_step && static_cast<int>(s) != head.activation_step)
      steps.push_back(body.steps[s]);
  body.steps = std::move(steps);
  bool bias_load_dropped = false;
  if (head.bias_load >= 0) {
    const Operand bias{Operand::Kind::load, head.bias_load, 0};
    bias_load_dropped = readers(body, bias).empty() && !stored(stores, bias);
  }
  for (BodyStep& step : body.steps)
    for (Operand& operand : step.operands)
      operand = renumbered(operand, head, bias_load_dropped);
  if (bias_load_dropped) body.loads.erase(body.loads.begin() + head.bias_load);
  return bias_load_dropped;
}

// The head as the kernel's epilogue of `spec` (`body`: the one it came from, its bias load).
void take_head(ConvSpec& spec, const Body& body, const Head& head) {
  if (head.bias_load >= 0) {
    const Access& load = body.loads[head.bias_load];
    spec.bias = Access{load.base, load.offset, {spec.out_channels}, {1}};
  }
  spec.kernel_epilogue = head.bias_load < 0        ? head.activation
                         : head.activation.empty() ? "bias"
                                                   : "bias_" + head.activation;
}

// The body and stores without the head: the kernel stores `folded`, which load 0 reads back at
// `destination` (its buffer, or its window of a cat's).
void remove_head(ConvSpec& spec, const Head& head, const ir::ValueRef& folded,
                 const Access& destination) {
  Body& body = *spec.epilogue;
  const int last = head.last();
  const bool bias_load_dropped = strip_head(body, head, spec.stores);
  body.loads[0] = destination;
  // stores[0] is now the folded value, which the kernel writes; a store of it from the pass would
  // repeat that.
  spec.stores[0] = Store{folded, kRawResult};
  std::vector<Store> stores{spec.stores[0]};
  for (size_t k = 1; k < spec.stores.size(); ++k) {
    if (spec.stores[k].from == step_result(last)) continue;
    stores.push_back(Store{spec.stores[k].value, renumbered(spec.stores[k].from, head,
                                                            bias_load_dropped)});
  }
  spec.stores = std::move(stores);
  if (body.steps.empty() && spec.stores.size() == 1) spec.epilogue.reset();
}

}  // namespace

bool fold_conv_epilogue(const ir::Graph& graph, const ValueMap& values,
                        std::vector<Subtask>& subtasks, size_t index) {
  Subtask& subtask = subtasks[index];
  auto* spec = std::get_if<ConvSpec>(&subtask.spec);
  if (spec == nullptr || spec->kernel_epilogue != "none" || !spec->epilogue ||
      spec->stores.empty() ||
      (subtask.kernel != "igemm_tf32x3_conv" && subtask.kernel != "direct_conv"))
    return false;
  const ir::ValueRef raw = spec->stores[0].value;
  if (spec->stores[0].from != kRawResult || read_elsewhere(graph, values, subtasks, index, raw))
    return false;
  const std::optional<Head> head =
      foldable_head(graph, *spec->epilogue, spec->out_channels,
                    std::vector<Store>(spec->stores.begin() + 1, spec->stores.end()));
  if (!head) return false;
  const ir::ValueRef folded = node_value(spec->epilogue->steps[head->last()].node);
  // A forward kernel writes a window of a larger buffer (a cat's) through its output map.
  const Access& destination = values.at(value_key(folded));
  const bool own = owns_buffer(graph, values, folded);
  if ((!own && spec->transposed) || destination.shape != spec->epilogue->loads[0].shape)
    return false;
  // With cuDNN timed against the kernel (kernel_choice.h), cuDNN's side applies the folded head
  // in a pass of its own: fold only where that pass is all that remains, into a dense buffer of
  // its own, NCHW or channels-last (layout.h), or a window of whole channels of a cat's.
  const bool timed = subtask.tunables.count("cudnn_alternative") > 0;
  if (timed && !own && !is_own_channels_last(destination, folded) &&
      !is_dense_per_image(destination))
    return false;
  ConvSpec folded_spec = *spec;
  take_head(folded_spec, *spec->epilogue, *head);
  remove_head(folded_spec, *head, folded, destination);
  if (timed && folded_spec.epilogue) return false;
  *spec = std::move(folded_spec);
  // The pass's launch shape (choose_conv) has nothing left to launch.
  if (!spec->epilogue) {
    subtask.tunables.erase("block");
    subtask.tunables.erase("vector_width");
  }
  return true;
}

namespace {

// The special functions (op_traits.h) an output transform may evaluate per element. Measured on
// the H200 (2026-12-05, level 2's convolution tasks): on the implicit GEMM, whose consumer warps
// (8 per SM) evaluate it between tiles, a transform of one (a GELU, a sigmoid) gained over the
// separate pass (93_: 1.27x -> 4.45x eager with the phase kernel) while Mish twice (six by its
// old exp-log1p-tanh formula; two now) lost 3.3 ms of 9.0 (4_: 1.99x -> 1.45x); on the direct
// kernel, at full occupancy, two (tanh, sigmoid: 48_) gained.
constexpr int kIgemmTransformSpecialFunctions = 1;
constexpr int kDirectTransformSpecialFunctions = 3;

int transform_special_limit(const Subtask& subtask) {
  return subtask.kernel == "direct_conv" ? kDirectTransformSpecialFunctions
                                         : kIgemmTransformSpecialFunctions;
}

int body_special_functions(const ir::Graph& graph, const Body& body) {
  int count = 0;
  for (const BodyStep& step : body.steps)
    count += special_functions(graph.nodes[step.node].op);
  return count;
}

}  // namespace

bool fold_conv_output_transform(const ir::Graph& graph, const ValueMap& values,
                                std::vector<Subtask>& subtasks, size_t index) {
  Subtask& subtask = subtasks[index];
  auto* spec = std::get_if<ConvSpec>(&subtask.spec);
  if (spec == nullptr || !spec->epilogue || spec->output_transform ||
      (subtask.kernel != "igemm_tf32x3_conv" && subtask.kernel != "direct_conv") ||
      spec->stores.size() != 2 || spec->stores[0].from != kRawResult ||
      spec->stores[1].from.kind != Operand::Kind::step)
    return false;
  if (read_elsewhere(graph, values, subtasks, index, spec->stores[0].value)) return false;
  const Body& body = *spec->epilogue;
  if (body_special_functions(graph, body) > transform_special_limit(subtask)) return false;
  const std::vector<int64_t> space = conv_output_space(*spec);
  for (size_t k = 1; k < body.loads.size(); ++k)
    if (!per_plane(body.loads[k], space)) return false;
  const ir::ValueRef result = spec->stores[1].value;
  if (graph.type_of(result).dtype != ir::DType::float32) return false;
  // Where the kernel writes it: a buffer of its own, or (a forward one, untimed) a window of a
  // cat's through its output map; cuDNN, timed against the kernel, transforms its dense output
  // in place.
  const Access& destination = values.at(value_key(result));
  const bool own = owns_buffer(graph, values, result);
  const bool timed = subtask.tunables.count("cudnn_alternative") > 0;
  if (destination.shape != body.loads[0].shape || (!own && spec->transposed) ||
      (timed && (!own || spec->kernel_epilogue != "none")))
    return false;
  spec->output_transform = std::move(spec->epilogue);
  spec->epilogue.reset();
  spec->output_transform->loads[0] = destination;
  spec->stores = {spec->stores[1]};
  subtask.tunables.erase("block");
  subtask.tunables.erase("vector_width");
  return true;
}

namespace {

// `load`, over a channel reduction's [outer, reduce, inner] = [batch, channels, positions] space,
// as one value per (n, c) plane of the convolution's output space `space`; nullopt where it varies
// over the positions.
std::optional<Access> as_plane_load(const Access& load, const std::vector<int64_t>& space) {
  if (load.shape.size() != 3 || (load.shape[2] > 1 && load.strides[2] != 0)) return std::nullopt;
  Access plane{load.base, load.offset, space, std::vector<int64_t>(space.size(), 0)};
  plane.strides[0] = load.strides[0];
  plane.strides[1] = load.strides[1];
  return plane;
}

// The reduction's epilogue as the kernel's: loads past 0 one value per image of its [batch,
// positions] space and none of the reduction's own outputs (min's indices), the reduce count a
// scalar; nullopt where it cannot be. Without an epilogue, one storing the reduced value.
std::optional<Body> as_reduce_epilogue(const ReductionSpec& reduction, int64_t channels) {
  if (!reduction.epilogue)
    return Body{{contiguous_access(node_value(reduction.node), {reduction.outer, reduction.inner})},
                {}};
  Body body = *reduction.epilogue;
  for (size_t k = 1; k < body.loads.size(); ++k) {
    const Access& load = body.loads[k];
    const bool reduction_output =
        load.base.kind == ir::ValueRef::Kind::node && load.base.index == reduction.node;
    if (reduction_output || load.shape.size() != 2 || (load.shape[1] > 1 && load.strides[1] != 0))
      return std::nullopt;
  }
  for (BodyStep& step : body.steps)
    for (Operand& operand : step.operands)
      if (operand.kind == Operand::Kind::index)
        operand = Operand{Operand::Kind::scalar, 0, static_cast<double>(channels)};
  return body;
}

bool reads_reduce_count(const Body& body) {
  return std::any_of(body.steps.begin(), body.steps.end(), [](const BodyStep& step) {
    return std::any_of(step.operands.begin(), step.operands.end(), [](const Operand& operand) {
      return operand.kind == Operand::Kind::index;
    });
  });
}

// The first subtask after `index` reading `value`, or 0.
size_t first_reader(const std::vector<Subtask>& subtasks, size_t index, const ir::ValueRef& value) {
  for (size_t i = index + 1; i < subtasks.size(); ++i)
    for (const Access& read : subtask_reads(subtasks[i]))
      if (read.base == value) return i;
  return 0;
}

}  // namespace

bool kernel_reduces_channels(const Subtask& subtask, const ConvSpec& spec) {
  if (subtask.kernel == "direct_conv")
    return direct_conv_reduces_channels(spec, subtask_tensor_math(subtask));
  return subtask.kernel == "igemm_tf32x3_conv" && conv_igemm_reduces_channels(spec) &&
         subtask.tunables.count("cudnn_alternative") == 0;
}

bool fold_conv_channel_reduction(const ir::Graph& graph, const ValueMap& values,
                                 std::vector<Subtask>& subtasks, size_t index) {
  Subtask& subtask = subtasks[index];
  auto* spec = std::get_if<ConvSpec>(&subtask.spec);
  if (spec == nullptr || spec->epilogue || spec->output_transform || spec->channel_reduce ||
      spec->stores.size() != 1 || spec->stores[0].from != kRawResult ||
      !kernel_reduces_channels(subtask, *spec))
    return false;
  const ir::ValueRef raw = spec->stores[0].value;
  const size_t reader = first_reader(subtasks, index, raw);
  if (reader == 0 || !owns_buffer(graph, values, raw) ||
      read_elsewhere(graph, values, subtasks, {index, reader}, raw))
    return false;
  const auto* reduction = std::get_if<ReductionSpec>(&subtasks[reader].spec);
  const std::vector<int64_t>& out_shape = graph.type_of(raw).shape;
  const int64_t channels = spec->out_channels;
  if (reduction == nullptr ||
      (reduction->op != ReduceOp::sum && reduction->op != ReduceOp::max &&
       reduction->op != ReduceOp::min) ||
      reduction->input !=
          contiguous_access(raw, {spec->batch, channels,
                                  graph.type_of(raw).numel() / (spec->batch * channels)}) ||
      reduction->stores.size() != 1 || !owns_buffer(graph, values, reduction->stores[0].value) ||
      graph.type_of(reduction->stores[0].value).dtype != ir::DType::float32)
    return false;
  std::optional<Body> transform;
  if (reduction->prologue && !reduction->prologue->steps.empty()) {
    transform = *reduction->prologue;
    if (reads_reduce_count(*transform) ||
        body_special_functions(graph, *transform) > transform_special_limit(subtask))
      return false;
    transform->loads[0] = contiguous_access(raw, out_shape);
    for (size_t k = 1; k < transform->loads.size(); ++k) {
      const std::optional<Access> plane = as_plane_load(transform->loads[k], out_shape);
      if (!plane) return false;
      transform->loads[k] = *plane;
    }
  }
  std::optional<Body> finish = as_reduce_epilogue(*reduction, channels);
  if (!finish) return false;
  // A bias and activation first are the kernel's epilogue (per channel, not per element); where
  // they make the value reduced (the last step), nothing of the transform remains.
  if (const std::optional<Head> head =
          transform ? foldable_head(graph, *transform, channels, {}) : std::nullopt) {
    const bool whole = head->last() + 1 == static_cast<int>(transform->steps.size());
    take_head(*spec, *transform, *head);
    strip_head(*transform, *head, {});
    if (whole) transform.reset();
  }
  spec->output_transform = std::move(transform);
  spec->channel_reduce = reduction->op;
  spec->reduce_epilogue = std::move(finish);
  spec->stores = reduction->stores;
  const std::vector<int>& nodes = subtasks[reader].nodes;
  subtask.nodes.insert(subtask.nodes.end(), nodes.begin(), nodes.end());
  // cuDNN (and its workspace) would write the whole result the fold saves; no pass to launch.
  for (const char* tunable : {"cudnn_alternative", "cudnn_estimate_us", "workspace_bytes", "block",
                              "vector_width"})
    subtask.tunables.erase(tunable);
  subtasks.erase(subtasks.begin() + static_cast<std::ptrdiff_t>(reader));
  renumber_subtask_ids(subtasks);
  return true;
}

}  // namespace stitch::plan
