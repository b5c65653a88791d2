// Init-time subtasks, buffer placement and param preprocessing (memory_plan.h).
#include "plan/memory_plan.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ir/print.h"
#include "plan/access.h"
#include "plan/cat_placement.h"
#include "plan/graph_edit.h"
#include "plan/kernel_choice.h"
#include "plan/subtasks.h"

namespace stitch::plan {

namespace {

int64_t align(int64_t bytes) {
  return (bytes + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment;
}

struct Lifetime {
  int64_t offset = 0, bytes = 0;
  int first = 0, last = 0;
};

}  // namespace

void mark_init_subtasks(const ir::Graph& graph, const ValueMap& values,
                        std::vector<Subtask>& subtasks) {
  std::set<std::string> outputs;
  for (const ir::ValueRef& output : graph.outputs)
    outputs.insert(value_key(values.at(value_key(output)).base));
  // A buffer forward updates (a state update) changes between calls: not a constant.
  const std::set<int32_t> state = state_param_indices(graph);
  // Every subtask that writes each buffer: a cat's buffer has one per piece, and only when all of
  // them run at init is it a constant (ViT's class token is, its patch embeddings are not).
  std::map<std::string, std::vector<size_t>> writers;
  for (size_t i = 0; i < subtasks.size(); ++i)
    for (const ir::ValueRef& value : subtask_writes(subtasks[i]))
      writers[value_key(stored_buffer(values, value))].push_back(i);
  std::vector<bool> init(subtasks.size(), true);
  for (size_t i = 0; i < subtasks.size(); ++i)
    for (const ir::ValueRef& value : subtask_writes(subtasks[i]))
      if (outputs.count(value_key(value)) || stored_buffer(values, value) != value)
        init[i] = false;  // a graph output, or a piece in a cat's buffer (cat_placement.h)
  // The largest set closed under "reads only params and buffers whose writers are all in it".
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < subtasks.size(); ++i) {
      if (!init[i]) continue;
      for (const Access& read : subtask_reads(subtasks[i])) {
        if (read.base.kind == ir::ValueRef::Kind::param && !state.count(read.base.index)) continue;
        const auto written = writers.find(value_key(read.base));
        const bool constant =
            read.base.kind == ir::ValueRef::Kind::node && written != writers.end() &&
            std::all_of(written->second.begin(), written->second.end(),
                        [&](size_t writer) { return init[writer]; });
        if (!constant) {
          init[i] = false;
          changed = true;
          break;
        }
      }
    }
  }
  for (size_t i = 0; i < subtasks.size(); ++i)
    subtasks[i].at_init = init[i];
}

MemoryPlan plan_memory(const ir::Graph& graph, const ValueMap& values,
                       const std::vector<Subtask>& subtasks) {
  MemoryPlan plan;
  // Graph outputs bind their value, or the node value they are a full contiguous view of.
  std::map<std::string, int> output_of;
  for (size_t k = 0; k < graph.outputs.size(); ++k) {
    const Access& access = values.at(value_key(graph.outputs[k]));
    output_of.emplace(value_key(access.base), static_cast<int>(k));
  }
  std::map<std::string, int> last_read;
  for (size_t i = 0; i < subtasks.size(); ++i)
    for (const Access& read : subtask_reads(subtasks[i]))
      last_read[value_key(read.base)] = static_cast<int>(i);

  // A buffer any at_init subtask writes is persistent, whichever writer comes first: the others
  // (a cat's or a pad's forward pieces) write the rest of it every forward, and what init wrote
  // must outlast every forward. Placed by a forward writer, it went to the arena, where the buffers
  // of other lifetimes overwrite it (a padded cumulative sum read its init-written pieces back
  // only while nothing else happened to share their arena offset).
  std::set<std::string> written_at_init;
  for (const Subtask& subtask : subtasks)
    if (subtask.at_init)
      for (const ir::ValueRef& written : subtask_writes(subtask))
        written_at_init.insert(value_key(stored_buffer(values, written)));

  std::set<std::string> placed;
  std::vector<Lifetime> arena;
  for (size_t i = 0; i < subtasks.size(); ++i) {
    const Subtask& subtask = subtasks[i];
    for (const ir::ValueRef& written : subtask_writes(subtask)) {
      const ir::ValueRef value = stored_buffer(values, written);  // a cat piece: the cat's
      const std::string key = value_key(value);
      if (!placed.insert(key).second) continue;
      BufferSlot slot;
      slot.value = graph.name_of(value);
      slot.bytes = graph.type_of(value).bytes();
      if (auto it = output_of.find(key); it != output_of.end()) {
        slot.where = BufferSlot::Where::output;
        slot.offset = it->second;
      } else if (written_at_init.count(key)) {
        slot.where = BufferSlot::Where::persistent;
        slot.offset = plan.host.persistent_bytes;
        plan.host.persistent_bytes += align(slot.bytes);
      } else {
        Lifetime lifetime;
        lifetime.bytes = align(slot.bytes);
        lifetime.first = static_cast<int>(i);
        lifetime.last = std::max(lifetime.first, last_read.count(key) ? last_read[key] : 0);
        // First fit: the lowest offset clear of every live-at-the-same-time slot.
        std::vector<const Lifetime*> overlapping;
        for (const Lifetime& other : arena)
          if (other.first <= lifetime.last && lifetime.first <= other.last)
            overlapping.push_back(&other);
        std::sort(overlapping.begin(), overlapping.end(),
                  [](const Lifetime* a, const Lifetime* b) { return a->offset < b->offset; });
        int64_t offset = 0;
        for (const Lifetime* other : overlapping) {
          if (offset + lifetime.bytes <= other->offset) break;
          offset = std::max(offset, other->offset + other->bytes);
        }
        lifetime.offset = offset;
        arena.push_back(lifetime);
        slot.offset = offset;
        plan.host.workspace_bytes = std::max(plan.host.workspace_bytes, offset + lifetime.bytes);
      }
      plan.buffers.push_back(std::move(slot));
    }
  }
  // Subtasks run one after another on one stream: one library workspace serves them all.
  for (const Subtask& subtask : subtasks)
    if (auto it = subtask.tunables.find("workspace_bytes"); it != subtask.tunables.end())
      plan.host.library_workspace_bytes =
          std::max(plan.host.library_workspace_bytes, align(it->second));
  plan.host.workspace_bytes = align(plan.host.workspace_bytes) + plan.host.library_workspace_bytes;
  return plan;
}

