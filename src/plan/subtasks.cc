// Subtask specs from fusion groups (subtasks.h). Operands resolve in this order: a number or a
// folded constant is a scalar; a value of the group (through order-preserving views) is a step or
// the anchor's register value; anything else is a load, broadcast to the consumer's shape and
// re-expressed in the index space when strides allow.
#include "plan/subtasks.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "plan/access.h"
#include "plan/conv_geometry.h"
#include "plan/kernel_layouts.h"
#include "plan/op_traits.h"
#include "plan/passes.h"
#include "plan/pooling.h"

namespace stitch::plan {

namespace {

using ir::Op;
using ir::ValueRef;

class BodyBuilder {
 public:
  BodyBuilder(const ir::Graph& graph, const ValueMap& values, const std::set<int>& folded,
              std::vector<int64_t> index_shape)
      : graph_(graph), values_(values), folded_(folded), index_shape_(std::move(index_shape)) {}

  // A value held in registers (an anchor's output), visible to steps as a load with its Access.
  void add_register_value(const ValueRef& value) {
    const auto& shape = graph_.type_of(value).shape;
    Access access = *reshape_access(contiguous_access(value, shape), index_shape_);
    body_.loads.push_back(access);
    known_[value_key(value)] =
        Operand{Operand::Kind::load, static_cast<int>(body_.loads.size() - 1)};
  }

  void add_step(int index) {
    const ir::Node& node = graph_.nodes[index];
    BodyStep step;
    step.node = index;
    step.dtype = node.outputs[0].dtype;
    const int count = std::min<int>(operand_count(node.op), static_cast<int>(node.args.size()));
    for (int a = 0; a < count; ++a)
      step.operands.push_back(operand(node.args[a], node));
    body_.steps.push_back(std::move(step));
    known_[value_key(node_value(index))] =
        Operand{Operand::Kind::step, static_cast<int>(body_.steps.size() - 1)};
  }

  std::optional<Operand> find(const ValueRef& value) const {
    auto it = known_.find(value_key(value));
    if (it == known_.end()) return std::nullopt;
    return it->second;
  }

  // Moves load `index` to position 0 (the reduction/row kernel iterates loads[0]).
  void make_first_load(int index) {
    if (index == 0) return;
    std::swap(body_.loads[0], body_.loads[index]);
    auto swap_operand = [&](Operand& operand) {
      if (operand.kind != Operand::Kind::load) return;
      if (operand.index == 0)
        operand.index = index;
      else if (operand.index == index)
        operand.index = 0;
    };
    for (BodyStep& step : body_.steps)
      for (Operand& operand : step.operands)
        swap_operand(operand);
    for (auto& [key, operand] : known_)
      swap_operand(operand);
  }

  Body& body() { return body_; }

 private:
  Operand operand(const ir::Arg& arg, const ir::Node& consumer) {
    if (const ValueRef* ref = arg.ref()) {
      if (ref->kind == ValueRef::Kind::node && folded_.count(ref->index))
        return Operand{Operand::Kind::scalar, 0, *constant_scalar(graph_.nodes[ref->index])};
      if (auto root = through_order_preserving_views(graph_, *ref))
        if (auto known = find(*root)) return *known;
      const Access& access = values_.at(value_key(*ref));
      Access load = broadcast_access(access, consumer.outputs[0].shape).value_or(access);
      if (auto reshaped = reshape_access(load, index_shape_)) load = *reshaped;
      for (size_t k = 0; k < body_.loads.size(); ++k)
        if (body_.loads[k] == load) return Operand{Operand::Kind::load, static_cast<int>(k)};
      body_.loads.push_back(load);
      return Operand{Operand::Kind::load, static_cast<int>(body_.loads.size() - 1)};
    }
    if (auto value = arg.as_bool()) return Operand{Operand::Kind::scalar, 0, *value ? 1.0 : 0.0};
    return Operand{Operand::Kind::scalar, 0, arg.as_double().value_or(0.0)};
  }

  const ir::Graph& graph_;
  const ValueMap& values_;
  const std::set<int>& folded_;
  std::vector<int64_t> index_shape_;
  Body body_;
  std::map<std::string, Operand> known_;
};

std::string dims_text(const std::vector<int64_t>& dims) {
  return dims.empty() ? "scalar" : fmt::format("{}", fmt::join(dims, "x"));
}

class SpecBuilder {
 public:
  SpecBuilder(const ir::Graph& graph, const ValueMap& values, const Fusion& fusion)
      : graph_(graph), values_(values), fusion_(fusion), uses_(graph) {}

