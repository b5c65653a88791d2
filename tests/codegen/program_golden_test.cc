// Emitted programs for the project's own tasks (the Planner's fixtures, tests/plan/data), compared
// exactly with golden/<task>.cu so a refactor shows no diff in generated code unless it means to
// (STITCH_UPDATE_GOLDEN=1 rewrites them and fails: tests/support/golden_file.h), and each built
// with nvcc into a shared library: every generated program compiles, checked without a GPU. Every
// fixture is either emitted here or asserted refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <tuple>
#include <vector>

#include "build_program.h"
#include "codegen/program_emitter.h"
#include "plan/kernel_choice.h"
#include "plan/planner.h"
#include "support/golden_file.h"
#include "support/plan_fixtures.h"
#include "util/fs.h"
#include "util/process.h"
#include "verify/build/compiler.h"

namespace stitch::codegen {
namespace {

namespace fs = std::filesystem;

// The fixtures with a golden program: every plan fixture the Planner does not refuse.
std::vector<const char*> emitted_fixtures() {
  std::vector<const char*> names;
  for (const char* name : stitch::testing::kPlanFixtures)
    if (!stitch::testing::plan_fixture_refused(name)) names.push_back(name);
  return names;
}
const std::vector<const char*> kTasks = emitted_fixtures();

Result<EmittedProgram> emit_for(const std::string& task,
                                plan::TensorMath math = plan::TensorMath::fp32) {
  STITCH_ASSIGN_OR_RETURN(ir::Graph graph, ir::load_graph(std::string(STITCH_PLAN_DATA_DIR) + "/" +
                                                          task + ".graph.json"));
  plan::PlanOptions options = stitch::testing::plan_fixture_options(task);
  options.tensor_math = math;
  STITCH_ASSIGN_OR_RETURN(plan::Plan plan, plan::make_plan(graph, options));
  return emit_program(plan);
}

class EmittedProgramTest : public ::testing::TestWithParam<const char*> {};

TEST_P(EmittedProgramTest, MatchesGoldenAndCompiles) {
  const std::string task = GetParam();
  auto program = emit_for(task);
  ASSERT_TRUE(program.ok()) << program.error().message;
  stitch::testing::expect_golden(fs::path(STITCH_CODEGEN_GOLDEN_DIR) / (task + ".cu"),
                                 program->source);

  if (!locate_nvcc().ok()) GTEST_SKIP() << "no nvcc here: the compile half is skipped";
  auto built = testing::build_program(*program);
  ASSERT_TRUE(built.ok()) << built.error().message;
  EXPECT_EQ(built->failure(), "");
  EXPECT_TRUE(fs::is_regular_file(built->library));
}

INSTANTIATE_TEST_SUITE_P(OwnTasks, EmittedProgramTest, ::testing::ValuesIn(kTasks),
                         [](const auto& info) { return std::string(info.param); });

// Portability (issue 13 item 9): every golden program, built above for the H200's sm_90a, also
// builds for an A100 (sm_80: no wgmma, no TMA) and a B200 (sm_100a), so a user of either gets a
// program that compiles.
class PortableProgramTest : public ::testing::TestWithParam<std::tuple<const char*, const char*>> {
};

TEST_P(PortableProgramTest, CompilesForOtherArchitectures) {
  const auto [task, arch] = GetParam();
  auto program = emit_for(task);
  ASSERT_TRUE(program.ok()) << program.error().message;
  if (!locate_nvcc().ok()) GTEST_SKIP() << "no nvcc here";
  auto built = testing::build_program(*program, arch);
  ASSERT_TRUE(built.ok()) << built.error().message;
  EXPECT_EQ(built->failure(), "") << arch;
}

INSTANTIATE_TEST_SUITE_P(Architectures, PortableProgramTest,
                         ::testing::Combine(::testing::ValuesIn(kTasks),
                                            ::testing::Values("sm_80", "sm_100a")),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param)) + "_" +
                                  std::get<1>(info.param);
                         });

// The tf32 / bf16 tracks (issue 13 item 6): every GEMM an LtMatmul with that tensor-core math,
// none split; the program compiles. plan_gemm_tf32x3 is the fixture whose GEMM fp32 splits.
class TensorMathEmittedProgramTest : public ::testing::TestWithParam<plan::TensorMath> {};

