// Attention recognition (fusion rule F8, fusion.h): the explicit pattern
//
//   s = bmm(Q, Kᵀ) [· c or / c] [elementwise score chain]  ->  softmax(s, -1) or relu  ->  bmm(P, V)
//
// and a scaled_dot_product_attention node, each one AttentionSpec (plan.h) run by one flash-style
// kernel. Pure functions of the graph and the value map; the fusion sweep claims what they match.
//
// The explicit pattern, exactly:
//   - bmm1 = bmm(A, B) whose result, through order-preserving views (and an expand that keeps the
//     shape), has one consumer;
//   - an optional scale: mul by a number (either side) or div by a number, right after bmm1, and
//     another on A before bmm1 (Q pre-scaled, as nn.MultiheadAttention does), each single-use;
//   - the score chain: elementwise nodes with the scores' element count, each the single consumer
//     of the previous value, never a graph output; their other operands are loads (masks,
//     additive biases, a tensor scale), broadcast into [batch, heads, queries, keys];
//   - softmax over the last dim (norm softmax), or a chain ending in relu (norm none: relu(s) @ v;
//     other unnormalised chains stay two GEMMs), then optionally a single-use clone (dropout with
//     p = 0 in training mode);
//   - bmm2 = bmm(P, V) with P that value (through views) as its first operand.
//   A, B and V are read where they live: an operand that is a single-use clone of a strided view
//   (torch's matmul copies a transposed operand; the materializer copies the input of a view its
//   strides cannot express) is read through the view instead, the clone claimed. Batch dims:
//   [batch, heads] from the 4-d view of the scores, or else the split [b, bmm batch / b] (b = 1
//   first) that reads the most operands through their clones' sources.
//   Head and value dims up to kAttentionMaxHeadDim.
// scaled_dot_product_attention: dropout_p 0, q/k/v of rank 3 or 4 with the same batch and heads
// (no GQA broadcast), an optional boolean or float mask broadcasting to the scores, is_causal,
// the scale kwarg (default 1/sqrt(head_dim)); q, k and v read through single-use clones as above.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "plan/graph_edit.h"
#include "plan/plan.h"

namespace stitch::plan {

// kernels/attention.cuh keeps a row of the output tile in registers: head_dim and value_dim up to
// this many.
inline constexpr int64_t kAttentionMaxHeadDim = 128;

struct AttentionMatch {
  int anchor = -1;             // bmm2 or the SDPA node
  std::vector<int> pattern;    // bmm1, the scale node, softmax, claimed clones
  std::vector<int> scores;     // the score chain, topological order (the scores body)
  std::optional<ir::ValueRef> scaled;  // the value the score chain starts from (load 0)
  AttentionSpec spec;          // geometry, q/k/v, scale, causal, norm, mask; no body, no stores
};

// The pattern ending at bmm node `bmm2` (explicit) or SDPA node `node`; nullopt when it does not
// match. Values keyed by value_key() (fold_views()).
std::optional<AttentionMatch> match_attention(const ir::Graph& graph, const Uses& uses,
                                              const std::map<std::string, Access>& values,
                                              int node);

// Why an SDPA node cannot run on the attention kernel ("" when it can): the coverage pass's reason.
std::string sdpa_unsupported_reason(const ir::Graph& graph, const ir::Node& node);

}  // namespace stitch::plan
