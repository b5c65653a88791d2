// Access arithmetic (access.h) and Access::is_contiguous (plan.h).
#include "plan/access.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "plan/graph_edit.h"

namespace stitch::plan {

std::map<std::string, Access> arrival_accesses(const ir::Graph& graph) {
  std::map<std::string, Access> values;
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    const ir::ValueRef ref{ir::ValueRef::Kind::input, static_cast<int32_t>(i), 0};
    values[value_key(ref)] =
        Access{ref, 0, graph.inputs[i].type.shape, graph.inputs[i].type.strides};
  }
  for (size_t i = 0; i < graph.params.size(); ++i) {
    const ir::ValueRef ref{ir::ValueRef::Kind::param, static_cast<int32_t>(i), 0};
    values[value_key(ref)] =
        Access{ref, 0, graph.params[i].type.shape, graph.params[i].type.strides};
  }
  return values;
}

bool Access::is_contiguous() const {
  int64_t expected = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] != 1 && strides[d] != expected) return false;
    expected *= shape[d];
  }
  return true;
}

Access contiguous_access(const ir::ValueRef& base, const std::vector<int64_t>& shape) {
  return Access{base, 0, shape, ir::contiguous_strides(shape)};
}

Access channels_last_access(const ir::ValueRef& base, const std::vector<int64_t>& shape) {
  // Row-major strides of [N, spatial..., C], put back in [N, C, spatial...] order.
  std::vector<int64_t> order{shape[0]};
  order.insert(order.end(), shape.begin() + 2, shape.end());
  order.push_back(shape[1]);
  const std::vector<int64_t> packed = ir::contiguous_strides(order);
  std::vector<int64_t> strides{packed[0], packed.back()};
  strides.insert(strides.end(), packed.begin() + 1, packed.end() - 1);
  return Access{base, 0, shape, strides};
}

bool is_channels_last(const Access& access) {
  const size_t rank = access.shape.size();
  if (rank < 3 || rank > 5 || access.offset != 0) return false;
  const Access expected = channels_last_access(access.base, access.shape);
  for (size_t d = 0; d < rank; ++d)
    if (access.shape[d] != 1 && access.strides[d] != expected.strides[d]) return false;
  return true;
}

bool is_own_channels_last(const Access& access, const ir::ValueRef& value) {
  return access.base == value && !access.is_contiguous() && is_channels_last(access);
}

bool is_dense_per_image(const Access& access) {
  if (access.shape.empty()) return false;
  Access image = access;
  image.shape[0] = 1;
  return image.is_contiguous() &&
         (access.shape[0] == 1 || access.strides[0] >= access_numel(image));
}

int64_t access_numel(const Access& access) {
  int64_t numel = 1;
  for (int64_t size : access.shape)
    numel *= size;
  return numel;
}

int64_t access_footprint(const Access& access) {
  int64_t elements = 1;
  for (size_t d = 0; d < access.shape.size(); ++d)
    if (access.strides[d] != 0) elements *= access.shape[d];
  return access_numel(access) == 0 ? 0 : elements;
}

bool is_full_contiguous(const Access& access, int64_t base_numel) {
  return access.offset == 0 && access.is_contiguous() && access_numel(access) == base_numel;
}

std::optional<Access> through_copy_access(const Access& outer, const Access& source) {
  const std::vector<int64_t>& dims = source.shape;
  const std::vector<int64_t> copy = ir::contiguous_strides(dims);
  const int64_t numel = access_numel(source);
  if (outer.offset < 0 || (numel > 0 && outer.offset >= numel)) return std::nullopt;
  // The copy index outer's first element sits at, and how far outer's dims reach in each dim.
  std::vector<int64_t> reach(dims.size(), 0);
  Access result{source.base, source.offset, outer.shape, std::vector<int64_t>(outer.shape.size())};
  for (size_t d = 0; d < dims.size(); ++d) {
    reach[d] = outer.offset / copy[d] % dims[d];
    result.offset += reach[d] * source.strides[d];
  }
  for (size_t i = 0; i < outer.shape.size(); ++i) {
    const int64_t stride = outer.strides[i];
    if (outer.shape[i] == 1 || stride == 0) continue;  // stride 0 either way
    if (stride < 0) return std::nullopt;
    size_t d = 0;
    while (d < dims.size() && !(stride >= copy[d] && stride < copy[d] * dims[d]))
      ++d;
    if (d == dims.size() || stride % copy[d] != 0) return std::nullopt;
    const int64_t step = stride / copy[d];
    reach[d] += step * (outer.shape[i] - 1);
    result.strides[i] = step * source.strides[d];
  }
  for (size_t d = 0; d < dims.size(); ++d)
    if (reach[d] >= dims[d]) return std::nullopt;
  return result;
}