TEST_P(TensorMathEmittedProgramTest, GemmsUseTheTrackMathAndCompile) {
  const plan::TensorMath math = GetParam();
  auto program = emit_for("plan_gemm_tf32x3", math);
  ASSERT_TRUE(program.ok()) << program.error().message;
  const std::string compute = math == plan::TensorMath::tf32 ? "LtMatmul::Compute::fast_tf32"
                                                             : "LtMatmul::Compute::fast_bf16";
  EXPECT_NE(program->source.find(compute), std::string::npos) << program->source;
  EXPECT_EQ(program->source.find("Tf32x3Matmul"), std::string::npos);
  EXPECT_EQ(program->source.find("matmul_tf32x3.cuh"), std::string::npos);

  if (!locate_nvcc().ok()) GTEST_SKIP() << "no nvcc here: the compile half is skipped";
  auto built = testing::build_program(*program);
  ASSERT_TRUE(built.ok()) << built.error().message;
  EXPECT_EQ(built->failure(), "");
}

INSTANTIATE_TEST_SUITE_P(Tracks, TensorMathEmittedProgramTest,
                         ::testing::Values(plan::TensorMath::tf32, plan::TensorMath::bf16),
                         [](const auto& info) {
                           return std::string(
                               plan::tensor_math_name(static_cast<int64_t>(info.param)));
                         });

// Convolutions on the tracks (issue 13 item 6): strict-FP32 cuDNN engines on fp32, TF32 tensor
// cores on tf32 and on bf16 (cuDNN has no BF16 math for FP32 data); the program links cuDNN and,
// off the fp32 track, compiles.
class TensorMathConvProgramTest : public ::testing::TestWithParam<plan::TensorMath> {};

TEST_P(TensorMathConvProgramTest, ConvolutionsUseTheTrackMath) {
  const plan::TensorMath math = GetParam();
  auto program = emit_for("plan_conv_residual", math);
  ASSERT_TRUE(program.ok()) << program.error().message;
  const bool strict = math == plan::TensorMath::fp32;
  EXPECT_EQ(program->source.find("ConvMath::strict_fp32") != std::string::npos, strict);
  EXPECT_EQ(program->source.find("ConvMath::tf32") != std::string::npos, !strict);
  EXPECT_NE(program->source.find("#include \"kernels/conv.cuh\""), std::string::npos);
  EXPECT_EQ(program->libraries, std::vector<std::string>{"cudnn"});
  if (strict) return;  // the fp32 program is the golden one, compiled above
  if (!locate_nvcc().ok()) GTEST_SKIP() << "no nvcc here: the compile half is skipped";
  auto built = testing::build_program(*program);
  ASSERT_TRUE(built.ok()) << built.error().message;
  EXPECT_EQ(built->failure(), "");
}

INSTANTIATE_TEST_SUITE_P(Tracks, TensorMathConvProgramTest,
                         ::testing::Values(plan::TensorMath::fp32, plan::TensorMath::tf32,
                                           plan::TensorMath::bf16),
                         [](const auto& info) {
                           return std::string(
                               plan::tensor_math_name(static_cast<int64_t>(info.param)));
                         });

// The implicit GEMM on the tensor-core tracks: one TF32 product (ConvIgemmTf32), never the
// fp32 track's 3xTF32 class, with cuDNN's TF32 engines as the alternative timed against it; the
// program compiles for the H200's sm_90a and an A100's sm_80 (the mma.sync kernel there).
// plan_conv_pool_channels_last's second convolution takes the kernel on these tracks.
class TensorMathKernelConvProgramTest : public ::testing::TestWithParam<plan::TensorMath> {};

TEST_P(TensorMathKernelConvProgramTest, TheImplicitGemmMakesOneTf32Product) {
  auto program = emit_for("plan_conv_pool_channels_last", GetParam());
  ASSERT_TRUE(program.ok()) << program.error().message;
  EXPECT_NE(program->source.find("ConvIgemmTf32 "), std::string::npos) << program->source;
  EXPECT_EQ(program->source.find("ConvIgemmTf32x3"), std::string::npos);
  EXPECT_NE(program->source.find("time_kernel_against_cudnn("), std::string::npos);
  EXPECT_NE(program->source.find("ConvMath::tf32"), std::string::npos);
  EXPECT_EQ(program->source.find("ConvMath::strict_fp32"), std::string::npos);
  if (!locate_nvcc().ok()) GTEST_SKIP() << "no nvcc here: the compile half is skipped";
  for (const char* arch : {"sm_90a", "sm_80"}) {
    auto built = testing::build_program(*program, arch);
    ASSERT_TRUE(built.ok()) << built.error().message;
    EXPECT_EQ(built->failure(), "") << arch;
  }
}

