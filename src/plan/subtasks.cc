// Subtask specs from fusion groups (subtasks.h). Operands resolve in this order: a number or a
// folded constant is a scalar; a value of the group (through order-preserving views) is a step or
// the anchor's register value; anything else is a load, broadcast to the consumer's shape and
// re-expressed in the index space when strides allow. This file holds the BodyBuilder, the steps
// the per-kind adders share (the adders themselves are in subtask_kinds.cc) and the reads and
// writes of a finished subtask.
#include "plan/subtasks.h"

#include <algorithm>

#include <fmt/format.h>

#include "plan/access.h"
#include "plan/op_traits.h"
#include "plan/subtask_builder.h"

namespace stitch::plan {

namespace subtask_building {

using ir::ValueRef;

// A value held in registers (an anchor's output), visible to steps as a load with its Access.
void BodyBuilder::add_register_value(const ValueRef& value) {
  const auto& shape = graph_.type_of(value).shape;
  Access access = *reshape_access(contiguous_access(value, shape), index_shape_);
  body_.loads.push_back(access);
  known_[value_key(value)] = Operand{Operand::Kind::load, static_cast<int>(body_.loads.size() - 1)};
}

void BodyBuilder::add_step(int index) {
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

// Moves load `index` to position 0 (the reduction/row kernel iterates loads[0]).
void BodyBuilder::make_first_load(int index) {
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

Operand BodyBuilder::operand(const ir::Arg& arg, const ir::Node& consumer) {
  if (const ValueRef* ref = arg.ref()) {
    if (ref->kind == ValueRef::Kind::node && folded_.count(ref->index))
      return Operand{Operand::Kind::scalar, 0, *constant_scalar(graph_.nodes[ref->index])};
    if (auto root = through_order_preserving_views(graph_, *ref))
      if (auto known = find(*root)) return *known;
    const Access& access = values_.at(value_key(*ref));
    Access load = broadcast_access(access, consumer.outputs[0].shape).value_or(access);
    // A one-element step in a larger index space (a detached scalar, fusion rule F9) reads its
    // one-element loads broadcast over the whole space.
    if (consumer.outputs[0].numel() == 1 && ir::checked_numel(index_shape_) != 1)
      load = Access{load.base, load.offset, index_shape_,
                    std::vector<int64_t>(index_shape_.size(), 0)};
    if (auto reshaped = reshape_access(load, index_shape_)) load = *reshaped;
    for (size_t k = 0; k < body_.loads.size(); ++k)
      if (body_.loads[k] == load) return Operand{Operand::Kind::load, static_cast<int>(k)};
    body_.loads.push_back(load);
    return Operand{Operand::Kind::load, static_cast<int>(body_.loads.size() - 1)};
  }
  if (auto value = arg.as_bool()) return Operand{Operand::Kind::scalar, 0, *value ? 1.0 : 0.0};
  return Operand{Operand::Kind::scalar, 0, arg.as_double().value_or(0.0)};
}

Result<std::vector<Subtask>> SpecBuilder::run() {
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
      case GroupKind::recurrent:
        STITCH_TRY(add_recurrent(group));
        break;
      case GroupKind::gather:
        STITCH_TRY(add_gather(group));
        break;
    }
  }
  return std::move(subtasks_);
}

void SpecBuilder::push(const Group& group, SubtaskSpec spec, const std::string& name) {
  Subtask subtask;
  subtask.id = fmt::format("s{:02d}_{}", subtasks_.size(), name);
  subtask.nodes = group.nodes();
  subtask.spec = std::move(spec);
  subtasks_.push_back(std::move(subtask));
}

void SpecBuilder::add_body_stores(const std::vector<int>& body, BodyBuilder& builder,
                                  std::vector<Store>& stores) {
  for (int node : body)
    if (must_store(graph_, uses_, node_value(node), members_))
      stores.push_back(Store{node_value(node), *builder.find(node_value(node))});
}

// The epilogue of a kernel whose results are the anchor's outputs, held in registers (load k is
// output k) over `index_shape`: the group's body after it; stores for the outputs and body values
// read outside the group. Unset without a body.
std::optional<Body> SpecBuilder::register_epilogue(const Group& group,
                                                   std::vector<int64_t> index_shape,
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
Access SpecBuilder::add_prologue(const std::vector<int>& prologue,
                                 const std::vector<int64_t>& index_shape,
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

}  // namespace subtask_building

namespace {

void add_body_reads(const std::optional<Body>& body, bool skip_registers, int registers,
                    std::vector<Access>& reads) {
  if (!body) return;
  for (size_t k = 0; k < body->loads.size(); ++k)
    if (!skip_registers || static_cast<int>(k) >= registers) reads.push_back(body->loads[k]);
}

// The loads of `body` that are outputs of `node`, its anchor's register values (they come first).
int node_registers(const std::optional<Body>& body, int node) {
  if (!body) return 0;
  const auto is_register = [&](const Access& load) {
    return load.base.kind == ir::ValueRef::Kind::node && load.base.index == node;
  };
  return static_cast<int>(std::count_if(body->loads.begin(), body->loads.end(), is_register));
}

}  // namespace

Result<std::vector<Subtask>> build_subtasks(const ir::Graph& graph, const ValueMap& values,
                                            const Fusion& fusion) {
  return subtask_building::SpecBuilder(graph, values, fusion).run();
}

bool read_elsewhere(const ir::Graph& graph, const ValueMap& values,
                    const std::vector<Subtask>& subtasks, std::initializer_list<size_t> except,
                    const ir::ValueRef& buffer) {
  for (const ir::ValueRef& output : graph.outputs)
    if (values.at(value_key(output)).base == buffer) return true;
  for (size_t i = 0; i < subtasks.size(); ++i) {
    if (std::find(except.begin(), except.end(), i) != except.end()) continue;
    for (const Access& read : subtask_reads(subtasks[i]))
      if (read.base == buffer) return true;
  }
  return false;
}

void renumber_subtask_ids(std::vector<Subtask>& subtasks) {
  for (size_t i = 0; i < subtasks.size(); ++i) {
    std::string& id = subtasks[i].id;
    id = fmt::format("s{:02d}{}", i, id.substr(id.find('_')));
  }
}

bool owns_buffer(const ir::Graph& graph, const ValueMap& values, const ir::ValueRef& value) {
  return value.kind == ir::ValueRef::Kind::node &&
         values.at(value_key(value)) == contiguous_access(value, graph.type_of(value).shape);
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
          add_body_reads(spec.prologue, true, 1, reads);  // load 0: the input
          add_body_reads(spec.epilogue, true, node_registers(spec.epilogue, spec.node), reads);
        } else if constexpr (std::is_same_v<T, RowSpec>) {
          reads.push_back(spec.input);
          if (spec.weight) reads.push_back(*spec.weight);
          if (spec.bias) reads.push_back(*spec.bias);
          add_body_reads(spec.prologue, true, 1, reads);  // load 0: the input
          add_body_reads(spec.epilogue, true, 1, reads);
        } else if constexpr (std::is_same_v<T, ElementwiseSpec>) {
          add_body_reads(spec.body, false, 0, reads);
        } else if constexpr (std::is_same_v<T, PoolSpec>) {
          reads.push_back(spec.input);
          add_body_reads(spec.epilogue, true, node_registers(spec.epilogue, spec.node), reads);
        } else if constexpr (std::is_same_v<T, ConvSpec>) {
          reads.push_back(spec.x);
          reads.push_back(spec.w);
          if (spec.bias) reads.push_back(*spec.bias);
          add_body_reads(spec.prologue, true, 1, reads);  // load 0: x
          if (spec.epilogue) {
            reads.push_back(spec.epilogue->loads[0]);  // the convolution's result, read back
            add_body_reads(spec.epilogue, true, 1, reads);
          }
          add_body_reads(spec.output_transform, true, 1, reads);  // load 0: in registers
          add_body_reads(spec.reduce_epilogue, true, 1, reads);   // load 0: in registers
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
        } else if constexpr (std::is_same_v<T, RecurrentSpec>) {
          reads.insert(reads.end(), {spec.x, spec.h0});
          if (spec.c0) reads.push_back(*spec.c0);
          reads.insert(reads.end(), spec.params.begin(), spec.params.end());
        } else if constexpr (std::is_same_v<T, ScanSpec>) {
          reads.push_back(spec.input);
          add_body_reads(spec.prologue, true, 1, reads);  // load 0: the input
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
  static constexpr std::string_view kNames[] = {"matmul",    "reduction", "row",    "elementwise",
                                                "copy",      "pool",      "conv",   "opaque",
                                                "attention", "scan",      "gather", "recurrent"};
  static_assert(std::size(kNames) == std::variant_size_v<SubtaskSpec>);
  return kNames[spec.index()];
}

}  // namespace stitch::plan