std::optional<Access> reshape_access(const Access& access, const std::vector<int64_t>& shape) {
  Access result{access.base, access.offset, shape, std::vector<int64_t>(shape.size(), 0)};
  int64_t new_numel = 1;
  for (int64_t size : shape) {
    if (size < 0) return std::nullopt;
    new_numel *= size;
  }
  if (new_numel != access_numel(access)) return std::nullopt;
  if (new_numel == 0) {
    result.strides = ir::contiguous_strides(shape);
    return result;
  }
  // A scalar behaves as shape [1].
  std::vector<int64_t> old_shape = access.shape, old_strides = access.strides;
  if (old_shape.empty()) old_shape = {1}, old_strides = {1};
  int64_t view_d = static_cast<int64_t>(shape.size()) - 1;
  int64_t chunk_base_stride = old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t tensor_d = static_cast<int64_t>(old_shape.size()) - 1; tensor_d >= 0; --tensor_d) {
    tensor_numel *= old_shape[tensor_d];
    // At the start of a chunk of dims that are contiguous with each other.
    if (tensor_d == 0 || (old_shape[tensor_d - 1] != 1 &&
                          old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
        result.strides[view_d] = view_numel * chunk_base_stride;
        view_numel *= shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (tensor_d > 0) {
        chunk_base_stride = old_strides[tensor_d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return result;
}

std::optional<Access> broadcast_access(const Access& access, const std::vector<int64_t>& shape) {
  if (shape.size() < access.shape.size()) return std::nullopt;
  Access result{access.base, access.offset, shape, std::vector<int64_t>(shape.size(), 0)};
  const size_t lead = shape.size() - access.shape.size();
  for (size_t d = 0; d < access.shape.size(); ++d) {
    const int64_t old_size = access.shape[d], new_size = shape[lead + d];
    if (old_size == new_size) {
      result.strides[lead + d] = access.strides[d];
    } else if (old_size != 1) {
      return std::nullopt;
    }
  }
  return result;
}

Access permute_access(const Access& access, const std::vector<int64_t>& dims) {
  Access result{access.base, access.offset, {}, {}};
  for (int64_t d : dims) {
    result.shape.push_back(access.shape[d]);
    result.strides.push_back(access.strides[d]);
  }
  return result;
}

Access slice_access(const Access& access, int64_t dim, int64_t start, int64_t end, int64_t step) {
  Access result = access;
  const int64_t size = access.shape[dim];
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<int64_t>(start, 0, size);
  end = std::clamp<int64_t>(end, start, size);
  result.offset += start * access.strides[dim];
  result.shape[dim] = (end - start + step - 1) / step;
  result.strides[dim] = access.strides[dim] * step;
  return result;
}

Access select_access(const Access& access, int64_t dim, int64_t index) {
  Access result = access;
  if (index < 0) index += access.shape[dim];
  result.offset += index * access.strides[dim];
  result.shape.erase(result.shape.begin() + dim);
  result.strides.erase(result.strides.begin() + dim);
  return result;
}

Access flip_access(const Access& access, const std::vector<int64_t>& dims) {
  Access result = access;
  for (int64_t dim : dims) {
    if (result.shape[dim] <= 1) continue;  // nothing moves: keep the stride (size-1 dims merge)
    result.offset += (result.shape[dim] - 1) * result.strides[dim];
    result.strides[dim] = -result.strides[dim];
  }
  return result;
}

Access squeeze_access(const Access& access, const std::vector<int64_t>& dims) {
  Access result{access.base, access.offset, {}, {}};
  for (size_t d = 0; d < access.shape.size(); ++d) {
    const bool listed = std::find(dims.begin(), dims.end(), static_cast<int64_t>(d)) != dims.end();
    if (listed && access.shape[d] == 1) continue;
    result.shape.push_back(access.shape[d]);
    result.strides.push_back(access.strides[d]);
  }
  return result;
}

Access unsqueeze_access(const Access& access, int64_t dim) {
  Access result = access;
  const size_t d = static_cast<size_t>(dim);
  const int64_t stride = d < access.shape.size() ? access.shape[d] * access.strides[d] : 1;
  result.shape.insert(result.shape.begin() + dim, 1);
  result.strides.insert(result.strides.begin() + dim, stride);
  return result;
}

std::optional<Access> unfold_access(const Access& access, int64_t dim, int64_t size, int64_t step) {
  if (access.shape.empty()) {  // a scalar unfolds into one window of size 1
    if (size != 1) return std::nullopt;
    return Access{access.base, access.offset, {1}, {1}};
  }
  if (step <= 0 || size < 0 || size > access.shape[dim]) return std::nullopt;
  Access result = access;
  result.shape[dim] = (access.shape[dim] - size) / step + 1;
  result.strides[dim] = access.strides[dim] * step;
  result.shape.push_back(size);
  result.strides.push_back(access.strides[dim]);
  return result;
}

std::optional<int64_t> wrap_dim(int64_t dim, int64_t rank) {
  const int64_t effective = std::max<int64_t>(rank, 1);
  if (dim < -effective || dim >= effective) return std::nullopt;
  return dim < 0 ? dim + effective : dim;
}

std::string format_access(const Access& access, const ir::Graph& graph) {
  return fmt::format("{} +{} [{}]:[{}]", graph.name_of(access.base), access.offset,
                     fmt::join(access.shape, ", "), fmt::join(access.strides, ", "));
}

}  // namespace stitch::plan