// The direct kernel on the tensor-core tracks: one TF32 product (ConvDirectTf32), never the
// fp32 track's FMA class, timed against cuDNN's TF32 engines; compiles for sm_90a and sm_80.
// plan_conv_timed's 8 -> 64 channel convolution takes it (K 72: the implicit GEMM's K tiles
// mostly empty).
TEST_P(TensorMathKernelConvProgramTest, TheDirectKernelMakesOneTf32Product) {
  auto program = emit_for("plan_conv_timed", GetParam());
  ASSERT_TRUE(program.ok()) << program.error().message;
  EXPECT_NE(program->source.find("ConvDirectTf32 "), std::string::npos) << program->source;
  EXPECT_EQ(program->source.find("ConvDirect "), std::string::npos);
  EXPECT_NE(program->source.find("time_kernel_against_cudnn("), std::string::npos);
  EXPECT_NE(program->source.find("ConvMath::tf32"), std::string::npos);
  auto fp32 = emit_for("plan_conv_timed", plan::TensorMath::fp32);
  ASSERT_TRUE(fp32.ok()) << fp32.error().message;
  EXPECT_NE(fp32->source.find("ConvDirect "), std::string::npos) << fp32->source;
  EXPECT_EQ(fp32->source.find("ConvDirectTf32"), std::string::npos);
  if (!locate_nvcc().ok()) GTEST_SKIP() << "no nvcc here: the compile half is skipped";
  for (const char* arch : {"sm_90a", "sm_80"}) {
    auto built = testing::build_program(*program, arch);
    ASSERT_TRUE(built.ok()) << built.error().message;
    EXPECT_EQ(built->failure(), "") << arch;
  }
}

INSTANTIATE_TEST_SUITE_P(Tracks, TensorMathKernelConvProgramTest,
                         ::testing::Values(plan::TensorMath::tf32, plan::TensorMath::bf16),
                         [](const auto& info) {
                           return std::string(
                               plan::tensor_math_name(static_cast<int64_t>(info.param)));
                         });

// On the tf32 track plan_conv_channels_last's convolutions are timed against cuDNN's TF32 engines
// and keep their channels-last link (plan/layout.h): cuDNN is told so (the first writes y NHWC,
// the second reads x so), and its bias + ReLU pass after the first takes the channels-last order.
TEST(TimedChannelsLastProgram, CudnnReadsAndWritesTheRegionsLayout) {
  auto program = emit_for("plan_conv_channels_last", plan::TensorMath::tf32);
  ASSERT_TRUE(program.ok()) << program.error().message;
  const std::string& source = program->source;
  EXPECT_NE(source.find("set_input_channels_last(true)"), std::string::npos) << source;
  EXPECT_NE(source.find("shape.y_channels_last = true;"), std::string::npos) << source;
  EXPECT_NE(source.find("shape.x_channels_last = true;"), std::string::npos) << source;
  EXPECT_NE(source.find("MatmulEpilogue::bias_relu, 8, 128, 3136, 0, true, stream)"),
            std::string::npos)
      << source;
  EXPECT_NE(source.find("MatmulEpilogue::bias_relu, 8, 128, 3136, 0, false, stream)"),
            std::string::npos)
      << source;
  if (!locate_nvcc().ok()) GTEST_SKIP() << "no nvcc here: the compile half is skipped";
  auto built = testing::build_program(*program, "sm_90a");
  ASSERT_TRUE(built.ok()) << built.error().message;
  EXPECT_EQ(built->failure(), "");
}

// Recurrent layers on the tracks (issue 16 item 2): strict FP32 (CUDNN_FMA_MATH) on fp32, TF32
// tensor cores on tf32 and on bf16 (float32 data either way); the program includes rnn.cuh, links
// cuDNN, loads the weights once in run_init_subtasks and, off the fp32 track, compiles.
class TensorMathRecurrentProgramTest : public ::testing::TestWithParam<plan::TensorMath> {};

