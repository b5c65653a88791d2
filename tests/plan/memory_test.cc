// Device memory: what a plan holds on the GPU (DeviceFootprint), the refusal of a plan that cannot
// fit the target GPU, and the big tiling pool that used to materialise an input-sized copy.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "plan/memory_plan.h"
#include "plan/plan_check.h"
#include "plan/planner.h"
#include "plan/subtasks.h"
#include "plan_test_graphs.h"

namespace stitch::plan {
namespace {

using ir::Op;
using namespace testing;  // NOLINT: test helpers

int count_kind(const Plan& plan, size_t variant_index) {
  int count = 0;
  for (const Subtask& subtask : plan.subtasks)
    count += subtask.spec.index() == variant_index ? 1 : 0;
  return count;
}

// A 2x2 max pool (kernel == stride) over an 18.5 GB input whose odd height and width drop a row and
// a column (floor mode). It was lowered to a copy of the sliced input plus two reductions: an
// input-sized workspace, beyond what the input, its copy and the output leave on an 80 GB GPU.
ir::Graph big_tiling_pool() {
  GraphBuilder b;
  auto x = b.input("x", {128, 64, 751, 751});
  auto pool = b.multi("pool", Op::max_pool2d_with_indices, {ref(x), ints({2, 2}), ints({2, 2})},
                      {{128, 64, 375, 375}, {128, 64, 375, 375}});
  b.graph().nodes.back().outputs[1].dtype = ir::DType::int64;
  b.output(pool);
  return b.graph();
}

TEST(DeviceMemory, BigTilingPoolReadsItsInputOnceWithoutWorkspace) {
  ir::Graph graph = big_tiling_pool();
  PlanOptions options;
  options.peaks = peaks_for_gpu("NVIDIA A100 80GB SXM");
  auto plan = make_plan(graph, options);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  ASSERT_EQ(plan->subtasks.size(), 1u);
  EXPECT_EQ(count_kind(*plan, SubtaskSpec(ReductionSpec{}).index()), 1);
  EXPECT_EQ(count_kind(*plan, SubtaskSpec(CopySpec{}).index()), 0);
  const DeviceFootprint footprint = device_footprint(*plan);
  EXPECT_EQ(footprint.materialized, 0);
  EXPECT_LT(footprint.workspace, int64_t{1} << 24);  // split partials at most
  const double input_bytes = 128.0 * 64 * 751 * 751 * 4;
  EXPECT_EQ(footprint.inputs, static_cast<int64_t>(input_bytes));
  // One read of the input (the dropped row and column included in its footprint) and one write.
  const Subtask& pool = plan->subtasks[0];
  EXPECT_LE(pool.bytes, input_bytes + 128.0 * 64 * 375 * 375 * 4);
}

TEST(DeviceMemory, PlanThatDoesNotFitTheGpuIsRefusedNamingItsBuffers) {
  // exp(x) feeds a GEMM, which takes no prologue: it is materialised in the arena.
  GraphBuilder b;
  auto x = b.input("x", {256, 512});
  auto w = b.input("w", {512, 128});
  auto e = b.node("e", Op::exp, {ref(x)}, {256, 512});
  b.output(b.node("mm", Op::mm, {ref(e), ref(w)}, {256, 128}));
  auto plan = make_plan(b.graph(), {});
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const DeviceFootprint footprint = device_footprint(*plan);
  EXPECT_EQ(footprint.materialized, 256 * 512 * 4);
  EXPECT_EQ(footprint.inputs, (256 * 512 + 512 * 128) * 4);
  EXPECT_EQ(footprint.outputs, 256 * 128 * 4);
  EXPECT_GE(footprint.workspace, footprint.materialized);
  EXPECT_EQ(footprint.total(),
            footprint.inputs + footprint.outputs + footprint.persistent + footprint.workspace);

  PlanOptions small;
  small.device_memory_bytes = footprint.total() - 1;
  auto refused = make_plan(b.graph(), small);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("of device memory, more than"), std::string::npos)
      << refused.error().message;
  EXPECT_NE(refused.error().message.find("largest intermediates: e "), std::string::npos)
      << refused.error().message;
  small.device_memory_bytes = footprint.total();
  EXPECT_TRUE(make_plan(b.graph(), small).ok());
}

TEST(DeviceMemory, TheLimitComesFromThePeakTableByDefault) {
  // 18.5 GB in and 4.6 GB out fit an L4's 24 GB (with the old input-sized copy they did not); a
  // 16 GiB budget holds neither.
  ir::Graph graph = big_tiling_pool();
  PlanOptions l4;
  l4.peaks = peaks_for_gpu("NVIDIA L4");
  EXPECT_TRUE(make_plan(graph, l4).ok());
  PlanOptions tight;
  tight.device_memory_bytes = int64_t{16} << 30;
  auto refused = make_plan(graph, tight);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("of NVIDIA H200"), std::string::npos)
      << refused.error().message;
}

