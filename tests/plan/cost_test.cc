// Cost model, kernel choice and memory planning on small plans built through make_plan.
#include <gtest/gtest.h>

#include "plan/cost_model.h"
#include "plan/kernel_choice.h"
#include "plan/plan_check.h"
#include "plan/planner.h"
#include "plan_test_graphs.h"

namespace stitch::plan {
namespace {

using ir::Op;
using namespace testing;  // NOLINT: test helpers

Plan plan_of(ir::Graph& graph) {
  auto plan = make_plan(graph, {});
  EXPECT_TRUE(plan.ok()) << plan.error().message;
  return plan.ok() ? *plan : Plan{};
}

TEST(CostModel, RooflineFloor) {
  const GpuPeaks peaks = h200_peaks();
  // 67e12 flop/s: 67e6 flops take 1 us; 4800 GB/s: 4.8e6 bytes take 1 us.
  EXPECT_DOUBLE_EQ(roofline_floor_us(67e6, 0, peaks), 1.0);
  EXPECT_DOUBLE_EQ(roofline_floor_us(0, 4.8e6, peaks), 1.0);
  EXPECT_DOUBLE_EQ(roofline_floor_us(67e6, 9.6e6, peaks), 2.0);
}

TEST(CostModel, PeaksByDeviceName) {
  // The H200's rates are the planner's whatever the name says, so H200 plans never change.
  EXPECT_EQ(peaks_for_gpu("NVIDIA H200"), (GpuPeaks{"NVIDIA H200", 67.0, 4800.0, 132, 494.7}));
  EXPECT_EQ(h200_peaks(), (GpuPeaks{"NVIDIA H200", 67.0, 4800.0, 132, 494.7}));
  EXPECT_DOUBLE_EQ(peaks_for_gpu("NVIDIA A100-SXM4-40GB").dram_gbps, 1555.0);
  EXPECT_DOUBLE_EQ(peaks_for_gpu("NVIDIA A100-SXM4-80GB").dram_gbps, 2039.0);
  EXPECT_EQ(peaks_for_gpu("NVIDIA H100 PCIe", 100).sms, 100);
  const GpuPeaks unknown = peaks_for_gpu("Tesla T4");
  EXPECT_EQ(unknown.name, "Tesla T4 (H200 rates assumed)");
  EXPECT_DOUBLE_EQ(unknown.dram_gbps, 4800.0);
}

TEST(CostModel, GemmIsComputeBoundElementwiseMemoryBound) {
  GraphBuilder b;
  auto x = b.input("x", {2048, 2048});
  auto w = b.input("w", {2048, 2048});
  auto mm = b.node("mm", Op::mm, {ref(x), ref(w)}, {2048, 2048});
  auto e = b.node("e", Op::exp, {ref(x)}, {2048, 2048});
  b.output(mm);
  b.output(e);
  const Plan plan = plan_of(b.graph());
  ASSERT_EQ(plan.subtasks.size(), 2u);
  const Subtask& gemm = plan.subtasks[0];
  EXPECT_DOUBLE_EQ(gemm.flops, 2.0 * 2048 * 2048 * 2048);
  EXPECT_DOUBLE_EQ(gemm.bytes, 3.0 * 2048 * 2048 * 4);
  EXPECT_EQ(gemm.bound, Bound::compute);
  EXPECT_EQ(gemm.kernel, "cublaslt_matmul");
  const Subtask& exp = plan.subtasks[1];
  EXPECT_DOUBLE_EQ(exp.bytes, 2.0 * 2048 * 2048 * 4);
  EXPECT_EQ(exp.bound, Bound::memory);
  EXPECT_EQ(exp.tunables.at("vector_width"), 4);
  EXPECT_NEAR(plan.floor_us, gemm.floor_us + exp.floor_us, 1e-9);
}

// The one subtask of a planned 4096³ GEMM (compute bound on every GPU the table knows).
Subtask planned_big_gemm(const PlanOptions& options) {
  GraphBuilder b;
  auto x = b.input("x", {4096, 4096});
  auto w = b.input("w", {4096, 4096});
  b.output(b.node("mm", Op::mm, {ref(x), ref(w)}, {4096, 4096}));
  auto plan = make_plan(b.graph(), options);
  EXPECT_TRUE(plan.ok());
  return plan.ok() ? plan->subtasks.at(0) : Subtask{};
}

TEST(CostModel, FloorUsesThePeakOfTheChosenArithmetic) {
  auto gemm_floor = [](bool allow_tf32x3) {
    PlanOptions options;
    options.allow_tf32x3 = allow_tf32x3;
    return planned_big_gemm(options);
  };
  const GpuPeaks h200 = h200_peaks();
  const double flops = 2.0 * 4096 * 4096 * 4096;
  const Subtask split = gemm_floor(true);
  ASSERT_EQ(split.tunables.count("split_tf32x3"), 1u);
  // Three TF32 products per FP32-accurate one: a third of the tensor-core peak.
  EXPECT_DOUBLE_EQ(compute_peak_tflops(split, h200), h200.tf32_tflops / 3);
  EXPECT_NEAR(split.floor_us, flops / (h200.tf32_tflops / 3 * 1e6), 1e-6);
  const Subtask strict = gemm_floor(false);
  EXPECT_EQ(strict.tunables.count("split_tf32x3"), 0u);
  EXPECT_DOUBLE_EQ(compute_peak_tflops(strict, h200), h200.fp32_tflops);
  EXPECT_NEAR(strict.floor_us, flops / (h200.fp32_tflops * 1e6), 1e-6);
  EXPECT_LT(split.floor_us, strict.floor_us);
}

// A GEMM the model rates split-precision behind strict FP32, but within its error band
// (kTimedEngineRatio), runs split with strict FP32 timed against it at init (strict_alternative);
// one rated clearly ahead runs split untimed; one too short to time, or on the tf32 track, is
// never timed; plan_check holds the tunable to a split GEMM.
TEST(CostModel, SplitGemmsWithinTheModelsErrorAreTimedAgainstStrict) {
  auto plan_bmm = [](int64_t batch, int64_t m, int64_t n, int64_t k, TensorMath math) {
    GraphBuilder b;
    auto x = b.input("x", {batch, m, k});
    auto w = b.input("w", {batch, k, n});
    b.output(b.node("mm", Op::bmm, {ref(x), ref(w)}, {batch, m, n}));
    PlanOptions options;
    options.tensor_math = math;
    return make_plan(b.graph(), options);
  };
  const GpuPeaks h200 = h200_peaks();
  // plan_bmm_scale's GEMM: the 3xTF32 kernel rated within the band of strict FP32.
  auto band = plan_bmm(32, 256, 384, 128, TensorMath::fp32);
  ASSERT_TRUE(band.ok()) << band.error().message;
  const Subtask& timed = band->subtasks.at(0);
  EXPECT_EQ(timed.tunables.count("split_tf32x3"), 1u);
  EXPECT_EQ(timed.tunables.count("strict_alternative"), 1u);
  const GemmEstimate estimate =
      estimate_gemm(32, 256, 384, 128, 32 * 256 * 128, 32 * 128 * 384, false, h200, true);
  EXPECT_FALSE(estimate.prefer_tf32x3);
  const double split_s =
      estimate.prefer_tf32x3_kernel ? estimate.tf32x3_kernel_s : estimate.tf32x3_s;
  EXPECT_LE(split_s, kTimedEngineRatio * estimate.fp32_s);
  EXPECT_GE(estimate.fp32_s, kTimedEngineMinSeconds);
  EXPECT_TRUE(check_plan(*band).ok());
  // 4096³: split, confidently.
  const Subtask big = planned_big_gemm(PlanOptions{});
  EXPECT_EQ(big.tunables.count("split_tf32x3"), 1u);
  EXPECT_EQ(big.tunables.count("strict_alternative"), 0u);
  // Too short to be worth timing, and the tf32 track: no alternative.
  auto tiny = plan_bmm(1, 32, 32, 32, TensorMath::fp32);
  ASSERT_TRUE(tiny.ok());
  EXPECT_EQ(tiny->subtasks.at(0).tunables.count("strict_alternative"), 0u);
  auto tf32 = plan_bmm(32, 256, 384, 128, TensorMath::tf32);
  ASSERT_TRUE(tf32.ok());
  EXPECT_EQ(tf32->subtasks.at(0).tunables.count("strict_alternative"), 0u);
  Plan broken = *band;
  broken.subtasks[0].tunables.erase("split_tf32x3");
  const Status refused = check_plan(broken);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("only against a split-precision GEMM"),
            std::string::npos);
}

// Issue 13 item 6: the tf32 and bf16 tracks' GEMMs use that tensor-core math (never split), and
// their floors the matching peak; fp32 keeps the time model's strict / 3xTF32 choice.
TEST(CostModel, TensorMathOfTheTrackSetsEveryGemmAndItsFloor) {
  auto gemm_with = [](TensorMath math) {
    PlanOptions options;
    options.tensor_math = math;
    return planned_big_gemm(options);
  };
  const GpuPeaks h200 = h200_peaks();
  const double flops = 2.0 * 4096 * 4096 * 4096;
  const Subtask tf32 = gemm_with(TensorMath::tf32);
  EXPECT_EQ(tf32.tunables.at("tensor_math"), 1);
  EXPECT_EQ(tf32.tunables.count("split_tf32x3"), 0u);
  EXPECT_EQ(subtask_tensor_math(tf32), TensorMath::tf32);
  EXPECT_NEAR(tf32.floor_us, flops / (h200.tf32_tflops * 1e6), 1e-6);
  const Subtask bf16 = gemm_with(TensorMath::bf16);
  EXPECT_EQ(subtask_tensor_math(bf16), TensorMath::bf16);
  EXPECT_DOUBLE_EQ(compute_peak_tflops(bf16, h200), 2 * h200.tf32_tflops);
  const Subtask fp32 = gemm_with(TensorMath::fp32);
  EXPECT_EQ(fp32.tunables.count("tensor_math"), 0u);
  EXPECT_EQ(subtask_tensor_math(fp32), TensorMath::fp32);
  EXPECT_EQ(fp32.tunables.count("split_tf32x3"), 1u);
  EXPECT_EQ(format_tunable("tensor_math", 2), "bf16");
  EXPECT_EQ(tensor_math_from_name("tf32"), TensorMath::tf32);
  EXPECT_FALSE(tensor_math_from_name("fp16").has_value());
}

TEST(CostModel, TinyWorkIsLatencyBound) {
  GraphBuilder b;
  auto x = b.input("x", {16});
  b.output(b.node("r", Op::relu, {ref(x)}, {16}));
  EXPECT_EQ(plan_of(b.graph()).subtasks[0].bound, Bound::latency);
}

// A training-mode BatchNorm's statistics reduction carries its state updates (fusion rules F4 and
// F9): its bytes count the running buffer and the count it reads and their new values it writes,
// its flops one per output per epilogue step.
TEST(CostModel, ReductionCountsTheStateUpdatesOfItsEpilogue) {
  GraphBuilder b;
  auto x = b.input("x", {4, 8});
  auto tracked = b.input("tracked", {}, ir::DType::int64);
  auto running = b.param("running", {4});
  auto count = b.node("count", Op::add_tensor, {ref(tracked), integer(1)}, {}, ir::DType::int64);
  auto sum = b.node("sum", Op::sum_dim_intlist, {ref(x), ints({1})}, {4});
  auto kept = b.node("kept", Op::mul_tensor, {ref(running), num(0.9)}, {4});
  auto added = b.node("added", Op::mul_tensor, {ref(sum), num(0.1)}, {4});
  b.output(b.node("blended", Op::add_tensor, {ref(kept), ref(added)}, {4}));
  b.output(count);
  const Plan plan = plan_of(b.graph());
  ASSERT_EQ(plan.subtasks.size(), 1u);
  const Subtask& stats = plan.subtasks[0];
  EXPECT_DOUBLE_EQ(stats.bytes, 4 * 8 * 4 + 4 * 4 + 8 + 4 * 4 + 8);  // x, running, tracked in
  EXPECT_DOUBLE_EQ(stats.flops, 4 * 8 + 4 * 4);  // an add per input, 4 steps per output
}

TEST(KernelChoice, ReduceLaunchMirrorsTheLibrary) {
  // Hand-computed from kernels/reduction.cuh's detail::plan_reduce.
  struct Case {
    int64_t outer, reduce, inner;
    ReduceStrategy strategy;
    int64_t block_x, block_y, splits, workspace;
  } cases[] = {
      {4096, 4096, 1, ReduceStrategy::row_per_block, 256, 1, 1, 0},
      {65536, 64, 1, ReduceStrategy::row_per_warp, 256, 1, 1, 0},
      {4816896, 4, 1, ReduceStrategy::row_per_thread, 256, 1, 1, 0},
      {4, 1 << 22, 1, ReduceStrategy::row_per_block, 512, 1, 512, 512 * 4 * 16},
      {672, 501760, 1, ReduceStrategy::row_per_block, 512, 1, 7, 7 * 672 * 16},
      {64, 256, 512, ReduceStrategy::columns, 32, 8, 1, 0},
      {1, 1 << 16, 32, ReduceStrategy::columns, 32, 8, 256, 256 * 32 * 16},
      {1, 3, 4, ReduceStrategy::columns, 4, 4, 1, 0},
  };
  for (const Case& c : cases) {
    const ReduceLaunch launch = plan_reduce_launch(c.outer, c.reduce, c.inner);
    EXPECT_EQ(launch.strategy, c.strategy) << c.outer << "x" << c.reduce << "x" << c.inner;
    EXPECT_EQ(launch.block_x, c.block_x);
    EXPECT_EQ(launch.block_y, c.block_y);
    EXPECT_EQ(launch.splits, c.splits);
    EXPECT_EQ(launch.workspace_bytes, c.workspace);
  }
  EXPECT_EQ(reduce_strategy_name(static_cast<int64_t>(ReduceStrategy::row_per_thread)),
            "row_per_thread");
  EXPECT_EQ(reduce_strategy_name(4), "unknown");
}

TEST(KernelChoice, SplitReductionWorkspaceSizesTheArena) {
  GraphBuilder b;
  auto x = b.input("x", {4, 1 << 22});
  b.output(b.node("sum", Op::sum_dim_intlist, {ref(x), ints({1})}, {4}));
  const Plan plan = plan_of(b.graph());
  ASSERT_EQ(plan.subtasks.size(), 1u);
  EXPECT_EQ(plan.subtasks[0].tunables.at("splits"), 512);
  EXPECT_EQ(plan.host.library_workspace_bytes, 512 * 4 * 16);
  EXPECT_EQ(plan.host.workspace_bytes, 512 * 4 * 16);  // the output goes to the caller
}

TEST(KernelChoice, RowStrategyFollowsTheRowLength) {
  for (auto [cols, strategy] :
       {std::pair{768, RowStrategy::warp}, std::pair{4096, RowStrategy::block},
        std::pair{16384, RowStrategy::loop}}) {
    GraphBuilder b;
    auto x = b.input("x", {256, cols});
    b.output(b.node("softmax", Op::softmax, {ref(x), integer(1), flag(false)}, {256, cols}));
    const Plan plan = plan_of(b.graph());
    ASSERT_EQ(plan.subtasks.size(), 1u);
    EXPECT_EQ(plan.subtasks[0].tunables.at("row_strategy"), static_cast<int64_t>(strategy));
  }
}

// The one-kernel 3xTF32 GEMM (GemmTf32x3, its Hopper wgmma kernel) against cuBLASLt on split
// copies: at its measured H200 efficiency it is at least as fast on KernelBench level 2's Linear
// layers (1.17 vs 1.16 ms at 1024 rows, 0.63 vs 1.04 ms at 128 rows, measured) and wins where
// splitting a B that is not a parameter on every call dominates. Never for a transposed A, which
// it does not take.
TEST(KernelChoice, Tf32x3KernelWhereItsEstimateWins) {
  const GpuPeaks h200 = h200_peaks();
  const GemmEstimate level2 = estimate_gemm(1, 1024, 8192, 8192, 1024 * 8192, 8192 * 8192, true, h200);
  EXPECT_TRUE(level2.prefer_tf32x3);
  EXPECT_TRUE(level2.prefer_tf32x3_kernel);
  EXPECT_LT(level2.tf32x3_kernel_s, level2.tf32x3_s);
  // A weight of 32768 x 32768 read by 128 rows: memory-bound, its split copies twice B's bytes.
  const int64_t huge = 32768;
  const GemmEstimate weight = estimate_gemm(1, 128, huge, huge, 128 * huge, huge * huge, true, h200);
  EXPECT_TRUE(weight.prefer_tf32x3_kernel);
  EXPECT_GE(weight.tf32x3_kernel_s, 8.0 * huge * huge / (h200.dram_gbps * 1e9));
  const int64_t wide = 16384;
  const GemmEstimate input_b =
      estimate_gemm(1, 128, wide, wide, 128 * wide, wide * wide, false, h200);
  EXPECT_TRUE(input_b.prefer_tf32x3_kernel);
  EXPECT_LT(input_b.tf32x3_kernel_s, input_b.tf32x3_s);
  EXPECT_FALSE(estimate_gemm(1, 128, wide, wide, 128 * wide, wide * wide, false, h200,
                             /*kernel_available=*/false)
                   .prefer_tf32x3_kernel);
  // Its 128 x 128 tiles: 32 rows cost as much as 128.
  const GemmEstimate skinny = estimate_gemm(1, 32, wide, wide, 32 * wide, wide * wide, false, h200);
  EXPECT_DOUBLE_EQ(skinny.tf32x3_kernel_s, input_b.tf32x3_kernel_s);
}

TEST(KernelChoice, ComputeBoundGemmsGoToSplitPrecisionTf32x3) {
  const GpuPeaks h200 = h200_peaks();
  // KernelBench level 2's Linear 8192 -> 8192 on 1024 rows: strict FP32 ~2.7 ms (as measured).
  const GemmEstimate big = estimate_gemm(1, 1024, 8192, 8192, 1024 * 8192, 8192 * 8192, true, h200);
  EXPECT_NEAR(big.fp32_s, 2.74e-3, 0.1e-3);
  EXPECT_TRUE(big.prefer_tf32x3);
  EXPECT_LT(big.tf32x3_s, 0.6 * big.fp32_s);
  // Splitting a B that is not a parameter costs a pass over it on every call.
  const GemmEstimate b_input = estimate_gemm(1, 1024, 8192, 8192, 1024 * 8192, 8192 * 8192, false, h200);
  EXPECT_GT(b_input.tf32x3_s, big.tf32x3_s);
  // Few rows against a large weight (KernelBench level 3's MLP): reading the three split copies
  // of W bounds 3xTF32, which still wins.
  const int64_t wide = 16384;
  const GemmEstimate mlp = estimate_gemm(1, 128, wide, wide, 128 * wide, wide * wide, true, h200);
  EXPECT_GE(mlp.tf32x3_s, 12.0 * wide * wide / (h200.dram_gbps * 1e9));
  EXPECT_TRUE(mlp.prefer_tf32x3);
  // Small problems are launch bound: the extra split launches lose.
  EXPECT_FALSE(estimate_gemm(1, 64, 64, 64, 64 * 64, 64 * 64, true, h200).prefer_tf32x3);
  // Memory-bound shapes (k small) gain nothing from faster multiplies.
  EXPECT_FALSE(estimate_gemm(1, 65536, 256, 8, 65536 * 8, 8 * 256, true, h200).prefer_tf32x3);
  // No TF32 tensor cores known: never.
  GpuPeaks no_tensor_cores = h200;
  no_tensor_cores.tf32_tflops = 0;
  EXPECT_FALSE(estimate_gemm(1, 1024, 8192, 8192, 1024 * 8192, 8192 * 8192, true, no_tensor_cores)
                   .prefer_tf32x3);
}

TEST(MemoryPlan, ArenaReusesDeadIntermediatesAndOutputsGoToTheCaller) {
  GraphBuilder b;
  auto x = b.input("x", {1024});
  // a is read by two reductions (so stored), then dead; d, stored for two more reductions, is
  // written after a's last read and takes a's slot.
  auto a = b.node("a", Op::exp, {ref(x)}, {1024});
  auto s = b.node("s", Op::sum_dim_intlist, {ref(a), ints({0}), flag(true)}, {1});
  auto m = b.node("m", Op::amax, {ref(a), ints({0}), flag(true)}, {1});
  auto d = b.node("d", Op::mul_tensor, {ref(x), ref(s)}, {1024});
  auto e1 = b.node("e1", Op::amax, {ref(d), ints({0}), flag(true)}, {1});
  auto e2 = b.node("e2", Op::amin, {ref(d), ints({0}), flag(true)}, {1});
  b.output(b.node("u", Op::add_tensor, {ref(e1), ref(e2)}, {1}));
  b.output(m);
  const Plan plan = plan_of(b.graph());
  std::map<std::string, BufferSlot> slots;
  for (const BufferSlot& slot : plan.buffers)
    slots[slot.value] = slot;
  ASSERT_TRUE(slots.count("a") && slots.count("s") && slots.count("d") && slots.count("u"));
  EXPECT_EQ(slots["u"].where, BufferSlot::Where::output);
  EXPECT_EQ(slots["m"].where, BufferSlot::Where::output);
  EXPECT_EQ(slots["a"].where, BufferSlot::Where::arena);
  EXPECT_EQ(slots["d"].offset, slots["a"].offset);   // reused
  EXPECT_NE(slots["s"].offset, slots["a"].offset);   // live together with a and d
  EXPECT_EQ(plan.host.workspace_bytes, 4096 + 256);  // e1 also reuses s's slot
  EXPECT_EQ(plan.host.library_workspace_bytes, 0);
}

TEST(MemoryPlan, ParamOnlyWorkRunsAtInit) {
  GraphBuilder b;
  auto x = b.input("x", {8, 4});
  auto w = b.param("w", {4});
  b.param("unused", {4});
  auto scaled = b.node("scaled", Op::mul_tensor, {ref(w), num(2.0)}, {4});
  b.output(b.node("y", Op::mul_tensor, {ref(x), ref(scaled)}, {8, 4}));
  const Plan plan = plan_of(b.graph());
  ASSERT_EQ(plan.subtasks.size(), 2u);
  EXPECT_TRUE(plan.subtasks[0].at_init);
  EXPECT_FALSE(plan.subtasks[1].at_init);
  EXPECT_EQ(plan.host.persistent_bytes, 256);
  ASSERT_EQ(plan.param_preps.size(), 2u);
  EXPECT_EQ(plan.param_preps[0].action, "init_only");
  EXPECT_EQ(plan.param_preps[1].action, "unused");
  // Init-time work does not count towards the per-forward floor.
  EXPECT_DOUBLE_EQ(plan.floor_us, plan.subtasks[1].floor_us);
}

TEST(Planner, DumpAfterEachPass) {
  GraphBuilder b;
  auto x = b.input("x", {4, 8});
  b.output(b.node("mean", Op::mean_dim, {ref(x), ints({1})}, {4}));
  for (const PassInfo& pass : plan_passes()) {
    PlanOptions options;
    options.dump_after = std::string(pass.name);
    std::string dumped;
    options.dump = [&](std::string_view name, const std::string& text) {
      EXPECT_EQ(name, pass.name);
      dumped = text;
    };
    ASSERT_TRUE(make_plan(b.graph(), options).ok());
    EXPECT_FALSE(dumped.empty()) << pass.name;
  }
  PlanOptions bad;
  bad.dump_after = "nonsense";
  auto refused = make_plan(b.graph(), bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("unknown pass 'nonsense'"), std::string::npos);
}

}  // namespace
}  // namespace stitch::plan
