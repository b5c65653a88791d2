// Pass "materialize": inserts a clone (a contiguous copy, planned as a CopySpec) wherever strides
// cannot give a kernel what it needs (kernel_layouts.h):
//   - a view the strides cannot express (reshape of a transposed tensor) clones its input;
//   - a row op (softmax, layer_norm) whose rows do not have unit column stride;
//   - a GEMM operand or bias with no unit stride (cuBLASLt takes row- or column-major only) or
//     not 16-byte aligned (a slice starting mid-vector);
//   - a convolution's input or weight (or the input of a pad folded into one) that is not
//     contiguous or not 16-byte aligned (cuDNN's tensors);
//   - a recurrent layer's input, initial state or parameter that is not contiguous or not
//     16-byte aligned;
//   - a graph output that is an input, a param, a repeated value, or a view that is not the whole
//     of a node's buffer in order: the caller's output buffer must be written by one subtask.
// A clone of a param only reads params: fusion marks it at_init, so it costs nothing per forward.
#include <set>

#include <fmt/format.h>

#include "plan/access.h"
#include "plan/conv_geometry.h"
#include "plan/graph_edit.h"
#include "plan/kernel_layouts.h"
#include "plan/op_traits.h"
#include "plan/passes.h"

namespace stitch::plan {

namespace {

using ir::Op;

// Builds the new graph and keeps every new value's Access up to date.
class Materializer {
 public:
  explicit Materializer(const ir::Graph& source)
      : source_(source), uses_(source), rewriter_(source), values_(arrival_accesses(source)) {}

  Status run() {
    for (size_t i = 0; i < source_.nodes.size(); ++i)
      STITCH_TRY(visit(static_cast<int>(i)));
    std::vector<ir::ValueRef> outputs;
    for (const ir::ValueRef& output : source_.outputs)
      outputs.push_back(rewriter_.mapped(output));
    STITCH_TRY(bind_outputs(outputs));
    graph_ = std::move(rewriter_).finish();
    graph_.outputs = outputs;
    return {};
  }

  ir::Graph take() { return std::move(graph_); }

 private:
  const Access& access(const ir::ValueRef& ref) const { return values_.at(value_key(ref)); }

  ir::ValueRef add_clone(const ir::ValueRef& ref, const std::string& id, const ir::Node& origin) {
    const ir::TensorType& type = rewriter_.graph().type_of(ref);
    ir::ValueRef clone = rewriter_.add(
        new_node(id, Op::clone, {ref_arg(ref)}, {contiguous_type(type.shape, type.dtype)}, origin));
    values_[value_key(clone)] = contiguous_access(clone, type.shape);
    return clone;
  }

  // Records the Access of the node just added at `ref.index`.
  Status track(const ir::ValueRef& first) {
    const ir::Graph& graph = rewriter_.graph();
    const ir::Node& node = graph.nodes[first.index];
    for (size_t out = 0; out < node.outputs.size(); ++out) {
      const ir::ValueRef ref{ir::ValueRef::Kind::node, first.index, static_cast<int32_t>(out)};
      if (!ir::is_view(node.op)) {
        values_[value_key(ref)] = contiguous_access(ref, node.outputs[out].shape);
        continue;
      }
      const Access& input = access(*node.args.at(0).ref());
      STITCH_ASSIGN_OR_RETURN(std::optional<Access> view,
                              view_access(graph, node, static_cast<int>(out), input));
      if (!view) return make_error("node '{}': view still not expressible", node.id);
      values_[value_key(ref)] = *view;
    }
    return {};
  }

  // Replaces the tensor at args[index] by a clone when `ok` rejects its Access.
  void ensure(ir::Node& node, size_t index, const char* what,
              const std::function<bool(const Access&)>& ok) {
    if (index >= node.args.size() || !node.args[index].is_ref()) return;
    const ir::ValueRef ref = *node.args[index].ref();
    if (ok(access(ref))) return;
    node.args[index] =
        ref_arg(add_clone(ref, fmt::format("{}_{}_contiguous", node.id, what), node));
  }

  // What cuDNN's tensors (convolutions, RNNs) are promised: contiguous and 16-byte aligned.
  bool cudnn_dense(const Access& a) const {
    const ir::Graph& graph = rewriter_.graph();
    return a.is_contiguous() && a.offset * ir::dtype_size(graph.type_of(a.base).dtype) % 16 == 0;
  }

  // cuDNN (kernels/conv.cuh) reads contiguous NC... tensors; a pad folded into a convolution
  // hands it its input.
  void ensure_conv_operands(ir::Node& node, int index) {
    if (node.op == Op::constant_pad_nd && !pad_folds_into_conv(source_, uses_, index)) return;
    auto dense = [this](const Access& a) { return cudnn_dense(a); };
    ensure(node, 0, "input", dense);
    if (node.op == Op::convolution) ensure(node, 1, "weight", dense);
  }

  // cuDNN's RNN (kernels/rnn.cuh) reads a dense input, states and parameters; the states and
  // parameters arrive in lists (LSTM's hx, params), whose items are cloned in place.
  void ensure_recurrent_operands(ir::Node& node) {
    auto dense = [this](const Access& a) { return cudnn_dense(a); };
    ensure(node, 0, "input", dense);
    for (size_t index : {size_t{1}, size_t{2}}) {
      const char* what = index == 1 ? "state" : "param";
      if (index >= node.args.size() || node.args[index].list() == nullptr) {
        ensure(node, index, what, dense);
        continue;
      }
      ir::ArgList items = *node.args[index].list();
      for (size_t k = 0; k < items.size(); ++k) {
        const ir::ValueRef* ref = items[k].ref();
        if (ref == nullptr || cudnn_dense(access(*ref))) continue;
        items[k] =
            ref_arg(add_clone(*ref, fmt::format("{}_{}_{}_contiguous", node.id, what, k), node));
      }
      node.args[index] = ir::Arg{std::move(items)};
    }
  }

