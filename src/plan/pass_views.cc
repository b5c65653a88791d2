// Analysis "views": the Access (base buffer, offset, shape, strides) of every value, with view ops
// folded. Inputs and params keep the strides they arrive with; every non-view node output is a
// fresh contiguous buffer the program owns (its captured strides describe eager mode's layout,
// which the program does not have to copy).
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "plan/access.h"
#include "plan/graph_edit.h"
#include "plan/op_traits.h"
#include "plan/passes.h"

namespace stitch::plan {

namespace {

using ir::Op;

std::optional<std::vector<int64_t>> list_arg(const ir::Node& node, size_t index,
                                             std::string_view name) {
  const ir::Arg* arg = node.arg_or_kwarg(index, name);
  return arg != nullptr ? arg->as_int_list() : std::nullopt;
}

Result<int64_t> dim_arg(const ir::Node& node, size_t index, std::string_view name, int64_t rank,
                        int64_t fallback = 0) {
  const int64_t dim = int_arg(node, index, name, fallback);
  auto wrapped = wrap_dim(dim, rank);
  if (!wrapped) return make_error("dim {} out of range for rank {}", dim, rank);
  return *wrapped;
}

// Resolves one -1 in a view size from the element count.
Result<std::vector<int64_t>> resolve_size(std::vector<int64_t> size, int64_t numel) {
  int64_t known = 1;
  int unknown = -1;
  for (size_t d = 0; d < size.size(); ++d) {
    if (size[d] == -1) {
      if (unknown >= 0) return make_error("more than one -1 in view size");
      unknown = static_cast<int>(d);
    } else {
      known *= size[d];
    }
  }
  if (unknown >= 0) {
    if (known == 0 || numel % known != 0)
      return make_error("view size [{}] does not fit {} elements", fmt::join(size, ", "), numel);
    size[unknown] = numel / known;
  }
  return size;
}

// One function per family of view ops: the Access a node's output `out` has over `input`, or
// nullopt when strides cannot express it.
using ViewAccess = Result<std::optional<Access>>;

int64_t rank_of(const Access& input) {
  return static_cast<int64_t>(input.shape.size());
}

ViewAccess reshape_view(const ir::Node& node, const Access& input) {
  auto size = list_arg(node, 1, node.op == Op::reshape ? "shape" : "size");
  if (!size) return make_error("missing size");
  STITCH_ASSIGN_OR_RETURN(std::vector<int64_t> shape, resolve_size(*size, access_numel(input)));
  return reshape_access(input, shape);
}

ViewAccess permute_view(const ir::Node& node, const Access& input) {
  const int64_t rank = rank_of(input);
  auto dims = list_arg(node, 1, "dims");
  if (!dims || static_cast<int64_t>(dims->size()) != rank) return make_error("bad permutation");
  std::vector<int64_t> wrapped;
  std::vector<bool> seen(rank, false);
  for (int64_t d : *dims) {
    auto w = wrap_dim(d, rank);
    if (!w || seen[*w]) return make_error("bad permutation");
    seen[*w] = true;
    wrapped.push_back(*w);
  }
  return std::optional<Access>(permute_access(input, wrapped));
}

ViewAccess transpose_view(const ir::Node& node, const Access& input) {
  const int64_t rank = rank_of(input);
  if (node.op == Op::t && rank < 2) return std::optional<Access>(input);
  int64_t d0 = 0, d1 = 1;
  if (node.op == Op::transpose_int) {
    STITCH_ASSIGN_OR_RETURN(d0, dim_arg(node, 1, "dim0", rank));
    STITCH_ASSIGN_OR_RETURN(d1, dim_arg(node, 2, "dim1", rank));
  }
  if (rank == 0) return std::optional<Access>(input);
  std::vector<int64_t> dims(rank);
  for (int64_t d = 0; d < rank; ++d)
    dims[d] = d;
  std::swap(dims[d0], dims[d1]);
  return std::optional<Access>(permute_access(input, dims));
}

ViewAccess expand_view(const ir::Node& node, const Access& input) {
  auto size = list_arg(node, 1, "size");
  if (!size || static_cast<int64_t>(size->size()) < rank_of(input))
    return make_error("bad expand size");
  const size_t lead = size->size() - input.shape.size();
  for (size_t d = 0; d < size->size(); ++d)
    if ((*size)[d] == -1) {
      if (d < lead) return make_error("-1 in a new leading expand dim");
      (*size)[d] = input.shape[d - lead];
    }
  return broadcast_access(input, *size);
}

ViewAccess slice_view(const ir::Node& node, const Access& input) {
  STITCH_ASSIGN_OR_RETURN(int64_t dim, dim_arg(node, 1, "dim", rank_of(input)));
  const int64_t start = int_arg(node, 2, "start", 0);
  const int64_t end = int_arg(node, 3, "end", INT64_MAX);
  const int64_t step = int_arg(node, 4, "step", 1);
  if (step <= 0) return make_error("slice step must be positive");
  return std::optional<Access>(slice_access(input, dim, start, end, step));
}

ViewAccess select_view(const ir::Node& node, const Access& input) {
  STITCH_ASSIGN_OR_RETURN(int64_t dim, dim_arg(node, 1, "dim", rank_of(input)));
  const int64_t index = int_arg(node, 2, "index", 0);
  if (index < -input.shape[dim] || index >= input.shape[dim])
    return make_error("select index {} out of range", index);
  return std::optional<Access>(select_access(input, dim, index));
}

ViewAccess squeeze_view(const ir::Node& node, const Access& input) {
  auto dims = list_arg(node, 1, "dim");
  if (!dims) return make_error("missing dims");
  std::vector<int64_t> wrapped;
  for (int64_t d : *dims) {
    auto w = wrap_dim(d, rank_of(input));
    if (!w) return make_error("dim {} out of range", d);
    wrapped.push_back(*w);
  }
  return std::optional<Access>(squeeze_access(input, wrapped));
}

ViewAccess as_strided_view(const ir::Graph& graph, const ir::Node& node, const Access& input) {
  auto size = list_arg(node, 1, "size");
  auto stride = list_arg(node, 2, "stride");
  if (!size || !stride || size->size() != stride->size()) return make_error("bad size/stride");
  // as_strided addresses the storage: only meaningful here when the base buffer is laid out as
  // eager mode lays it out (contiguous).
  if (!graph.type_of(input.base).is_contiguous())
    return make_error("as_strided over a non-contiguous buffer is not covered");
  const int64_t offset = int_arg(node, 3, "storage_offset", input.offset);
  return std::optional<Access>(Access{input.base, offset, *size, *stride});
}

// Output `out` of a split: a slice along the split dim.
ViewAccess split_view(const ir::Node& node, int out, const Access& input) {
  STITCH_ASSIGN_OR_RETURN(int64_t dim, dim_arg(node, 2, "dim", rank_of(input)));
  const int64_t size = input.shape[dim];
  int64_t start = 0, length = 0;
  if (node.op == Op::split_with_sizes) {
    auto sizes = list_arg(node, 1, "split_sizes");
    if (!sizes || out >= static_cast<int>(sizes->size())) return make_error("bad split sizes");
    for (int k = 0; k < out; ++k)
      start += (*sizes)[k];
    length = (*sizes)[out];
  } else {
    const int64_t split = int_arg(node, 1, "split_size", 1);
    start = split * out;
    length = std::min(split, size - start);
  }
  return std::optional<Access>(slice_access(input, dim, start, start + length, 1));
}

}  // namespace

Result<std::optional<Access>> view_access(const ir::Graph& graph, const ir::Node& node, int out,
                                          const Access& input) {
  const int64_t rank = rank_of(input);
  switch (node.op) {
    case Op::view:
    case Op::unsafe_view:
    case Op::reshape:
      return reshape_view(node, input);
    case Op::permute:
      return permute_view(node, input);
    case Op::transpose_int:
    case Op::t:
      return transpose_view(node, input);
    case Op::expand:
      return expand_view(node, input);
    case Op::slice_tensor:
      return slice_view(node, input);
    case Op::select_int:
      return select_view(node, input);
    case Op::squeeze_dim:
    case Op::squeeze_dims:
      return squeeze_view(node, input);
    case Op::unsqueeze: {
      STITCH_ASSIGN_OR_RETURN(int64_t dim, dim_arg(node, 1, "dim", rank + 1));
      return std::optional<Access>(unsqueeze_access(input, dim));
    }
    case Op::alias:
      return std::optional<Access>(input);
    case Op::as_strided:
      return as_strided_view(graph, node, input);
    case Op::split_with_sizes:
    case Op::split_tensor:
      return split_view(node, out, input);
    case Op::unbind_int: {
      STITCH_ASSIGN_OR_RETURN(int64_t dim, dim_arg(node, 1, "dim", rank));
      return std::optional<Access>(select_access(input, dim, out));
    }
    case Op::flip: {
      auto dims = list_arg(node, 1, "dims");
      if (!dims) return make_error("missing dims");
      std::vector<int64_t> wrapped;
      for (int64_t d : *dims) {
        auto w = wrap_dim(d, rank);
        if (!w || std::find(wrapped.begin(), wrapped.end(), *w) != wrapped.end())
          return make_error("bad flip dims");
        wrapped.push_back(*w);
      }
      return std::optional<Access>(flip_access(input, wrapped));
    }
    case Op::unfold: {
      STITCH_ASSIGN_OR_RETURN(int64_t dim, dim_arg(node, 1, "dimension", rank));
      return unfold_access(input, dim, int_arg(node, 2, "size", 1), int_arg(node, 3, "step", 1));
    }
    default:
      return make_error("not a view op");
  }
}

Result<std::map<std::string, Access>> fold_views(const ir::Graph& graph,
                                                 const std::map<std::string, Access>* homes) {
  std::map<std::string, Access> values = arrival_accesses(graph);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const ir::Node& node = graph.nodes[i];
    for (size_t out = 0; out < node.outputs.size(); ++out) {
      const ir::ValueRef ref{ir::ValueRef::Kind::node, static_cast<int32_t>(i),
                             static_cast<int32_t>(out)};
      if (!ir::is_view(node.op)) {
        const auto home = homes ? homes->find(value_key(ref)) : decltype(homes->end()){};
        const bool placed = homes && home != homes->end();
        values[value_key(ref)] =
            placed ? home->second : contiguous_access(ref, node.outputs[out].shape);
        continue;
      }
      const ir::Arg* self = node.arg_or_kwarg(0, "self");
      if (self == nullptr || !self->is_ref())
        return make_error("node '{}' ({}): first argument is not a tensor", node.id, node.op_name);
      const Access& input = values.at(value_key(*self->ref()));
      auto access = view_access(graph, node, static_cast<int>(out), input);
      if (!access.ok())
        return access.error().with_context(fmt::format("node '{}' ({})", node.id, node.op_name));
      if (!*access)
        return make_error("node '{}' ({}): strides cannot express this view of {}", node.id,
                          node.op_name, format_access(input, graph));
      values[value_key(ref)] = **access;
    }
  }
  return values;
}

}  // namespace stitch::plan