  Result<std::vector<Subtask>> run() {
    for (const Group& group : fusion_.groups) {
      const std::vector<int> nodes = group.nodes();
      members_ = std::set<int>(nodes.begin(), nodes.end());
      switch (group.kind) {
        case GroupKind::matmul:
          STITCH_TRY(add_matmul(group));
          break;
        case GroupKind::reduction:
          STITCH_TRY(add_reduction(group));
          break;
        case GroupKind::row:
          STITCH_TRY(add_row(group));
          break;
        case GroupKind::elementwise:
          STITCH_TRY(add_elementwise(group));
          break;
        case GroupKind::copy:
          STITCH_TRY(add_copy(group));
          break;
        case GroupKind::pool:
          STITCH_TRY(add_pool(group));
          break;
        case GroupKind::conv:
          STITCH_TRY(add_conv(group));
          break;
        case GroupKind::opaque:
          add_opaque(group);
          break;
        case GroupKind::attention:
          add_attention(group);
          break;
        case GroupKind::scan:
          STITCH_TRY(add_scan(group));
          break;
        case GroupKind::gather:
          STITCH_TRY(add_gather(group));
          break;
      }
    }
    return std::move(subtasks_);
  }

 private:
  void push(const Group& group, SubtaskSpec spec, const std::string& name) {
    Subtask subtask;
    subtask.id = fmt::format("s{:02d}_{}", subtasks_.size(), name);
    subtask.nodes = group.nodes();
    subtask.spec = std::move(spec);
    subtasks_.push_back(std::move(subtask));
  }

  void add_body_stores(const std::vector<int>& body, BodyBuilder& builder,
                       std::vector<Store>& stores) {
    for (int node : body)
      if (must_store(graph_, uses_, node_value(node), members_))
        stores.push_back(Store{node_value(node), *builder.find(node_value(node))});
  }

  // The epilogue of a kernel whose results are the anchor's outputs, held in registers (load k is
  // output k) over `index_shape`: the group's body after it; stores for the outputs and body values
  // read outside the group. Unset without a body.
  std::optional<Body> register_epilogue(const Group& group, std::vector<int64_t> index_shape,
                                        std::vector<Store>& stores) {
    const ir::Node& node = graph_.nodes[group.anchor];
    BodyBuilder builder(graph_, values_, fusion_.folded_constants, std::move(index_shape));
    for (size_t out = 0; out < node.outputs.size(); ++out)
      builder.add_register_value(node_value(group.anchor, static_cast<int>(out)));
    for (int member : group.body)
      builder.add_step(member);
    for (size_t out = 0; out < node.outputs.size(); ++out) {
      const ValueRef value = node_value(group.anchor, static_cast<int>(out));
      if (must_store(graph_, uses_, value, members_))
        stores.push_back(Store{value, Operand{Operand::Kind::load, static_cast<int>(out)}});
    }
    add_body_stores(group.body, builder, stores);
    if (group.body.empty()) return std::nullopt;
    return builder.body();
  }

  // Builds a prologue; returns the Access the kernel iterates (loads[0], the largest).
  Access add_prologue(const std::vector<int>& prologue, const std::vector<int64_t>& index_shape,
                      std::optional<Body>& out) {
    BodyBuilder builder(graph_, values_, fusion_.folded_constants, index_shape);
    for (int node : prologue)
      builder.add_step(node);
    // The kernel iterates the largest load that has the index space's shape (fusion rule F3
    // guarantees one).
    int largest = -1;
    const auto& loads = builder.body().loads;
    for (size_t k = 0; k < loads.size(); ++k)
      if (loads[k].shape == index_shape &&
          (largest < 0 || access_footprint(loads[k]) > access_footprint(loads[largest])))
        largest = static_cast<int>(k);
    builder.make_first_load(std::max(largest, 0));
    out = builder.body();
    return out->loads.at(0);
  }

