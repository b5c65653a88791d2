// Which values the plan stores channels-last (layout.h).
#include "plan/layout.h"

#include <algorithm>
#include <optional>
#include <variant>

#include "plan/access.h"
#include "plan/graph_edit.h"
#include "plan/subtasks.h"

namespace stitch::plan {
namespace {

// cuDNN may run the convolution instead (timed at init): it reads and writes NCHW only.
bool timed_against_cudnn(const Subtask& subtask) {
  return subtask.tunables.count("cudnn_alternative") > 0;
}

// The subtask is a forward convolution on one of the project's kernels that writes `value` from
// its stores and nothing else: no epilogue pass left to read it back.
bool kernel_writes_only(const Subtask& subtask, const ir::ValueRef& value) {
  const auto* conv = std::get_if<ConvSpec>(&subtask.spec);
  return conv != nullptr && !timed_against_cudnn(subtask) && !conv->transposed && !conv->epilogue &&
         conv->stores.size() == 1 && conv->stores[0].value == value &&
         (subtask.kernel == "igemm_tf32x3_conv" || subtask.kernel == "direct_conv");
}

// The subtask is an implicit-GEMM convolution whose wgmma gather reads x channels-last, and `x`
// is its x.
bool gathers_channels_last(const Subtask& subtask, const Access& x) {
  const auto* conv = std::get_if<ConvSpec>(&subtask.spec);
  return conv != nullptr && subtask.kernel == "igemm_tf32x3_conv" &&
         !timed_against_cudnn(subtask) && !conv->transposed && !conv->prologue && conv->x == x &&
         (conv->in_channels / conv->groups) % 4 == 0;
}

// The subtasks (other than the producer) that read `value`'s buffer, where each reads it only as
// a channels-last gather's x at `access`; nullopt when any reads it otherwise, or another subtask
// writes it too.
std::optional<std::vector<size_t>> gathering_readers(const std::vector<Subtask>& subtasks,
                                                     size_t producer, const ir::ValueRef& value,
                                                     const Access& access) {
  std::vector<size_t> readers;
  for (size_t i = 0; i < subtasks.size(); ++i) {
    if (i == producer) continue;
    for (const ir::ValueRef& written : subtask_writes(subtasks[i]))
      if (written == value) return std::nullopt;
    std::vector<Access> reads = subtask_reads(subtasks[i]);
    const auto as_x = std::find(reads.begin(), reads.end(), access);
    const bool gathered = as_x != reads.end() && gathers_channels_last(subtasks[i], access);
    if (gathered) reads.erase(as_x);
    for (const Access& read : reads)
      if (read.base == value) return std::nullopt;  // read otherwise (an epilogue's load, ...)
    if (gathered) readers.push_back(i);
  }
  return readers;
}

// The readers of the value `subtasks[producer]` stores when the rule of layout.h holds for it with
// its buffer seen through `access` (dense before the choice, channels-last after); nullopt or
// none when it does not.
std::optional<std::vector<size_t>> rule_readers(const ir::Graph& graph, const ValueMap& values,
                                                const std::vector<Subtask>& subtasks,
                                                size_t producer, const Access& access) {
  const ir::ValueRef value = access.base;
  const ir::TensorType& type = graph.type_of(value);
  if (value.kind != ir::ValueRef::Kind::node || type.dtype != ir::DType::float32 ||
      type.shape.size() < 3 || type.shape.size() > 5 ||
      !kernel_writes_only(subtasks[producer], value))
    return std::nullopt;
  for (const ir::ValueRef& output : graph.outputs)
    if (values.at(value_key(output)).base == value) return std::nullopt;
  return gathering_readers(subtasks, producer, value, access);
}

}  // namespace

ValueMap channels_last_homes(const ir::Graph& graph, const ValueMap& values,
                             const std::vector<Subtask>& subtasks, const GpuPeaks& peaks) {
  ValueMap homes;
  if (peaks.tf32_tflops <= 0) return homes;  // no wgmma gather to feed
  for (size_t p = 0; p < subtasks.size(); ++p) {
    const auto* conv = std::get_if<ConvSpec>(&subtasks[p].spec);
    if (conv == nullptr || conv->stores.empty()) continue;
    const ir::ValueRef value = conv->stores[0].value;
    if (!owns_buffer(graph, values, value)) continue;  // a cat's window, or not a node value
    const auto readers = rule_readers(graph, values, subtasks, p, values.at(value_key(value)));
    if (readers && !readers->empty())
      homes[value_key(value)] = channels_last_access(value, graph.type_of(value).shape);
  }
  return homes;
}

bool channels_last_holds(const ir::Graph& graph, const ValueMap& values,
                         const std::vector<Subtask>& subtasks, const ValueMap& homes) {
  for (const auto& [key, home] : homes) {
    const auto found = values.find(key);
    if (found == values.end() || found->second != home) return false;
    bool held = false;
    for (size_t p = 0; p < subtasks.size() && !held; ++p) {
      const auto readers = rule_readers(graph, values, subtasks, p, home);
      held = readers && !readers->empty();
    }
    if (!held) return false;
  }
  return true;
}

}  // namespace stitch::plan
