// Which values the plan stores channels-last (layout.h).
#include "plan/layout.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <variant>

#include "plan/access.h"
#include "plan/graph_edit.h"
#include "plan/kernel_choice.h"
#include "plan/subtasks.h"

namespace stitch::plan {
namespace {

// cuDNN may run the convolution instead (timed at init): it stays NCHW but where it is given
// the region's layout (cudnn_takes_channels_last).
bool timed_against_cudnn(const Subtask& subtask) {
  return subtask.tunables.count("cudnn_alternative") > 0;
}
bool cudnn_keeps_nchw(const Subtask& subtask) {
  return timed_against_cudnn(subtask) &&
         !cudnn_takes_channels_last(subtask_tensor_math(subtask));
}

// The subtask is a forward convolution on one of the project's kernels that writes `value` from
// its stores and nothing else: no epilogue pass left to read it back. Where cuDNN is timed
// against the kernel and given the layout, it writes it too (its NHWC engines; the kernel
// epilogue's pass takes either), but the output transform's pass after it reads NCHW planes.
bool kernel_writes_only(const Subtask& subtask, const ir::ValueRef& value) {
  const auto* conv = std::get_if<ConvSpec>(&subtask.spec);
  return conv != nullptr && !cudnn_keeps_nchw(subtask) && !conv->transposed && !conv->epilogue &&
         !conv->channel_reduce &&
         !(timed_against_cudnn(subtask) && conv->output_transform) && conv->stores.size() == 1 &&
         conv->stores[0].value == value &&
         (subtask.kernel == "igemm_tf32x3_conv" || subtask.kernel == "direct_conv");
}

// The subtask is an implicit-GEMM convolution whose wgmma gather reads x channels-last as it is
// stored (channels per group a multiple of 4: a count the kernel pads, 3 -> 4, reads a padded copy
// of x whatever its layout), and `x` is its x; cuDNN, where timed against it, reads x so too.
bool gathers_channels_last(const Subtask& subtask, const Access& x) {
  const auto* conv = std::get_if<ConvSpec>(&subtask.spec);
  return conv != nullptr && subtask.kernel == "igemm_tf32x3_conv" && !cudnn_keeps_nchw(subtask) &&
         !conv->transposed && !conv->prologue && conv->x == x &&
         (conv->in_channels / conv->groups) % 4 == 0;
}

// The pool reads `x` as its input over every dim after N and C (a channels-last input is then
// read channels fastest: kernels/pooling.cuh).
bool pools_whole_planes(const Subtask& subtask, const Access& x) {
  const auto* pool = std::get_if<PoolSpec>(&subtask.spec);
  return pool != nullptr && pool->input == x && pool->input.shape.size() == pool->out.size() + 2;
}

// The subtask is a pool that stores `value` (through its store functor: any layout).
bool pool_stores(const Subtask& subtask, const ir::ValueRef& value) {
  const auto* pool = std::get_if<PoolSpec>(&subtask.spec);
  if (pool == nullptr) return false;
  return std::any_of(pool->stores.begin(), pool->stores.end(),
                     [&](const Store& store) { return store.value == value; });
}

// A value that may be stored channels-last, and the subtasks around it.
struct Link {
  ir::ValueRef value;
  size_t producer = 0;
  std::vector<size_t> gathers;  // implicit-GEMM convolutions reading it as x, channels-last
  std::vector<size_t> pools;    // pools reading it as their input
};

// The link of `value` (written by subtasks[producer], its buffer seen through `access`: dense
// before the choice, channels-last after), when each subtask but the producer that touches its
// buffer reads it only as a channels-last gather's x or a pool's input; nullopt otherwise.
std::optional<Link> link_of(const ir::Graph& graph, const ValueMap& values,
                            const std::vector<Subtask>& subtasks, size_t producer,
                            const Access& access) {
  const ir::ValueRef value = access.base;
  const ir::TensorType& type = graph.type_of(value);
  if (value.kind != ir::ValueRef::Kind::node || type.dtype != ir::DType::float32 ||
      type.shape.size() < 3 || type.shape.size() > 5 ||
      !(kernel_writes_only(subtasks[producer], value) || pool_stores(subtasks[producer], value)))
    return std::nullopt;
  for (const ir::ValueRef& output : graph.outputs)
    if (values.at(value_key(output)).base == value) return std::nullopt;
  Link link{value, producer, {}, {}};
  for (size_t i = 0; i < subtasks.size(); ++i) {
    if (i == producer) continue;
    for (const ir::ValueRef& written : subtask_writes(subtasks[i]))
      if (written == value) return std::nullopt;
    std::vector<Access> reads = subtask_reads(subtasks[i]);
    const auto whole = std::find(reads.begin(), reads.end(), access);
    const bool gathered = whole != reads.end() && gathers_channels_last(subtasks[i], access);
    const bool pooled = whole != reads.end() && pools_whole_planes(subtasks[i], access);
    if (gathered || pooled) reads.erase(whole);
    for (const Access& read : reads)
      if (read.base == value) return std::nullopt;  // read otherwise (an epilogue's load, ...)
    if (gathered) link.gathers.push_back(i);
    if (pooled) link.pools.push_back(i);
  }
  return link;
}

// The value stored by `subtasks[producer]` that `links` holds, if any.
const Link* stored_link(const std::map<std::string, Link>& links,
                        const std::vector<Subtask>& subtasks, size_t producer) {
  for (const ir::ValueRef& written : subtask_writes(subtasks[producer])) {
    const auto found = links.find(value_key(written));
    if (found != links.end() && found->second.producer == producer) return &found->second;
  }
  return nullptr;
}

// Drops links until every one left pays: a value stays channels-last where a gather reads it (the
// transpose it saves) or a pool reads it whose result stays channels-last too; a pool's result
// stays only where its input does (the pool then reads and writes channels fastest, both
// coalesced).
void keep_paying(const std::vector<Subtask>& subtasks, std::map<std::string, Link>& links) {
  for (bool dropped = true; dropped;) {
    dropped = false;
    for (auto it = links.begin(); it != links.end();) {
      const Link& link = it->second;
      bool pays = !link.gathers.empty();
      for (size_t pool : link.pools)
        pays = pays || stored_link(links, subtasks, pool) != nullptr;
      if (const auto* pool = std::get_if<PoolSpec>(&subtasks[link.producer].spec))
        pays = pays && links.count(value_key(pool->input.base)) > 0;
      if (pays) {
        ++it;
      } else {
        it = links.erase(it);
        dropped = true;
      }
    }
  }
}

}  // namespace

ValueMap channels_last_homes(const ir::Graph& graph, const ValueMap& values,
                             const std::vector<Subtask>& subtasks, const GpuPeaks& peaks) {
  ValueMap homes;
  if (peaks.tf32_tflops <= 0) return homes;  // no wgmma gather to feed
  std::map<std::string, Link> links;
  for (size_t p = 0; p < subtasks.size(); ++p) {
    for (const ir::ValueRef& value : subtask_writes(subtasks[p])) {
      if (value.kind != ir::ValueRef::Kind::node || !owns_buffer(graph, values, value))
        continue;  // a cat's window, or not a node value
      if (auto link = link_of(graph, values, subtasks, p, values.at(value_key(value))))
        links.emplace(value_key(value), std::move(*link));
    }
  }
  keep_paying(subtasks, links);
  for (const auto& [key, link] : links)
    homes[key] = channels_last_access(link.value, graph.type_of(link.value).shape);
  return homes;
}

bool channels_last_holds(const ir::Graph& graph, const ValueMap& values,
                         const std::vector<Subtask>& subtasks, const ValueMap& homes) {
  std::map<std::string, Link> links;
  for (const auto& [key, home] : homes) {
    const auto found = values.find(key);
    if (found == values.end() || found->second != home) return false;
    for (size_t p = 0; p < subtasks.size(); ++p) {
      const auto writes = subtask_writes(subtasks[p]);
      if (std::find(writes.begin(), writes.end(), home.base) == writes.end()) continue;
      if (auto link = link_of(graph, values, subtasks, p, home))
        links.emplace(key, std::move(*link));
      break;
    }
    if (links.count(key) == 0) return false;
  }
  keep_paying(subtasks, links);
  return links.size() == homes.size();
}

}  // namespace stitch::plan
