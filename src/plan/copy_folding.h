// Copies folded into the store before them (issue 16 item 4): a copy whose source is a whole
// buffer that one kernel stored and nothing else reads, read in any order that visits each of its
// elements once (a permutation of its dims, as a transpose or a permute(...).contiguous() is),
// goes away; the kernel stores each element straight where the copy would have put it, through
// strides. nn.MultiheadAttention's `attn.transpose(1, 2).contiguous().view(b·s, e)` before its
// out-projection is such a copy of the attention output.
//
// Kernels that take an output placement today: the attention kernel (AttentionSpec::output).
// Other kinds keep their copies; cat pieces are placed by cat_placement.h instead.
#pragma once

#include <optional>
#include <vector>

#include "plan/fusion.h"  // ValueMap
#include "plan/plan.h"

namespace stitch::plan {

// `read` visits every element of a contiguous buffer of `numel` elements exactly once (offset 0,
// its non-unit dims a permutation of the buffer's row-major dims, split where needed): the same
// elements seen from a contiguous copy of `read`, with `read`'s dims ordered by the buffer's
// memory order (largest stride first) and base `copy`. Reading the result row-major walks the
// buffer in memory order. nullopt when `read` skips, repeats or broadcasts an element.
std::optional<Access> inverse_access(const Access& read, int64_t numel, const ir::ValueRef& copy);

// Folds the copies the file comment describes into their producers' stores, dropping the copy
// subtasks. `values` as fold_views() gives them (keys: value_key()).
void fold_copies_into_stores(const ir::Graph& graph, const ValueMap& values,
                             std::vector<Subtask>& subtasks);

}  // namespace stitch::plan
