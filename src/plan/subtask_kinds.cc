// SpecBuilder's add_<kind> (subtask_builder.h): one per GroupKind, each the spec of its kind built
// from one fusion group, with the subtask's procedural id ("s03_reduce_sum_64x128x1"). The steps
// they share (bodies, prologues, register epilogues, push) are in subtasks.cc.
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "plan/access.h"
#include "plan/conv_geometry.h"
#include "plan/kernel_layouts.h"
#include "plan/op_traits.h"
#include "plan/passes.h"
#include "plan/pooling.h"
#include "plan/recurrent.h"
#include "plan/subtask_builder.h"

namespace stitch::plan::subtask_building {

namespace {

using ir::Op;
using ir::ValueRef;

std::string dims_text(const std::vector<int64_t>& dims) {
  return dims.empty() ? "scalar" : fmt::format("{}", fmt::join(dims, "x"));
}

}  // namespace

Status SpecBuilder::add_elementwise(const Group& group) {
  const std::vector<int64_t> shape = graph_.nodes[group.body[0]].outputs[0].shape;
  BodyBuilder builder(graph_, values_, fusion_.folded_constants, shape);
  ElementwiseSpec spec;
  spec.shape = shape;
  for (int node : group.body)
    builder.add_step(node);
  add_body_stores(group.body, builder, spec.stores);
  spec.body = builder.body();
  push(group, std::move(spec), "elementwise_" + dims_text(shape));
  return {};
}

Status SpecBuilder::add_reduction(const Group& group) {
  const ir::Node& node = graph_.nodes[group.anchor];
  const auto geometry = reduce_geometry(graph_, node);
  if (!geometry) return make_error("node '{}': reduced dims are not one block", node.id);
  ReductionSpec spec;
  spec.node = group.anchor;
  spec.op = reduce_op_of(node.op);
  spec.outer = geometry->outer, spec.reduce = geometry->reduce, spec.inner = geometry->inner;
  if (node.op == Op::var_mean_correction) spec.correction = double_arg(node, 2, "correction", 1.0);
  const std::vector<int64_t> index_shape{spec.outer, spec.reduce, spec.inner};
  if (!group.prologue.empty()) {
    spec.input = add_prologue(group.prologue, index_shape, spec.prologue);
  } else {
    // An input that does not merge keeps its own shape: the kernel unravels the index.
    const Access& input = values_.at(value_key(*node.args[0].ref()));
    spec.input = reshape_access(input, index_shape).value_or(input);
  }
  spec.epilogue = register_epilogue(group, {spec.outer, spec.inner}, spec.stores);
  push(group, std::move(spec),
       fmt::format("reduce_{}_{}x{}x{}", kReduceOpNames[static_cast<int>(reduce_op_of(node.op))],
                   geometry->outer, geometry->reduce, geometry->inner));
  return {};
}

Status SpecBuilder::add_scan(const Group& group) {
  const ir::Node& node = graph_.nodes[group.anchor];
  const auto geometry = scan_geometry(graph_, node);
  if (!geometry) return make_error("node '{}': scan dim out of range", node.id);
  ScanSpec spec;
  spec.node = group.anchor;
  spec.op = scan_op_of(node.op);
  spec.outer = geometry->outer, spec.length = geometry->length, spec.inner = geometry->inner;
  spec.reverse = scan_reverse(node), spec.exclusive = scan_exclusive(node);
  const std::vector<int64_t> index_shape{spec.outer, spec.length, spec.inner};
  if (!group.prologue.empty()) {
    spec.input = add_prologue(group.prologue, index_shape, spec.prologue);
  } else {
    const Access& input = values_.at(value_key(*node.args[0].ref()));
    spec.input = reshape_access(input, index_shape).value_or(input);
  }
  spec.epilogue = register_epilogue(group, index_shape, spec.stores);
  const std::string name =
      fmt::format("scan_{}{}{}_{}x{}x{}", kScanOpNames[static_cast<int>(spec.op)],
                  spec.reverse ? "_reverse" : "", spec.exclusive ? "_exclusive" : "", spec.outer,
                  spec.length, spec.inner);
  push(group, std::move(spec), name);
  return {};
}

Status SpecBuilder::add_gather(const Group& group) {
  const ir::Node& node = graph_.nodes[group.anchor];
  const auto geometry = gather_geometry(graph_, node);
  if (!geometry) return make_error("node '{}': not a gather along one dim", node.id);
  GatherSpec spec;
  spec.node = group.anchor;
  spec.outer = geometry->outer, spec.size = geometry->size;
  spec.count = geometry->count, spec.inner = geometry->inner;
  const Access& x = values_.at(value_key(geometry->input));
  spec.input = reshape_access(x, {spec.outer, spec.size, spec.inner}).value_or(x);
  spec.per_element = geometry->per_element;
  const Access& index = values_.at(value_key(geometry->index));
  spec.index = spec.per_element
                   ? reshape_access(index, {spec.outer, spec.count, spec.inner}).value_or(index)
                   : index;
  spec.stores.push_back(Store{node_value(group.anchor), Operand{Operand::Kind::load, 0}});
  push(group, std::move(spec),
       fmt::format("gather_{}x{}x{}_from_{}", geometry->outer, geometry->count, geometry->inner,
                   geometry->size));
  return {};
}

Status SpecBuilder::add_row(const Group& group) {
  const ir::Node& node = graph_.nodes[group.anchor];
  RowSpec spec;
  spec.node = group.anchor;
  spec.op = group.row_op;
  ValueRef x;
  if (group.rms_input) {
    x = *group.rms_input;
    spec.eps = group.rms_eps;
    spec.cols = graph_.type_of(x).shape.back();
    spec.rows = spec.cols == 0 ? 0 : graph_.type_of(x).numel() / spec.cols;
    if (group.rms_weight)
      spec.weight = reshape_access(values_.at(value_key(*group.rms_weight)), {spec.cols});
  } else {
    const auto rows = row_geometry(graph_, node);
    spec.rows = rows->rows, spec.cols = rows->cols;
    x = *node.args[0].ref();
    if (node.op == Op::native_layer_norm) {
      spec.eps = double_arg(node, 4, "eps", 1e-5);
      for (size_t a : {2u, 3u}) {
        if (a >= node.args.size() || !node.args[a].is_ref()) continue;
        auto vector = reshape_access(values_.at(value_key(*node.args[a].ref())), {spec.cols});
        if (!vector) return make_error("node '{}': weight/bias is not a [cols] vector", node.id);
        (a == 2 ? spec.weight : spec.bias) = vector;
      }
    }
  }
  if (!group.prologue.empty()) {
    spec.input = add_prologue(group.prologue, {spec.rows, spec.cols}, spec.prologue);
  } else {
    auto input = row_access(values_.at(value_key(x)), RowGeometry{spec.rows, spec.cols});
    if (!input) return make_error("node '{}': rows are not unit-stride", node.id);
    spec.input = *input;
  }
  BodyBuilder builder(graph_, values_, fusion_.folded_constants, {spec.rows, spec.cols});
  const ValueRef result = node_value(group.anchor);
  builder.add_register_value(result);
  for (int member : group.body)
    builder.add_step(member);
  if (must_store(graph_, uses_, result, members_))
    spec.stores.push_back(Store{result, Operand{Operand::Kind::load, 0}});
  add_body_stores(group.body, builder, spec.stores);
  if (!group.body.empty()) spec.epilogue = builder.body();
  static constexpr const char* kOps[] = {"softmax", "log_softmax", "layer_norm", "rms_norm"};
  push(group, std::move(spec),
       fmt::format("row_{}_{}x{}", kOps[static_cast<int>(group.row_op)], spec.rows, spec.cols));
  return {};
}

Status SpecBuilder::add_matmul(const Group& group) {
  const ir::Node& node = graph_.nodes[group.anchor];
  const bool has_self = node.op == Op::addmm || node.op == Op::baddbmm;
  const ValueRef a = *node.args.at(has_self ? 1 : 0).ref();
  const ValueRef b = *node.args.at(has_self ? 2 : 1).ref();
  MatmulSpec spec;
  spec.node = group.anchor;
  auto matrix_a = matrix_access(values_.at(value_key(a)));
  auto matrix_b = matrix_access(values_.at(value_key(b)));
  if (!matrix_a || !matrix_b) return make_error("node '{}': operands are not matrices", node.id);
  spec.a = *matrix_a, spec.b = *matrix_b;
  spec.batch = node.op == Op::bmm || node.op == Op::baddbmm ? node.outputs[0].shape[0] : 1;
  spec.m = spec.a.shape[1], spec.k = spec.a.shape[2], spec.n = spec.b.shape[2];
  if (has_self) {
    spec.beta = double_arg(node, 3, "beta", 1.0);
    spec.alpha = double_arg(node, 4, "alpha", 1.0);
  }
  spec.library_epilogue = group.library_epilogue;
  spec.alpha *= group.alpha;
  const std::vector<int64_t> out_shape{spec.batch, spec.m, spec.n};
  if (spec.library_epilogue.starts_with("bias")) {
    const ValueRef bias = group.bias ? *group.bias : *node.args[0].ref();
    spec.bias = reshape_access(values_.at(value_key(bias)), {spec.n});
    if (!spec.bias) return make_error("node '{}': bias is not a contiguous vector", node.id);
    if (group.bias) spec.beta = 1.0;
  } else if (has_self) {
    auto full = broadcast_access(values_.at(value_key(*node.args[0].ref())), node.outputs[0].shape);
    if (full) full = matrix_access(*full);
    if (!full) return make_error("node '{}': bias does not broadcast to the output", node.id);
    spec.bias = *full;
  }
  const ValueRef result = node_value(group.library.empty() ? group.anchor : group.library.back());
  BodyBuilder builder(graph_, values_, fusion_.folded_constants, out_shape);
  builder.add_register_value(result);
  for (int member : group.body)
    builder.add_step(member);
  spec.stores.push_back(Store{result, Operand{Operand::Kind::load, 0}});
  add_body_stores(group.body, builder, spec.stores);
  if (!group.body.empty()) spec.epilogue = builder.body();
  const std::string shape = spec.batch > 1
                                ? fmt::format("{}x{}x{}x{}", spec.batch, spec.m, spec.n, spec.k)
                                : fmt::format("{}x{}x{}", spec.m, spec.n, spec.k);
  push(group, std::move(spec),
       fmt::format("matmul_{}{}",
                   group.library_epilogue == "none" ? "" : group.library_epilogue + "_", shape));
  return {};
}

Status SpecBuilder::add_conv(const Group& group) {
  const ir::Node& node = graph_.nodes[group.anchor];
  STITCH_ASSIGN_OR_RETURN(
      ConvSpec spec,
      conv_spec(graph_, values_, group.anchor,
                group.pattern.empty() ? std::nullopt : std::optional<int>(group.pattern[0])));
  if (!group.prologue.empty())
    spec.x = add_prologue(group.prologue, conv_input_space(spec), spec.prologue);
  const ValueRef result = node_value(group.anchor);
  BodyBuilder builder(graph_, values_, fusion_.folded_constants, node.outputs[0].shape);
  builder.add_register_value(result);
  for (int member : group.body)
    builder.add_step(member);
  spec.stores.push_back(Store{result, Operand{Operand::Kind::load, 0}});
  add_body_stores(group.body, builder, spec.stores);
  if (!group.body.empty()) spec.epilogue = builder.body();
  const std::string name = conv_name(spec);
  push(group, std::move(spec), name);
  return {};
}

Status SpecBuilder::add_copy(const Group& group) {
  const ir::Node& node = graph_.nodes[group.anchor];
  const ValueRef target = node_value(group.anchor);
  if (node.op == Op::clone) {
    CopySpec spec{values_.at(value_key(*node.args[0].ref())), target, std::nullopt};
    push(group, std::move(spec), "copy_" + dims_text(node.outputs[0].shape));
    return {};
  }
  // cat: one copy per piece into its window of the output (the output's buffer, or its window
  // of an outer cat's: cat_placement.h), but for pieces their producers already stored there.
  const auto& shape = node.outputs[0].shape;
  const int64_t dim = *wrap_dim(int_arg(node, 1, "dim", 0), static_cast<int64_t>(shape.size()));
  const Access& whole = values_.at(value_key(target));
  int64_t offset = 0;
  int piece = 0;
  for (const ir::Arg& item : *node.args.at(0).list()) {
    const ValueRef source = *item.ref();
    const auto& source_shape = graph_.type_of(source).shape;
    if (source_shape == std::vector<int64_t>{0} && shape.size() != 1)
      continue;  // torch skips these
    const int64_t size = source_shape.at(dim);
    CopySpec spec{values_.at(value_key(source)), target,
                  slice_access(whole, dim, offset, offset + size, 1)};
    offset += size;
    const std::string id = fmt::format("copy_cat{}_{}", piece++, dims_text(source_shape));
    if (spec.source != *spec.destination) push(group, std::move(spec), id);
  }
  return {};
}

Status SpecBuilder::add_pool(const Group& group) {
  const ir::Node& node = graph_.nodes[group.anchor];
  const auto params = pool_params(graph_, node);
  if (!params) return make_error("node '{}': pooling arguments not understood", node.id);
  PoolSpec spec;
  spec.node = group.anchor;
  spec.op = params->op;
  spec.input = values_.at(value_key(*node.args[0].ref()));
  spec.out = params->out;
  if (params->op == PoolOp::max || params->op == PoolOp::avg) {
    spec.kernel = params->kernel, spec.stride = params->stride;
    spec.padding = params->padding, spec.dilation = params->dilation;
  }
  spec.count_include_pad = params->count_include_pad;
  spec.divisor = params->divisor;
  spec.scale = params->scale;
  spec.align_corners = params->align_corners;
  spec.epilogue = register_epilogue(group, node.outputs[0].shape, spec.stores);
  push(group, std::move(spec),
       fmt::format("pool_{}{}d_{}", kPoolOpNames[static_cast<int>(params->op)], params->spatial,
                   dims_text(node.outputs[0].shape)));
  return {};
}

// The attention kernel's spec (matched by F8): the score chain as its scores body over
// [batch, heads, queries, keys], load 0 the scaled score; its one store, the output.
void SpecBuilder::add_attention(const Group& group) {
  AttentionSpec spec = group.attention->spec;
  if (!group.prologue.empty()) {
    BodyBuilder builder(graph_, values_, fusion_.folded_constants,
                        {spec.batch, spec.heads, spec.queries, spec.keys});
    builder.add_register_value(*group.attention->scaled);
    for (int node : group.prologue)
      builder.add_step(node);
    spec.scores = builder.body();
  }
  spec.stores.push_back(Store{node_value(group.anchor), Operand{Operand::Kind::load, 0}});
  const std::string name = fmt::format(
      "attention_{}{}_{}x{}x{}x{}x{}", kAttentionNormNames[static_cast<int>(spec.norm)],
      spec.causal ? "_causal" : "", spec.batch, spec.heads, spec.queries, spec.keys, spec.head_dim);
  push(group, std::move(spec), name);
}

// An uncovered node kept whole: the Access of each tensor argument (lists flattened), its stored
// outputs, and why the built-in Coder refuses it.
void SpecBuilder::add_opaque(const Group& group) {
  const ir::Node& node = graph_.nodes[group.anchor];
  OpaqueSpec spec;
  spec.node = group.anchor;
  spec.reason = uncovered_reason(graph_, node);
  for (const ir::Arg& arg : node.args) {
    if (const ValueRef* ref = arg.ref()) spec.inputs.push_back(values_.at(value_key(*ref)));
    if (const auto* list = arg.list())
      for (const ir::Arg& item : *list)
        if (const ValueRef* ref = item.ref()) spec.inputs.push_back(values_.at(value_key(*ref)));
  }
  for (size_t out = 0; out < node.outputs.size(); ++out) {
    const ValueRef value = node_value(group.anchor, static_cast<int>(out));
    if (must_store(graph_, uses_, value, members_)) spec.stores.push_back(Store{value, {}});
  }
  push(group, std::move(spec),
       fmt::format("opaque_{}_{}", ir::short_op_name(node.op_name),
                   dims_text(node.outputs[0].shape)));
}

// A recurrent layer alone: its sizes, the Accesses of x, the initial states and the params, and
// stores of y (always: cuDNN writes it) and of h_n / c_n where something reads them.
Status SpecBuilder::add_recurrent(const Group& group) {
  const ir::Node& node = graph_.nodes[group.anchor];
  STITCH_ASSIGN_OR_RETURN(RecurrentSpec spec, recurrent_geometry(graph_, node));
  spec.node = group.anchor;
  const std::vector<ValueRef> operands = recurrent_operands(node);
  const size_t states = spec.cell == RecurrentCell::lstm ? 2 : 1;
  spec.x = values_.at(value_key(operands[0]));
  spec.h0 = values_.at(value_key(operands[1]));
  if (states == 2) spec.c0 = values_.at(value_key(operands[2]));
  for (size_t i = 1 + states; i < operands.size(); ++i)
    spec.params.push_back(values_.at(value_key(operands[i])));
  for (size_t out = 0; out < node.outputs.size(); ++out) {
    const ValueRef value = node_value(group.anchor, static_cast<int>(out));
    if (out == 0 || must_store(graph_, uses_, value, members_))
      spec.stores.push_back(Store{value, Operand{Operand::Kind::load, static_cast<int>(out)}});
  }
  const std::string name =
      fmt::format("{}_{}{}x{}_{}x{}x{}", kRecurrentCellNames[static_cast<int>(spec.cell)],
                  spec.bidirectional ? "bidirectional_" : "", spec.layers, spec.hidden_size,
                  spec.seq_len, spec.batch, spec.input_size);
  push(group, std::move(spec), name);
  return {};
}

}  // namespace stitch::plan::subtask_building
