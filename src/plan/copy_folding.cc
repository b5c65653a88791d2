// Copies folded into the store before them (copy_folding.h).
#include "plan/copy_folding.h"

#include <algorithm>

#include <fmt/format.h>

#include "plan/access.h"
#include "plan/graph_edit.h"
#include "plan/subtasks.h"

namespace stitch::plan {

std::optional<Access> inverse_access(const Access& read, int64_t numel, const ir::ValueRef& copy) {
  if (read.offset != 0 || access_numel(read) != numel) return std::nullopt;
  const std::vector<int64_t> copy_strides = ir::contiguous_strides(read.shape);
  std::vector<size_t> dims;
  for (size_t d = 0; d < read.shape.size(); ++d)
    if (read.shape[d] != 1) dims.push_back(d);
  if (dims.empty()) return Access{copy, 0, {1}, {1}};
  std::sort(dims.begin(), dims.end(),
            [&](size_t x, size_t y) { return read.strides[x] > read.strides[y]; });
  // Memory order: the innermost dim steps by 1, each outer one by the extent of those inside it.
  int64_t extent = 1;
  for (auto d = dims.rbegin(); d != dims.rend(); ++d) {
    if (read.strides[*d] != extent) return std::nullopt;
    extent *= read.shape[*d];
  }
  Access inverse{copy, 0, {}, {}};
  for (size_t d : dims) {
    inverse.shape.push_back(read.shape[d]);
    inverse.strides.push_back(copy_strides[d]);
  }
  return inverse;
}

namespace {

// The subtask that stores `value` as an AttentionSpec's output, its placement not yet chosen.
Subtask* attention_storing(std::vector<Subtask>& subtasks, const ir::ValueRef& value) {
  for (Subtask& subtask : subtasks)
    if (auto* spec = std::get_if<AttentionSpec>(&subtask.spec);
        spec && !spec->output && spec->stores.size() == 1 && spec->stores[0].value == value)
      return &subtask;
  return nullptr;
}

}  // namespace

void fold_copies_into_stores(const ir::Graph& graph, const ValueMap& values,
                             std::vector<Subtask>& subtasks) {
  bool folded = false;
  for (size_t c = 0; c < subtasks.size();) {
    const auto* copy = std::get_if<CopySpec>(&subtasks[c].spec);
    Subtask* producer = nullptr;
    if (copy && !copy->destination && owns_buffer(graph, values, copy->source.base) &&
        owns_buffer(graph, values, copy->target) &&
        graph.type_of(copy->source.base).dtype == graph.type_of(copy->target).dtype &&
        !read_elsewhere(graph, values, subtasks, c, copy->source.base))
      producer = attention_storing(subtasks, copy->source.base);
    if (producer == nullptr) {
      ++c;
      continue;
    }
    auto& spec = std::get<AttentionSpec>(producer->spec);
    const int64_t numel = graph.type_of(copy->source.base).numel();
    const auto inverse = inverse_access(copy->source, numel, copy->target);
    const Access stored = contiguous_access(copy->source.base,
                                            {spec.batch, spec.heads, spec.queries, spec.value_dim});
    const auto placed = inverse && access_numel(stored) == numel
                            ? through_copy_access(stored, *inverse)
                            : std::nullopt;
    if (!placed) {
      ++c;
      continue;
    }
    spec.output = *placed;
    spec.stores[0].value = copy->target;
    producer->nodes.insert(producer->nodes.end(), subtasks[c].nodes.begin(),
                           subtasks[c].nodes.end());
    subtasks.erase(subtasks.begin() + static_cast<std::ptrdiff_t>(c));
    folded = true;
  }
  if (folded) renumber_subtask_ids(subtasks);
}

}  // namespace stitch::plan