TEST_P(TensorMathRecurrentProgramTest, RecurrentLayersUseTheTrackMath) {
  const plan::TensorMath math = GetParam();
  auto program = emit_for("plan_rnn_tanh_bidirectional", math);
  ASSERT_TRUE(program.ok()) << program.error().message;
  const bool strict = math == plan::TensorMath::fp32;
  EXPECT_EQ(program->source.find("RnnMath::strict_fp32") != std::string::npos, strict);
  EXPECT_EQ(program->source.find("RnnMath::tf32") != std::string::npos, !strict);
  EXPECT_NE(program->source.find("#include \"kernels/rnn.cuh\""), std::string::npos);
  const size_t init_subtasks = program->source.find("int Program::run_init_subtasks");
  ASSERT_NE(init_subtasks, std::string::npos);
  EXPECT_GT(program->source.find("rnn0.load_weights("), init_subtasks);
  EXPECT_NE(program->source.find("rnn0.run("), std::string::npos);
  EXPECT_NE(std::find(program->libraries.begin(), program->libraries.end(), "cudnn"),
            program->libraries.end());
  if (strict) return;  // the fp32 program is the golden one, compiled above
  if (!locate_nvcc().ok()) GTEST_SKIP() << "no nvcc here: the compile half is skipped";
  auto built = testing::build_program(*program);
  ASSERT_TRUE(built.ok()) << built.error().message;
  EXPECT_EQ(built->failure(), "");
}

INSTANTIATE_TEST_SUITE_P(Tracks, TensorMathRecurrentProgramTest,
                         ::testing::Values(plan::TensorMath::fp32, plan::TensorMath::tf32,
                                           plan::TensorMath::bf16),
                         [](const auto& info) {
                           return std::string(
                               plan::tensor_math_name(static_cast<int64_t>(info.param)));
                         });

// The fused attention per track (issue 16 item 1): its products on the track's tensor cores on
// tf32 / bf16 (kernels/attention_mma.cuh's AttentionMath::tf32 / bf16), and on fp32 without TF32
// (--strict-fp32-gemm) the FP32 FMA kernel (kernels/attention.cuh alone); the fp32 default is the
// golden program (kAttentionFp32SplitTf32x3). Each program compiles for the H200's sm_90a, and the
// tensor-core ones for an A100's sm_80 and a B200's sm_100a too (mma.sync everywhere).
class AttentionMathProgramTest
    : public ::testing::TestWithParam<std::tuple<plan::TensorMath, bool>> {};

TEST_P(AttentionMathProgramTest, AttentionUsesTheTrackMathAndCompiles) {
  const auto [math, allow_tf32x3] = GetParam();
  auto graph =
      ir::load_graph(std::string(STITCH_PLAN_DATA_DIR) + "/plan_attention_causal.graph.json");
  ASSERT_TRUE(graph.ok()) << graph.error().message;
  plan::PlanOptions options = stitch::testing::plan_fixture_options("plan_attention_causal");
  options.tensor_math = math;
  options.allow_tf32x3 = allow_tf32x3;
  auto plan = plan::make_plan(*graph, options);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  auto program = emit_program(*plan);
  ASSERT_TRUE(program.ok()) << program.error().message;
  const bool fma = math == plan::TensorMath::fp32;
  const std::string variant =
      "AttentionMath::" + std::string(plan::tensor_math_name(static_cast<int64_t>(math)));
  EXPECT_EQ(program->source.find("launch_attention<64>(") != std::string::npos, fma);
  EXPECT_EQ(program->source.find("kernels/attention_mma.cuh") != std::string::npos, !fma);
  if (!fma) {
    EXPECT_NE(program->source.find("launch_attention_math<64>(" + variant + ","), std::string::npos)
        << program->source;
    EXPECT_NE(program->source.find("(" + variant + ")"), std::string::npos)
        << "prepare_attention_math for the same variant";
  }

  if (!locate_nvcc().ok()) GTEST_SKIP() << "no nvcc here: the compile half is skipped";
  const std::vector<std::string> arches =
      fma ? std::vector<std::string>{"sm_90a"}
          : std::vector<std::string>{"sm_90a", "sm_80", "sm_100a"};
  for (const std::string& arch : arches) {
    auto built = testing::build_program(*program, arch);
    ASSERT_TRUE(built.ok()) << arch << ": " << built.error().message;
    EXPECT_EQ(built->failure(), "") << arch;
  }
}

INSTANTIATE_TEST_SUITE_P(Tracks, AttentionMathProgramTest,
                         ::testing::Values(std::make_tuple(plan::TensorMath::tf32, true),
                                           std::make_tuple(plan::TensorMath::bf16, true),
                                           std::make_tuple(plan::TensorMath::fp32, false)),
                         [](const auto& info) {
                           const plan::TensorMath math = std::get<0>(info.param);
                           return std::string(plan::tensor_math_name(static_cast<int64_t>(math))) +
                                  (std::get<1>(info.param) ? "" : "_strict");
                         });