DeviceFootprint device_footprint(const Plan& plan) {
  DeviceFootprint footprint;
  for (const ir::Input& input : plan.graph.inputs)
    footprint.inputs += input.type.bytes();
  for (const ir::Param& param : plan.graph.params) {
    footprint.params += param.type.bytes();
    footprint.persistent += align(std::max<int64_t>(param.type.bytes(), 1));
  }
  for (const ir::ValueRef& output : plan.graph.outputs)
    footprint.outputs += plan.graph.type_of(output).bytes();
  footprint.persistent += plan.host.persistent_bytes;
  footprint.workspace = plan.host.workspace_bytes;
  for (const BufferSlot& slot : plan.buffers)
    if (slot.where == BufferSlot::Where::arena) footprint.materialized += slot.bytes;
  return footprint;
}

Status check_device_memory(const Plan& plan, int64_t memory_bytes, const std::string& gpu) {
  const DeviceFootprint footprint = device_footprint(plan);
  if (memory_bytes <= 0 || footprint.total() <= memory_bytes) return {};
  std::vector<const BufferSlot*> arena;
  for (const BufferSlot& slot : plan.buffers)
    if (slot.where == BufferSlot::Where::arena) arena.push_back(&slot);
  std::sort(arena.begin(), arena.end(),
            [](const BufferSlot* a, const BufferSlot* b) { return a->bytes > b->bytes; });
  std::vector<std::string> largest;
  for (size_t k = 0; k < std::min<size_t>(arena.size(), 3); ++k)
    largest.push_back(fmt::format("{} {}", arena[k]->value,
                                  ir::format_bytes(static_cast<double>(arena[k]->bytes))));
  auto bytes = [](int64_t n) { return ir::format_bytes(static_cast<double>(n)); };
  return make_error(
      "the plan needs {} of device memory, more than the {} of {}: workspace {} (largest "
      "intermediates: {}), inputs {}, outputs {}, params {} (and the program's copy), "
      "persistent {}",
      bytes(footprint.total()), bytes(memory_bytes), gpu, bytes(footprint.workspace),
      largest.empty() ? "none" : fmt::format("{}", fmt::join(largest, ", ")),
      bytes(footprint.inputs), bytes(footprint.outputs), bytes(footprint.params),
      bytes(footprint.persistent));
}

std::vector<ParamPrep> plan_param_preps(const ir::Graph& graph,
                                        const std::vector<Subtask>& subtasks) {
  std::vector<ParamPrep> preps;
  for (size_t p = 0; p < graph.params.size(); ++p) {
    std::vector<std::string> readers;
    bool only_init = true;
    for (const Subtask& subtask : subtasks) {
      bool reads = false;
      for (const Access& read : subtask_reads(subtask))
        reads = reads || (read.base.kind == ir::ValueRef::Kind::param &&
                          read.base.index == static_cast<int32_t>(p));
      if (!reads) continue;
      readers.push_back(subtask.id);
      only_init = only_init && subtask.at_init;
    }
    if (readers.empty()) {
      preps.push_back({static_cast<int>(p), "unused", "no subtask reads it"});
    } else if (only_init) {
      preps.push_back({static_cast<int>(p), "init_only",
                       fmt::format("read only at init by {}", fmt::join(readers, ", "))});
    }
  }
  return preps;
}

}  // namespace stitch::plan
