// Plan invariants (plan_check.h).
#include "plan/plan_check.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "plan/access.h"
#include "plan/cat_placement.h"
#include "plan/conv_geometry.h"
#include "plan/graph_edit.h"
#include "plan/kernel_choice.h"
#include "plan/op_traits.h"
#include "plan/recurrent.h"
#include "plan/subtasks.h"

namespace stitch::plan {

namespace {

Status check_body(const Plan& plan, const Body& body, int64_t index_numel, const char* name) {
  for (size_t k = 0; k < body.loads.size(); ++k)
    if (access_numel(body.loads[k]) != index_numel)
      return make_error("{} load {} has {} elements, the index space {}", name, k,
                        access_numel(body.loads[k]), index_numel);
  for (size_t s = 0; s < body.steps.size(); ++s) {
    const BodyStep& step = body.steps[s];
    if (step.node < 0 || static_cast<size_t>(step.node) >= plan.graph.nodes.size())
      return make_error("{} step {} refers to no node", name, s);
    const ir::Node& node = plan.graph.nodes[step.node];
    if (operand_count(node.op) < 0)
      return make_error("{} step {} is node '{}' ({}), not elementwise", name, s, node.id,
                        node.op_name);
    for (const Operand& operand : step.operands) {
      if (operand.kind == Operand::Kind::load &&
          (operand.index < 0 || static_cast<size_t>(operand.index) >= body.loads.size()))
        return make_error("{} step {} reads missing load {}", name, s, operand.index);
      if (operand.kind == Operand::Kind::step &&
          (operand.index < 0 || static_cast<size_t>(operand.index) >= s))
        return make_error("{} step {} reads step {}, not an earlier one", name, s, operand.index);
    }
  }
  return {};
}

int64_t product(std::initializer_list<int64_t> sizes) {
  int64_t result = 1;
  for (int64_t size : sizes)
    result *= size;
  return result;
}

// The checks of each kind's own fields and bodies: bodies against their index space's element
// count, extents against the node's output. One check_spec per SubtaskSpec alternative.
Status check_spec(const Plan& plan, const MatmulSpec& spec) {
  if (spec.epilogue)
    return check_body(plan, *spec.epilogue, product({spec.batch, spec.m, spec.n}), "epilogue");
  return {};
}

Status check_spec(const Plan& plan, const ReductionSpec& spec) {
  if (spec.prologue)
    STITCH_TRY(check_body(plan, *spec.prologue, product({spec.outer, spec.reduce, spec.inner}),
                          "prologue"));
  if (spec.epilogue)
    return check_body(plan, *spec.epilogue, product({spec.outer, spec.inner}), "epilogue");
  return {};
}

Status check_spec(const Plan& plan, const RowSpec& spec) {
  if (spec.prologue)
    STITCH_TRY(check_body(plan, *spec.prologue, spec.rows * spec.cols, "prologue"));
  if (spec.epilogue) return check_body(plan, *spec.epilogue, spec.rows * spec.cols, "epilogue");
  return {};
}

Status check_spec(const Plan& plan, const ElementwiseSpec& spec) {
  int64_t numel = 1;
  for (int64_t size : spec.shape)
    numel *= size;
  return check_body(plan, spec.body, numel, "body");
}

Status check_spec(const Plan&, const CopySpec&) {
  return {};
}

Status check_spec(const Plan& plan, const PoolSpec& spec) {
  const ir::Node& node = plan.graph.nodes.at(spec.node);
  if (spec.out.empty() || spec.out.size() > 3 ||
      spec.input.shape.size() != node.outputs[0].shape.size())
    return make_error("pool input and output ranks do not match");
  if (spec.epilogue) return check_body(plan, *spec.epilogue, node.outputs[0].numel(), "epilogue");
  return {};
}

// A convolution body's loads past 0 (load 0: x, or the result in registers) hold one value per
// (n, c) plane of `space`.
Status check_plane_loads(const Body& body, const std::vector<int64_t>& space, const char* name) {
  for (size_t k = 1; k < body.loads.size(); ++k)
    if (!per_plane(body.loads[k], space))
      return make_error("convolution {} load {} is not one value per (n, c) plane", name, k);
  return {};
}

// The output transform (plan.h): the whole epilogue, its other loads one value per plane, one
// value stored, from the body.
Status check_output_transform(const Plan& plan, const ConvSpec& spec, int64_t numel) {
  const Body& body = *spec.output_transform;
  STITCH_TRY(check_body(plan, body, numel, "output transform"));
  if (spec.epilogue || spec.stores.size() != 1 || body.loads.empty())
    return make_error("a convolution's output transform is its whole epilogue, storing one value");
  STITCH_TRY(check_plane_loads(body, conv_output_space(spec), "output transform"));
  const Operand& from = spec.stores[0].from;
  if (from.kind != Operand::Kind::step || from.index < 0 ||
      from.index >= static_cast<int>(body.steps.size()))
    return make_error("a convolution's output transform stores one of its steps");
  return {};
}

// A reduction over the output channels (plan.h): one group, forward, no epilogue pass; the
// output transform's loads one value per (n, c) plane, the reduce epilogue's one per image of
// the [batch, positions] space it runs over; one float32 value stored from the reduce epilogue,
// batch · positions elements, in a buffer of its own.
Status check_channel_reduction(const Plan& plan, const ConvSpec& spec, int64_t numel) {
  const ReduceOp op = *spec.channel_reduce;
  if (op != ReduceOp::sum && op != ReduceOp::max && op != ReduceOp::min)
    return make_error("a convolution reduces its channels by sum, max or min");
  if (spec.groups != 1 || spec.transposed || spec.epilogue || spec.stores.size() != 1 ||
      !spec.reduce_epilogue || spec.reduce_epilogue->loads.empty())
    return make_error(
        "a channel reduction runs in a forward convolution of one group, with a reduce epilogue "
        "storing one value and no epilogue pass");
  if (spec.output_transform) {
    STITCH_TRY(check_body(plan, *spec.output_transform, numel, "output transform"));
    STITCH_TRY(
        check_plane_loads(*spec.output_transform, conv_output_space(spec), "output transform"));
  }
  const int64_t positions = numel / spec.out_channels;
  const Body& finish = *spec.reduce_epilogue;
  STITCH_TRY(check_body(plan, finish, positions, "reduce epilogue"));
  for (size_t k = 1; k < finish.loads.size(); ++k) {
    const Access& load = finish.loads[k];
    if (load.shape.size() != 2 || load.shape[0] != spec.batch ||
        (load.shape[1] > 1 && load.strides[1] != 0))
      return make_error("reduce epilogue load {} is not one value per image", k);
  }
  const Store& store = spec.stores[0];
  const Operand& from = store.from;
  const bool from_body =
      (from.kind == Operand::Kind::step && from.index >= 0 &&
       from.index < static_cast<int>(finish.steps.size())) ||
      (from.kind == Operand::Kind::load && from.index == 0);
  const ir::TensorType& stored = plan.graph.type_of(store.value);
  const auto home = plan.values.find(plan.graph.name_of(store.value));
  if (!from_body || stored.numel() != positions || stored.dtype != ir::DType::float32 ||
      (home != plan.values.end() &&
       (home->second.base != store.value || !home->second.is_contiguous())))
    return make_error(
        "a channel reduction stores one float32 value per position from its reduce epilogue, "
        "into a buffer of its own");
  return {};
}

Status check_spec(const Plan& plan, const ConvSpec& spec) {
  if (spec.prologue) {
    STITCH_TRY(check_body(plan, *spec.prologue, access_numel(spec.x), "prologue"));
    if (spec.prologue->loads.empty() || spec.prologue->loads[0] != spec.x ||
        !is_dense_per_image(spec.x))
      return make_error("a convolution prologue's load 0 is x, dense per image");
    STITCH_TRY(check_plane_loads(*spec.prologue, conv_input_space(spec), "prologue"));
  }
  if (!spec.x.is_contiguous() && (spec.transposed || !is_channels_last(spec.x)) &&
      !(spec.prologue && !spec.transposed))
    return make_error(
        "a convolution's x is contiguous, (forward) channels-last or read through a prologue");
  if (!is_store_epilogue(spec.kernel_epilogue))
    return make_error("unknown convolution kernel epilogue '{}'", spec.kernel_epilogue);
  if (spec.kernel_epilogue.starts_with("bias") != spec.bias.has_value())
    return make_error("a convolution has a bias exactly when its kernel epilogue adds one");
  if (spec.bias && (spec.bias->shape != std::vector<int64_t>{spec.out_channels} ||
                    spec.bias->strides != std::vector<int64_t>{1}))
    return make_error("a convolution's kernel bias is a contiguous [out_channels] vector");
  int64_t numel = spec.batch * spec.out_channels;
  for (int64_t size : spec.output)
    numel *= size;
  if (spec.channel_reduce) return check_channel_reduction(plan, spec, numel);
  if (spec.reduce_epilogue) return make_error("a reduce epilogue without a channel reduction");
  if (spec.output_transform) STITCH_TRY(check_output_transform(plan, spec, numel));
  if (spec.epilogue) return check_body(plan, *spec.epilogue, numel, "epilogue");
  return {};
}

Status check_spec(const Plan&, const OpaqueSpec&) {
  return {};
}

Status check_spec(const Plan& plan, const AttentionSpec& spec) {
  if (spec.stores.size() != 1) return make_error("attention stores one output");
  if (spec.output &&
      (spec.output->base != spec.stores[0].value ||
       spec.output->shape !=
           std::vector<int64_t>{spec.batch, spec.heads, spec.queries, spec.value_dim} ||
       access_footprint(*spec.output) != plan.graph.type_of(spec.stores[0].value).numel()))
    return make_error(
        "attention output is not a [batch, heads, queries, value_dim] placement of "
        "its stored value's whole buffer");
  if (spec.scores)
    return check_body(plan, *spec.scores,
                      product({spec.batch, spec.heads, spec.queries, spec.keys}), "scores");
  return {};
}

Status check_spec(const Plan& plan, const ScanSpec& spec) {
  const int64_t numel = product({spec.outer, spec.length, spec.inner});
  if (numel != plan.graph.nodes.at(spec.node).outputs[0].numel())
    return make_error("scan extents do not match its output");
  if (spec.prologue) STITCH_TRY(check_body(plan, *spec.prologue, numel, "prologue"));
  if (spec.epilogue) return check_body(plan, *spec.epilogue, numel, "epilogue");
  return {};
}

Status check_spec(const Plan& plan, const GatherSpec& spec) {
  if (product({spec.outer, spec.count, spec.inner}) !=
          plan.graph.nodes.at(spec.node).outputs[0].numel() ||
      access_numel(spec.index) !=
          (spec.per_element ? product({spec.outer, spec.count, spec.inner}) : spec.count))
    return make_error("gather extents do not match its index and output");
  return {};
}

// The sizes agree with the node's outputs and operands, every operand is contiguous (cuDNN reads
// dense tensors), y is stored first and each store is output `from.index` of the node.
Status check_spec(const Plan& plan, const RecurrentSpec& spec) {
  const ir::Node& node = plan.graph.nodes.at(spec.node);
  const int64_t directions = spec.bidirectional ? 2 : 1;
  const int64_t y = spec.seq_len * spec.batch * directions * spec.hidden_size;
  const int64_t state = spec.layers * directions * spec.batch * spec.hidden_size;
  if (node.outputs.empty() || node.outputs[0].numel() != y ||
      access_numel(spec.x) != spec.seq_len * spec.batch * spec.input_size ||
      access_numel(spec.h0) != state || (spec.c0 && access_numel(*spec.c0) != state))
    return make_error("recurrent sizes do not match its input, states and output");
  if (spec.c0.has_value() != (spec.cell == RecurrentCell::lstm))
    return make_error("a recurrent layer has c0 exactly when it is an LSTM");
  if (static_cast<int>(spec.params.size()) != recurrent_param_count(spec))
    return make_error("a recurrent layer with {} params where its layout has {}",
                      spec.params.size(), recurrent_param_count(spec));
  for (size_t i = 0; i < spec.params.size(); ++i)
    if (access_numel(spec.params[i]) != recurrent_param_elements(spec, static_cast<int>(i)) ||
        !spec.params[i].is_contiguous())
      return make_error("recurrent param {} is not a contiguous tensor of its layout's size", i);
  if (!spec.x.is_contiguous() || !spec.h0.is_contiguous() || (spec.c0 && !spec.c0->is_contiguous()))
    return make_error("cuDNN reads a contiguous recurrent input and states");
  if (spec.stores.empty() || spec.stores[0].from.index != 0)
    return make_error("a recurrent layer stores its output y first");
  for (const Store& store : spec.stores)
    if (store.from.kind != Operand::Kind::load || store.from.index < 0 ||
        store.from.index >= static_cast<int>(node.outputs.size()) ||
        store.value != ir::ValueRef{ir::ValueRef::Kind::node, static_cast<int32_t>(spec.node),
                                    static_cast<int32_t>(store.from.index)})
      return make_error("a recurrent store is not an output of its node");
  return {};
}

// Where a convolution's result lives: its own dense buffer, or a window of a larger one (a cat's
// piece) — for cuDNN one of whole channels (y's image stride), for the project's kernels any
// (their output map), for a forward convolution only; the depthwise kernel writes dense.
Status check_conv_output(const Plan& plan, const Subtask& subtask, const ConvSpec& conv) {
  if (conv.stores.empty()) return {};
  const ir::ValueRef& result = conv.stores[0].value;
  const auto home = plan.values.find(plan.graph.name_of(result));
  if (home == plan.values.end() || (home->second.base == result && home->second.is_contiguous()))
    return {};
  const bool own_kernel = subtask.kernel == "igemm_tf32x3_conv" || subtask.kernel == "direct_conv";
  if (conv.transposed ||
      !(own_kernel || (subtask.kernel == "cudnn_conv" && is_dense_per_image(home->second))))
    return make_error("kernel '{}' cannot write this convolution's result where it lives",
                      subtask.kernel);
  return {};
}

// A convolution prologue is the depthwise kernel's (x contiguous) or a forward implicit GEMM's,
// applied as it copies x (x dense per image: check_spec).
Status check_conv_prologue_kernel(const Subtask& subtask, const ConvSpec& conv) {
  if (subtask.kernel == "depthwise_conv")
    return conv.x.is_contiguous() ? Status{}
                                  : make_error("the depthwise kernel reads its prologue's x dense");
  if (subtask.kernel != "igemm_tf32x3_conv" || conv.transposed)
    return make_error(
        "only the depthwise kernel and a forward implicit GEMM run a convolution prologue, not "
        "'{}'",
        subtask.kernel);
  return {};
}

}  // namespace

// cuDNN timed against the project's kernel (kernel_choice.h) runs the same convolution (strict
// FP32, or TF32 engines under the subtask's tensor_math): x read dense, NCHW or channels-last
// (through the implicit GEMM's transformed copy, with a prologue), and the result written dense,
// NCHW or channels-last (plan/layout.h), or into a window of whole channels (a cat's piece,
// NCHW), the kernel's epilogue or output transform its one pass.
Status check_cudnn_alternative(const Plan& plan, const Subtask& subtask, const ConvSpec* conv) {
  if (conv == nullptr || (subtask.kernel != "igemm_tf32x3_conv" && subtask.kernel != "direct_conv"))
    return make_error("cuDNN is timed only against the project's convolution kernels");
  if (!(conv->x.is_contiguous() || conv->prologue || is_channels_last(conv->x)))
    return make_error("cuDNN, timed against the kernel, needs a dense x, NCHW or channels-last");
  const ir::ValueRef& result = conv->stores.at(0).value;
  const auto home = plan.values.find(plan.graph.name_of(result));
  if (home == plan.values.end() ||
      !((home->second.base == result &&
         (home->second.is_contiguous() || is_channels_last(home->second))) ||
        is_dense_per_image(home->second)))
    return make_error(
        "cuDNN, timed against the kernel, writes a dense output of its own, NCHW or "
        "channels-last, or a window of whole channels");
  // The output transform then runs as one pass over that output, in place.
  if (conv->output_transform && (conv->kernel_epilogue != "none" || home->second.base != result ||
                                 !home->second.is_contiguous()))
    return make_error(
        "cuDNN, timed against a kernel with an output transform, writes a dense output of its own "
        "with no kernel epilogue");
  return {};
}

namespace {

// Where the plan keeps its buffers: one an at_init subtask writes is persistent (what init wrote
// must outlast every forward), and two arena buffers whose lifetimes — first write to last read,
// in subtask order — overlap share no byte.
Status check_memory(const Plan& plan) {
  std::map<std::string, const BufferSlot*> slot_of;
  for (const BufferSlot& slot : plan.buffers)
    slot_of[slot.value] = &slot;
  auto buffer_name = [&](const ir::ValueRef& value) {
    return plan.graph.name_of(stored_buffer_by_name(plan.graph, plan.values, value));
  };
  std::map<std::string, std::pair<size_t, size_t>> lifetimes;  // arena buffer: first, last
  for (size_t i = 0; i < plan.subtasks.size(); ++i) {
    const Subtask& subtask = plan.subtasks[i];
    for (const ir::ValueRef& value : subtask_writes(subtask)) {
      const std::string buffer = buffer_name(value);
      const auto slot = slot_of.find(buffer);
      if (slot == slot_of.end()) continue;  // check_plan names a stored value without a slot
      const BufferSlot::Where where = slot->second->where;
      if (subtask.at_init && where != BufferSlot::Where::persistent)
        return make_error("subtask {} writes '{}' at init, but it lives in the {}", subtask.id,
                          buffer, where == BufferSlot::Where::arena ? "arena" : "caller's output");
      if (where == BufferSlot::Where::arena) lifetimes.try_emplace(buffer, i, i);
    }
    for (const Access& read : subtask_reads(subtask))
      if (auto it = lifetimes.find(buffer_name(read.base)); it != lifetimes.end())
        it->second.second = std::max(it->second.second, i);
  }
  for (auto a = lifetimes.begin(); a != lifetimes.end(); ++a)
    for (auto b = std::next(a); b != lifetimes.end(); ++b) {
      if (a->second.first > b->second.second || b->second.first > a->second.second) continue;
      const BufferSlot &x = *slot_of.at(a->first), &y = *slot_of.at(b->first);
      if (x.offset < y.offset + y.bytes && y.offset < x.offset + x.bytes)
        return make_error("arena buffers '{}' and '{}' share bytes while both are live",
                          a->first, b->first);
    }
  return {};
}

}  // namespace

Status check_plan(const Plan& plan) {
  std::set<std::string> stored;
  for (const Subtask& subtask : plan.subtasks) {
    auto fail = [&](const Error& error) { return error.with_context("subtask " + subtask.id); };
    // A GEMM's (convolution's) epilogue pass reads back what the library call of the same
    // subtask wrote.
    if (const auto* matmul = std::get_if<MatmulSpec>(&subtask.spec);
        matmul && !matmul->stores.empty())
      stored.insert(value_key(matmul->stores[0].value));
    if (const auto* conv = std::get_if<ConvSpec>(&subtask.spec); conv && !conv->stores.empty()) {
      // The value and its buffer (a cat's, where a kernel writes a window of it).
      const ir::ValueRef& result = conv->stores[0].value;
      stored.insert(value_key(result));
      stored.insert(value_key(stored_buffer_by_name(plan.graph, plan.values, result)));
    }
    for (const Access& read : subtask_reads(subtask))
      if (read.base.kind == ir::ValueRef::Kind::node && !stored.count(value_key(read.base)))
        return fail(
            make_error("reads '{}' before any subtask stores it", plan.graph.name_of(read.base)));
    if (const auto* conv = std::get_if<ConvSpec>(&subtask.spec); conv && conv->prologue)
      if (Status held = check_conv_prologue_kernel(subtask, *conv); !held.ok())
        return fail(held.error());
    if (const auto* conv = std::get_if<ConvSpec>(&subtask.spec))
      if (Status held = check_conv_output(plan, subtask, *conv); !held.ok())
        return fail(held.error());
    if (const auto* conv = std::get_if<ConvSpec>(&subtask.spec);
        conv && (conv->kernel_epilogue != "none" || conv->output_transform) &&
        subtask.kernel != "igemm_tf32x3_conv" && subtask.kernel != "direct_conv")
      return fail(
          make_error("kernel '{}' applies no convolution kernel epilogue or output transform",
                     subtask.kernel));
    if (const auto* conv = std::get_if<ConvSpec>(&subtask.spec);
        conv && conv->channel_reduce &&
        ((subtask.kernel != "direct_conv" && subtask.kernel != "igemm_tf32x3_conv") ||
         subtask.tunables.count("cudnn_alternative") > 0))
      return fail(
          make_error("only the direct and implicit-GEMM kernels reduce a convolution's channels, "
                     "timed against no cuDNN"));
    if (subtask.tunables.count("strict_alternative") > 0 &&
        (!std::holds_alternative<MatmulSpec>(subtask.spec) ||
         subtask.tunables.count("split_tf32x3") == 0 ||
         subtask_tensor_math(subtask) != TensorMath::fp32))
      return fail(make_error("strict FP32 is timed only against a split-precision GEMM"));
    if (subtask.tunables.count("cudnn_alternative") > 0) {
      const Status timed =
          check_cudnn_alternative(plan, subtask, std::get_if<ConvSpec>(&subtask.spec));
      if (!timed.ok()) return fail(timed.error());
    }
    Status bodies =
        std::visit([&](const auto& spec) { return check_spec(plan, spec); }, subtask.spec);
    if (!bodies.ok()) return fail(bodies.error());
    for (const ir::ValueRef& value : subtask_writes(subtask))
      stored.insert(value_key(stored_buffer_by_name(plan.graph, plan.values, value)));
  }
  std::set<std::string> slots;
  for (const BufferSlot& slot : plan.buffers)
    slots.insert(slot.value);
  for (const Subtask& subtask : plan.subtasks)
    for (const ir::ValueRef& value : subtask_writes(subtask)) {
      const ir::ValueRef buffer = stored_buffer_by_name(plan.graph, plan.values, value);
      if (!slots.count(plan.graph.name_of(buffer)))
        return make_error("subtask {}: stored value '{}' has no buffer", subtask.id,
                          plan.graph.name_of(value));
    }
  for (size_t k = 0; k < plan.graph.outputs.size(); ++k) {
    const auto it = plan.values.find(plan.graph.name_of(plan.graph.outputs[k]));
    if (it == plan.values.end() || !stored.count(value_key(it->second.base)))
      return make_error("graph output {} is never stored", k);
  }
  return check_memory(plan);
}

}  // namespace stitch::plan