  Status visit(int index) {
    ir::Node node = rewriter_.copy_node(index);
    const ir::Graph& graph = rewriter_.graph();
    if (ir::is_view(node.op)) {
      const ir::Arg* self = node.arg_or_kwarg(0, "self");
      if (self == nullptr || !self->is_ref())
        return make_error("node '{}' ({}): first argument is not a tensor", node.id, node.op_name);
      bool expressible = true;
      for (size_t out = 0; out < node.outputs.size(); ++out) {
        auto view = view_access(graph, node, static_cast<int>(out), access(*self->ref()));
        if (!view.ok())
          return view.error().with_context(fmt::format("node '{}' ({})", node.id, node.op_name));
        expressible = expressible && view->has_value();
      }
      if (!expressible) ensure(node, 0, "input", [](const Access&) { return false; });
    } else if (is_primitive_reduction(node.op)) {
      // No copy: a reduction whose input does not merge into [outer, reduce, inner] reads it
      // through its own strides (the kernel unravels the index), which costs one read where a
      // copy would cost a read, a write, a read back and an input-sized workspace.
      if (!reduce_geometry(graph, node))
        return make_error("node '{}': reduced dims are not one block", node.id);
    } else if (auto rows = row_geometry(graph, node)) {
      ensure(node, 0, "input", [&](const Access& a) { return row_access(a, *rows).has_value(); });
      if (node.op == Op::native_layer_norm) {
        const RowGeometry vector{1, rows->cols};
        ensure(node, 2, "weight",
               [&](const Access& a) { return row_access(a, vector).has_value(); });
        ensure(node, 3, "bias", [&](const Access& a) { return row_access(a, vector).has_value(); });
      }
    } else if (ir::op_category(node.op) == ir::OpCategory::matmul) {
      const bool has_self = node.op == Op::addmm || node.op == Op::baddbmm;
      // cuBLASLt (kernels/matmul.cuh) is promised 16-byte aligned pointers.
      auto aligned = [&](const Access& a) {
        return a.offset * ir::dtype_size(graph.type_of(a.base).dtype) % 16 == 0;
      };
      auto operand_ok = [&](const Access& a) {
        auto matrix = matrix_access(a);
        return matrix && matrix_layout_ok(*matrix) && aligned(a);
      };
      ensure(node, has_self ? 1 : 0, "a", operand_ok);
      ensure(node, has_self ? 2 : 1, "b", operand_ok);
      if (has_self) {
        const std::vector<int64_t>& shape = node.outputs[0].shape;
        ensure(node, 0, "bias", [&](const Access& a) {
          auto full = broadcast_access(a, shape);
          if (!full || !aligned(a)) return false;
          if (access_numel(a) == shape.back())  // a per-column vector
            return shape.back() == 1 || full->strides.back() == 1;
          auto matrix = matrix_access(*full);
          return matrix && matrix_layout_ok(*matrix);
        });
      }
    } else if (node.op == Op::convolution || node.op == Op::constant_pad_nd) {
      ensure_conv_operands(node, index);
    } else if (ir::op_category(node.op) == ir::OpCategory::recurrent) {
      ensure_recurrent_operands(node);
    }
    rewriter_.emit(index, std::move(node));
    return track(ir::ValueRef{ir::ValueRef::Kind::node,
                              static_cast<int32_t>(rewriter_.graph().nodes.size() - 1), 0});
  }

  // Direct node outputs bind first, so a view of a bound buffer gets the clone.
  Status bind_outputs(std::vector<ir::ValueRef>& outputs) {
    const ir::Graph& graph = rewriter_.graph();
    std::set<std::string> bound;
    std::vector<bool> done(outputs.size(), false);
    for (size_t k = 0; k < outputs.size(); ++k) {
      const ir::ValueRef& ref = outputs[k];
      if (ref.kind != ir::ValueRef::Kind::node || ir::is_view(graph.nodes[ref.index].op)) continue;
      done[k] = bound.insert(value_key(ref)).second;
    }
    for (size_t k = 0; k < outputs.size(); ++k) {
      if (done[k]) continue;
      const ir::ValueRef ref = outputs[k];
      const Access& view = access(ref);
      const bool bindable = view.base.kind == ir::ValueRef::Kind::node &&
                            is_full_contiguous(view, graph.type_of(view.base).numel()) &&
                            !bound.count(value_key(view.base));
      if (bindable) {
        bound.insert(value_key(view.base));
        continue;
      }
      const ir::Node origin =
          ref.kind == ir::ValueRef::Kind::node ? graph.nodes[ref.index] : ir::Node{};
      outputs[k] = add_clone(ref, fmt::format("output{}_copy", k), origin);
      bound.insert(value_key(outputs[k]));
    }
    return {};
  }

  const ir::Graph& source_;
  Uses uses_;
  GraphRewriter rewriter_;
  std::map<std::string, Access> values_;
  ir::Graph graph_;
};

}  // namespace

Result<ir::Graph> materialize_layouts(const ir::Graph& graph, const PlanOptions& options) {
  Materializer materializer(graph);
  STITCH_TRY(materializer.run());
  return materializer.take();
}

}  // namespace stitch::plan