// ViT's class token: cat(param token, embedded patches) + a param position embedding. The
// token's copy into the cat's buffer may run at init, but the cat's buffer is also written by the
// forward (the patches), so nothing that reads it is a constant — the position-embedding add and
// everything after it run every forward (they used to be hoisted to init, computed once from a
// half-written buffer).
TEST(InitSubtasks, ABufferTheForwardAlsoWritesIsNotAConstant) {
  GraphBuilder b;
  auto x = b.input("x", {2, 4, 8});
  auto token = b.param("token", {2, 1, 8});
  auto position = b.param("position", {2, 5, 8});
  auto patches = b.node("patches", Op::relu, {ref(x)}, {2, 4, 8});
  const ir::Arg pieces{ir::ArgList{ref(token), ref(patches)}};
  auto joined = b.node("cat", Op::cat, {pieces, integer(1)}, {2, 5, 8});
  auto added = b.node("add", Op::add_tensor, {ref(joined), ref(position)}, {2, 5, 8});
  b.output(b.node("out", Op::tanh, {ref(added)}, {2, 5, 8}));
  auto plan = make_plan(b.graph(), PlanOptions{});
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  int at_init = 0;
  for (const Subtask& subtask : plan->subtasks) {
    at_init += subtask.at_init ? 1 : 0;
    for (const Access& read : subtask_reads(subtask))
      if (plan->graph.name_of(read.base) == "cat") EXPECT_FALSE(subtask.at_init) << subtask.id;
  }
  EXPECT_EQ(at_init, 1);  // the token's copy
}

// Mamba2's chunk decays, padded: pad(last(cumsum(param)), (1, 0)) gets its padding piece from a
// fill written in place every forward and its other piece from a copy of a param's result, which
// runs at init. The pad's buffer must then be persistent: in the arena, where the fill (the first
// writer) put it, the buffers of other lifetimes overwrote what init had copied there.
TEST(InitSubtasks, ABufferInitWritesIsPersistentWhoeverWritesItFirst) {
  GraphBuilder b;
  auto x = b.input("x", {4, 3});
  auto a = b.param("a", {4, 8});
  auto sums = b.node("cumsum", Op::cumsum, {ref(a), integer(1)}, {4, 8});
  auto last = b.node("last", Op::select_int, {ref(sums), integer(1), integer(-1)}, {4});
  auto padded = b.node("pad", Op::constant_pad_nd, {ref(last), ints({1, 0}), num(0.0)}, {5});
  auto running = b.node("running", Op::cumsum, {ref(padded), integer(0)}, {5});
  auto row = b.node("row", Op::unsqueeze, {ref(running), integer(1)}, {5, 1});
  auto wide = b.node("wide", Op::expand, {ref(row), ints({5, 3})}, {5, 3});
  auto cut = b.node("cut", Op::slice_tensor, {ref(wide), integer(0), integer(0), integer(4)},
                    {4, 3});
  b.output(b.node("out", Op::add_tensor, {ref(x), ref(cut)}, {4, 3}));
  auto plan = make_plan(b.graph(), PlanOptions{});
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  std::set<std::string> written_at_init;
  for (const Subtask& subtask : plan->subtasks)
    if (subtask.at_init)
      for (const ir::ValueRef& written : subtask_writes(subtask))
        written_at_init.insert(plan->graph.name_of(written));
  ASSERT_FALSE(written_at_init.empty());
  int checked = 0;
  for (const BufferSlot& slot : plan->buffers)
    if (written_at_init.count(slot.value)) {
      EXPECT_EQ(slot.where, BufferSlot::Where::persistent) << slot.value;
      ++checked;
    }
  EXPECT_GT(checked, 0);
}

