// Memory and init-time planning: which subtasks can run once at init, where every stored value
// lives (caller's output buffer, the per-forward arena with lifetimes, or the persistent block),
// and what to do with params at init.
#pragma once

#include <string>
#include <vector>

#include "plan/fusion.h"
#include "plan/plan.h"
#include "util/result.h"

namespace stitch::plan {

inline constexpr int64_t kBufferAlignment = 256;

// A subtask reads only params and buffers that at_init subtasks alone write (or nothing: a
// constant), and writes no graph output (the caller's buffers exist only during a forward). A
// buffer that forward subtasks also write (a cat with a constant piece) is not a constant.
void mark_init_subtasks(const ir::Graph& graph, const ValueMap& values,
                        std::vector<Subtask>& subtasks);

struct MemoryPlan {
  std::vector<BufferSlot> buffers;
  HostStrategy host;
};
// Arena slots are assigned first-fit over [first write, last read] lifetimes in subtask order, so
// intermediates whose lifetimes do not overlap share memory. A graph output (or the node a graph
// output is a full contiguous view of) is written straight into the caller's buffer.
MemoryPlan plan_memory(const ir::Graph& graph, const ValueMap& values,
                       const std::vector<Subtask>& subtasks);

// What a forward holds on the device: the caller's inputs, params and outputs, the program's
// persistent block (at-init results, then its own copy of every param), and the arena.
// `materialized` is what the plan writes to the arena and reads back (every intermediate slot, each
// counted once): the bytes a lowering adds by materialising a value instead of fusing it.
struct DeviceFootprint {
  int64_t inputs = 0, params = 0, outputs = 0, persistent = 0, workspace = 0, materialized = 0;
  int64_t total() const { return inputs + params + outputs + persistent + workspace; }
};
DeviceFootprint device_footprint(const Plan& plan);

// Refuses a plan whose footprint exceeds `memory_bytes` (the target GPU's memory), naming the
// largest arena buffers, so no program is emitted that cannot run there.
Status check_device_memory(const Plan& plan, int64_t memory_bytes, const std::string& gpu);

// "unused": nothing reads the param (BatchNorm's running stats in training mode): the program
// need not keep it. "init_only": only at_init subtasks read it (e.g. an inference BatchNorm's
// scale/shift, a param repacked by a clone). Params read transposed by cuBLASLt need nothing: their
// Access strides say it.
std::vector<ParamPrep> plan_param_preps(const ir::Graph& graph,
                                        const std::vector<Subtask>& subtasks);

}  // namespace stitch::plan