  Status add_elementwise(const Group& group) {
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

  Status add_reduction(const Group& group) {
    const ir::Node& node = graph_.nodes[group.anchor];
    const auto geometry = reduce_geometry(graph_, node);
    if (!geometry) return make_error("node '{}': reduced dims are not one block", node.id);
    ReductionSpec spec;
    spec.node = group.anchor;
    spec.op = reduce_op_of(node.op);
    spec.outer = geometry->outer, spec.reduce = geometry->reduce, spec.inner = geometry->inner;
    if (node.op == Op::var_mean_correction)
      spec.correction = double_arg(node, 2, "correction", 1.0);
    const std::vector<int64_t> index_shape{spec.outer, spec.reduce, spec.inner};
    if (!group.prologue.empty()) {
      spec.input = add_prologue(group.prologue, index_shape, spec.prologue);
    } else {
      // An input that does not merge keeps its own shape: the kernel unravels the index.
      const Access& input = values_.at(value_key(*node.args[0].ref()));
      spec.input = reshape_access(input, index_shape).value_or(input);
    }
    spec.epilogue = register_epilogue(group, {spec.outer, spec.inner}, spec.stores);
    static constexpr const char* kOps[] = {"sum",    "max",    "min",     "prod",
                                           "argmax", "argmin", "mean_var"};
    push(group, std::move(spec),
         fmt::format("reduce_{}_{}x{}x{}", kOps[static_cast<int>(reduce_op_of(node.op))],
                     geometry->outer, geometry->reduce, geometry->inner));
    return {};
  }

  Status add_scan(const Group& group) {
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

  Status add_gather(const Group& group) {
    const ir::Node& node = graph_.nodes[group.anchor];
    const auto geometry = gather_geometry(graph_, node);
    if (!geometry) return make_error("node '{}': not a gather along one dim", node.id);
    GatherSpec spec{group.anchor};
    spec.outer = geometry->outer, spec.size = geometry->size;
    spec.count = geometry->count, spec.inner = geometry->inner;
    const Access& x = values_.at(value_key(geometry->input));
    spec.input = reshape_access(x, {spec.outer, spec.size, spec.inner}).value_or(x);
    spec.index = values_.at(value_key(geometry->index));
    spec.stores.push_back(Store{node_value(group.anchor), Operand{Operand::Kind::load, 0}});
    push(group, std::move(spec),
         fmt::format("gather_{}x{}x{}_from_{}", geometry->outer, geometry->count, geometry->inner,
                     geometry->size));
    return {};
  }

  Status add_row(const Group& group) {
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

  Status add_matmul(const Group& group) {
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
      auto full =
          broadcast_access(values_.at(value_key(*node.args[0].ref())), node.outputs[0].shape);
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

  Status add_conv(const Group& group) {
    const ir::Node& node = graph_.nodes[group.anchor];
    STITCH_ASSIGN_OR_RETURN(
        ConvSpec spec,
        conv_spec(graph_, values_, group.anchor,
                  group.pattern.empty() ? std::nullopt : std::optional<int>(group.pattern[0])));
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

  Status add_copy(const Group& group) {
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

  Status add_pool(const Group& group) {
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
  void add_attention(const Group& group) {
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
        spec.causal ? "_causal" : "", spec.batch, spec.heads, spec.queries, spec.keys,
        spec.head_dim);
    push(group, std::move(spec), name);
  }

  // An uncovered node kept whole: the Access of each tensor argument (lists flattened), its stored
  // outputs, and why the built-in Coder refuses it.
  void add_opaque(const Group& group) {
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

  const ir::Graph& graph_;
  const ValueMap& values_;
  const Fusion& fusion_;
  Uses uses_;
  std::set<int> members_;
  std::vector<Subtask> subtasks_;
};

void add_body_reads(const std::optional<Body>& body, bool skip_registers, int registers,
                    std::vector<Access>& reads) {
  if (!body) return;
  for (size_t k = 0; k < body->loads.size(); ++k)
    if (!skip_registers || static_cast<int>(k) >= registers) reads.push_back(body->loads[k]);
}

}  // namespace

Result<std::vector<Subtask>> build_subtasks(const ir::Graph& graph, const ValueMap& values,
                                            const Fusion& fusion) {
  return SpecBuilder(graph, values, fusion).run();
}

std::vector<Access> subtask_reads(const Subtask& subtask) {
  std::vector<Access> reads;
  std::visit(
      [&](const auto& spec) {
        using T = std::decay_t<decltype(spec)>;
        if constexpr (std::is_same_v<T, MatmulSpec>) {
          reads.push_back(spec.a);
          reads.push_back(spec.b);
          if (spec.bias) reads.push_back(*spec.bias);
          if (spec.epilogue) {
            reads.push_back(spec.epilogue->loads[0]);  // the GEMM result, written then read back
            add_body_reads(spec.epilogue, true, 1, reads);
          }
        } else if constexpr (std::is_same_v<T, ReductionSpec>) {
          reads.push_back(spec.input);
          if (spec.prologue)
            for (size_t k = 1; k < spec.prologue->loads.size(); ++k)
              reads.push_back(spec.prologue->loads[k]);
          if (spec.epilogue) {
            int registers = 0;
            for (const Access& load : spec.epilogue->loads)
              if (load.base.kind == ir::ValueRef::Kind::node && load.base.index == spec.node)
                ++registers;
            add_body_reads(spec.epilogue, true, registers, reads);
          }
        } else if constexpr (std::is_same_v<T, RowSpec>) {
          reads.push_back(spec.input);
          if (spec.weight) reads.push_back(*spec.weight);
          if (spec.bias) reads.push_back(*spec.bias);
          if (spec.prologue)
            for (size_t k = 1; k < spec.prologue->loads.size(); ++k)
              reads.push_back(spec.prologue->loads[k]);
          add_body_reads(spec.epilogue, true, 1, reads);
        } else if constexpr (std::is_same_v<T, ElementwiseSpec>) {
          add_body_reads(spec.body, false, 0, reads);
        } else if constexpr (std::is_same_v<T, PoolSpec>) {
          reads.push_back(spec.input);
          int registers = 0;
          if (spec.epilogue)
            for (const Access& load : spec.epilogue->loads)
              if (load.base.kind == ir::ValueRef::Kind::node && load.base.index == spec.node)
                ++registers;
          add_body_reads(spec.epilogue, true, registers, reads);
        } else if constexpr (std::is_same_v<T, ConvSpec>) {
          reads.push_back(spec.x);
          reads.push_back(spec.w);
          if (spec.epilogue) {
            reads.push_back(spec.epilogue->loads[0]);  // the convolution's result, read back
            add_body_reads(spec.epilogue, true, 1, reads);
          }
        } else if constexpr (std::is_same_v<T, AttentionSpec>) {
          reads.push_back(spec.q);
          reads.push_back(spec.k);
          reads.push_back(spec.v);
          if (spec.mask) reads.push_back(*spec.mask);
          add_body_reads(spec.scores, true, 1, reads);  // load 0: the score, in registers
        } else if constexpr (std::is_same_v<T, OpaqueSpec>) {
          reads.insert(reads.end(), spec.inputs.begin(), spec.inputs.end());
        } else if constexpr (std::is_same_v<T, GatherSpec>) {
          reads.insert(reads.end(), {spec.input, spec.index});
        } else if constexpr (std::is_same_v<T, ScanSpec>) {
          reads.push_back(spec.input);
          if (spec.prologue)
            for (size_t k = 1; k < spec.prologue->loads.size(); ++k)
              reads.push_back(spec.prologue->loads[k]);
          add_body_reads(spec.epilogue, true, 1, reads);
        } else {
          reads.push_back(spec.source);
        }
      },
      subtask.spec);
  return reads;
}

std::vector<ir::ValueRef> subtask_writes(const Subtask& subtask) {
  std::vector<ir::ValueRef> writes;
  std::visit(
      [&](const auto& spec) {
        using T = std::decay_t<decltype(spec)>;
        if constexpr (std::is_same_v<T, CopySpec>) {
          writes.push_back(spec.target);
        } else {
          for (const Store& store : spec.stores)
            writes.push_back(store.value);
        }
      },
      subtask.spec);
  return writes;
}

std::string_view spec_kind_name(const SubtaskSpec& spec) {
  static constexpr std::string_view kNames[] = {"matmul", "reduction", "row",       "elementwise",
                                                "copy",   "pool",      "conv",      "opaque",
                                                "attention", "scan",   "gather"};
  static_assert(std::size(kNames) == std::variant_size_v<SubtaskSpec>);
  return kNames[spec.index()];
}

}  // namespace stitch::plan