// check_plan holds every plan's memory to it: a buffer written at init must be persistent, and
// two arena buffers live at the same time must not share bytes. Each broken by hand on the SSD
// recurrence's plan is refused, naming the buffers.
TEST(InitSubtasks, CheckPlanRefusesInitWritesInTheArenaAndLiveBuffersSharingBytes) {
  auto graph = ir::load_graph(data_path("plan_ssd_chunk_states.graph.json"));
  ASSERT_TRUE(graph.ok()) << graph.error().message;
  auto plan = make_plan(*graph, PlanOptions{});
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  ASSERT_TRUE(check_plan(*plan).ok());

  Plan in_arena = *plan;
  bool moved = false;
  for (BufferSlot& slot : in_arena.buffers)
    if (slot.value == "constant_pad_nd_pad2" && slot.where == BufferSlot::Where::persistent) {
      slot.where = BufferSlot::Where::arena;
      moved = true;
    }
  ASSERT_TRUE(moved) << "the pad's buffer is no longer persistent in this plan";
  const Status refused = check_plan(in_arena);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("writes 'constant_pad_nd_pad2' at init"),
            std::string::npos)
      << refused.error().message;

  // Two arena buffers live at once (first write to last read), the second moved onto the first.
  Plan overlapping = *plan;
  std::map<std::string, std::pair<size_t, size_t>> live;  // first write, last read
  for (size_t i = 0; i < overlapping.subtasks.size(); ++i) {
    for (const ir::ValueRef& value : subtask_writes(overlapping.subtasks[i]))
      live.try_emplace(overlapping.graph.name_of(value), i, i);
    for (const Access& read : subtask_reads(overlapping.subtasks[i]))
      if (auto it = live.find(overlapping.graph.name_of(read.base)); it != live.end())
        it->second.second = std::max(it->second.second, i);
  }
  BufferSlot* first = nullptr;
  BufferSlot* second = nullptr;
  for (BufferSlot& a : overlapping.buffers)
    for (BufferSlot& b : overlapping.buffers)
      if (&a != &b && a.where == BufferSlot::Where::arena && b.where == BufferSlot::Where::arena &&
          live.count(a.value) && live.count(b.value) && first == nullptr &&
          live[a.value].first <= live[b.value].second &&
          live[b.value].first <= live[a.value].second)
        first = &a, second = &b;
  ASSERT_NE(first, nullptr) << "no two arena buffers live at once in this plan";
  second->offset = first->offset;
  const Status shared = check_plan(overlapping);
  ASSERT_FALSE(shared.ok());
  EXPECT_NE(shared.error().message.find("share bytes while both are live"), std::string::npos)
      << shared.error().message;
}

}  // namespace
}  // namespace stitch::plan

namespace stitch::plan {
namespace {

// Training-mode BatchNorms with their state updates (tests/tasks/plan_bn_running_stats.py): the
// plan keeps the buffers' new values as outputs after the user output, and no subtask that reads a
// buffer forward updates runs at init (the buffer changes between calls: not a constant).
TEST(StateUpdates, PlanKeepsThemAsOutputsAndNeverHoistsTheirReaders) {
  auto graph = ir::load_graph(data_path("plan_bn_running_stats.graph.json"));
  ASSERT_TRUE(graph.ok()) << graph.error().message;
  auto plan = make_plan(*graph, PlanOptions{});
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(plan->graph.state_params, graph->state_params);
  EXPECT_EQ(plan->graph.outputs.size(), 7u);
  std::set<int32_t> state;
  for (size_t p = 0; p < plan->graph.params.size(); ++p)
    if (plan->graph.params[p].name.find("running_") != std::string::npos ||
        plan->graph.params[p].name.find("num_batches") != std::string::npos)
      state.insert(static_cast<int32_t>(p));
  ASSERT_EQ(state.size(), 6u);
  for (const Subtask& subtask : plan->subtasks)
    for (const Access& read : subtask_reads(subtask))
      if (read.base.kind == ir::ValueRef::Kind::param && state.count(read.base.index))
        EXPECT_FALSE(subtask.at_init) << subtask.id;
  PlanOptions inference;
  inference.inference = true;
  auto eval = make_plan(*graph, inference);
  ASSERT_TRUE(eval.ok()) << eval.error().message;
  EXPECT_TRUE(eval->graph.state_params.empty());
  EXPECT_EQ(eval->graph.outputs.size(), 1u);
}

}  // namespace
}  // namespace stitch::plan
