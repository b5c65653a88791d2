// Concatenation written in place by its producers (issue 13 item 4).
//
// nest_cats (a graph pass, "cats"): a cat of one tensor (not a graph output) becomes an alias of
// it; a cat whose pieces include, side by side, every piece of an earlier cat along the same dim
// takes that cat as one piece instead — cat(a, b, c) after cat(a, b) becomes cat(cat(a, b), c).
// DenseNet's growing cat (each layer concatenates the whole list of features again) becomes a
// chain of nested cats, which place_cat_pieces puts in one buffer.
//
// place_cat_pieces (after the subtasks are built): a value that is a piece of exactly one cat gets
// a *home* — its window of the cat's buffer (plan.h's Access) — when its producers can store
// through strides and no reader needs it dense; fold_views then describes it, and every view of
// it, inside the cat's buffer, and the cat's copy for that piece goes away. Cats nest: a cat that
// is itself a piece lives in its window of the outer cat, and so do its pieces. A forward
// convolution's result (not depthwise) goes to a window of whole channels (cuDNN writes one
// through y's image stride, the project's kernels through their output map), also through the
// alias a p = 0 dropout leaves. Pieces that cannot be placed (graph inputs, params, views, values
// another cat or a graph output also holds, a cuBLASLt result or the depthwise kernel's written
// whole) keep their copy into the cat's window. When the plan built with the homes breaks one of
// these conditions, the homes are dropped (all copies).
#pragma once

#include <vector>

#include "plan/fusion.h"
#include "plan/plan.h"
#include "util/result.h"

namespace stitch::plan {

Result<ir::Graph> nest_cats(const ir::Graph& graph);

// The homes for `subtasks` built from `values` (keys: value_key()); empty when nothing can be
// placed.
ValueMap cat_homes(const ir::Graph& graph, const ValueMap& values,
                   const std::vector<Subtask>& subtasks);

// Rebuilds views, fusion (with the planner's F10 rule, as `subtasks` were fused) and subtasks
// with the homes of cat_homes (and `fixed_homes`, the homes `values` was built with: layout.h's);
// keeps the given ones when there are none or the rebuilt plan cannot hold them.
Status place_cat_pieces(const ir::Graph& graph, ValueMap& values, std::vector<Subtask>& subtasks,
                        const ValueMap& fixed_homes = {},
                        const ConvPrologueRule& conv_takes_prologue = {});

// The buffer a stored value lives in: its home's base (a cat's buffer), or the value itself.
// `values` as in Plan::values (keyed by name) or ValueMap (keyed by value_key()).
ir::ValueRef stored_buffer(const ValueMap& values, const ir::ValueRef& value);
ir::ValueRef stored_buffer_by_name(const ir::Graph& graph,
                                   const std::map<std::string, Access>& values,
                                   const ir::ValueRef& value);

}  // namespace stitch::plan
