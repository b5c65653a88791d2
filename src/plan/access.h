// Access arithmetic: the strided windows of plan.h and the view semantics that build them (torch's
// view/expand/permute/slice/select/squeeze/unsqueeze/unfold rules on shape, strides and offset).
// Pure functions; a view the strides cannot express returns nullopt, never a wrong Access.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "plan/plan.h"

namespace stitch::plan {

// The Access of every graph input and param: the whole buffer with the strides it arrives with,
// keyed by value_key() (graph_edit.h).
std::map<std::string, Access> arrival_accesses(const ir::Graph& graph);

// The whole of a buffer with the given shape, contiguous, offset 0.
Access contiguous_access(const ir::ValueRef& base, const std::vector<int64_t>& shape);
// The whole of a buffer of shape [N, C, spatial...] (rank 3 to 5) stored channels-last (NLC,
// NHWC, NDHWC): the channels of one position side by side, offset 0.
Access channels_last_access(const ir::ValueRef& base, const std::vector<int64_t>& shape);
// The access reads its buffer from the start in channels-last order (size-1 dims take any stride).
bool is_channels_last(const Access& access);
// `access` is `value`'s own buffer stored channels-last (a home layout.h gives it), not NCHW and
// not a window of another value's buffer.
bool is_own_channels_last(const Access& access, const ir::ValueRef& value);
// Each image (dim 0) is contiguous and the images lie at least one image apart: a window of
// whole channels of a larger buffer (a cat's piece along dim 1), or contiguous.
bool is_dense_per_image(const Access& access);
int64_t access_numel(const Access& access);
// Elements the access can touch: the product of the dims that are not broadcast (stride 0).
int64_t access_footprint(const Access& access);
// The access covers its base buffer of `base_numel` elements exactly, in row-major order.
bool is_full_contiguous(const Access& access, int64_t base_numel);

// torch's view rule (at::detail::computeStride): the same elements in row-major order under a new
// shape; nullopt when the strides cannot express it (a reshape of a transposed tensor).
std::optional<Access> reshape_access(const Access& access, const std::vector<int64_t>& shape);
// `outer` reads a contiguous copy (shape source.shape) of the tensor `source` shows: the same
// elements read through source's strides instead, in outer's shape. Every dim of outer must step
// within one dim of the copy (its stride a multiple of that dim's, its reach together with the
// other dims stepping there inside the dim), else nullopt; negative strides give nullopt too.
std::optional<Access> through_copy_access(const Access& outer, const Access& source);
// torch's expand rule, right-aligned: size-1 and new leading dims get stride 0. nullopt when the
// shapes do not broadcast.
std::optional<Access> broadcast_access(const Access& access, const std::vector<int64_t>& shape);
// `dims` must be a permutation of the access's dims.
Access permute_access(const Access& access, const std::vector<int64_t>& dims);
// Python slice semantics on one dim: negative start/end wrap, both clamp to the size; step > 0.
Access slice_access(const Access& access, int64_t dim, int64_t start, int64_t end, int64_t step);
// `index` in [0, size) (negative wraps); drops the dim.
Access select_access(const Access& access, int64_t dim, int64_t index);
// Drops the listed dims that have size 1 (others stay, as torch does).
Access squeeze_access(const Access& access, const std::vector<int64_t>& dims);
Access unsqueeze_access(const Access& access, int64_t dim);
// torch.flip over `dims` (wrapped, each at most once): element j of a flipped dim is element
// size - 1 - j of the input, so its stride is negated and the offset moves to the last element.
Access flip_access(const Access& access, const std::vector<int64_t>& dims);
// Tensor.unfold(dim, size, step): a window dim appended at the end.
std::optional<Access> unfold_access(const Access& access, int64_t dim, int64_t size, int64_t step);

// Wraps a possibly negative dim index into [0, rank); nullopt when out of range. rank 0 accepts
// 0 and -1 (as torch does for scalars).
std::optional<int64_t> wrap_dim(int64_t dim, int64_t rank);

// "x +0 [4, 8]:[8, 1]" — base name, offset, shape and strides.
std::string format_access(const Access& access, const ir::Graph& graph);

}  // namespace stitch::plan