// The one-kernel 3xTF32 GEMM (tunable tf32x3_kernel, kernels/gemm_tf32x3.cuh) in place of the
// split copies: a GemmTf32x3 member (nothing to tune on scratch), its header alone included, the
// parameter B handed over at init; the program matches its golden and builds for the H200's
// sm_90a, an A100's sm_80 and a B200's sm_100a (issue 13, items 8 and 9): the wgmma kernel's body
// (some 230 registers by ptxas, no spills) only in the sm_90a build, the mma.sync kernels' only
// elsewhere.
TEST(EmitProgram, Tf32x3KernelGemmMatchesGoldenAndBuildsEverywhere) {
  auto graph = ir::load_graph(std::string(STITCH_PLAN_DATA_DIR) + "/plan_gemm_tf32x3.graph.json");
  ASSERT_TRUE(graph.ok()) << graph.error().message;
  auto plan = plan::make_plan(*graph, plan::PlanOptions{});
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  ASSERT_EQ(plan->subtasks.size(), 1u);
  ASSERT_EQ(plan->subtasks[0].tunables.at("split_tf32x3"), 1);
  plan->subtasks[0].tunables["tf32x3_kernel"] = 1;
  auto program = emit_program(*plan);
  ASSERT_TRUE(program.ok()) << program.error().message;
  stitch::testing::expect_golden(fs::path(STITCH_CODEGEN_GOLDEN_DIR) / "plan_gemm_tf32x3_kernel.cu",
                                 program->source);
  EXPECT_NE(program->source.find("GemmTf32x3 mm0;"), std::string::npos);
  EXPECT_NE(program->source.find("kernels/gemm_tf32x3.cuh"), std::string::npos);
  EXPECT_EQ(program->source.find("matmul_tf32x3.cuh"), std::string::npos);
  EXPECT_EQ(program->source.find("tune_on_scratch"), std::string::npos);
  EXPECT_NE(program->source.find("prepare_b("), std::string::npos);

  if (!locate_nvcc().ok()) GTEST_SKIP() << "no nvcc here: the compile half is skipped";
  for (const std::string arch : {"sm_90a", "sm_80", "sm_100a"}) {
    auto built = testing::build_program(*program, arch);
    ASSERT_TRUE(built.ok()) << arch << ": " << built.error().message;
    EXPECT_EQ(built->failure(), "") << arch;
    int wgmma_registers = -1, mma_sync_registers = -1;
    for (const PtxasKernelReport& kernel : built->build.kernels) {
      if (kernel.name.find("gemm_tf32x3_wgmma_kernel") != std::string::npos) {
        wgmma_registers = std::max(wgmma_registers, kernel.registers);
        EXPECT_EQ(kernel.spill_store_bytes, 0) << arch << ": the wgmma kernel spills";
      } else if (kernel.name.find("gemm_tf32x3_kernel") != std::string::npos)
        mma_sync_registers = std::max(mma_sync_registers, kernel.registers);
    }
    const bool hopper = arch == "sm_90a";
    EXPECT_EQ(wgmma_registers > 64, hopper) << arch << ": wgmma kernel " << wgmma_registers;
    EXPECT_EQ(mma_sync_registers > 64, !hopper) << arch << ": mma.sync " << mma_sync_registers;
  }
}

// A new fixture gets a golden program (kTasks) or is asserted refused (below).
TEST(EmitProgram, EveryFixtureIsEmittedOrRefused) {
  std::set<std::string> fixtures, covered(std::begin(kTasks), std::end(kTasks));
  covered.insert("plan_scan_refused");
  covered.insert("plan_rnn_dropout_refused");
  // Refused alone too; hybrid_subtask_test emits it with an LLM fragment for its logcumsumexp.
  covered.insert("hybrid_logcumsumexp");
  for (const auto& entry : fs::directory_iterator(STITCH_PLAN_DATA_DIR)) {
    const std::string name = entry.path().filename().string();
    const std::string suffix = ".graph.json";
    if (name.size() > suffix.size() && name.ends_with(suffix))
      fixtures.insert(name.substr(0, name.size() - suffix.size()));
  }
  EXPECT_EQ(fixtures, covered);
}

TEST(EmitProgram, TheScanTaskIsRefusedBeforeEmitting) {
  auto program = emit_for("plan_scan_refused");
  ASSERT_FALSE(program.ok());
  EXPECT_NE(program.error().message.find("logcumsumexp"), std::string::npos)
      << program.error().message;
}

}  // namespace
}  // namespace stitch::codegen
