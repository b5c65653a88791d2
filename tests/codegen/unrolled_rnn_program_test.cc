// The program for a 256-step Python-loop RNN (KernelBench level 3's VanillaRNNHidden shape, built
// by tests/support/unrolled_rnn_graph.h): pass "recurrences" keeps it a handful of subtasks, so the
// source stays small and nvcc builds it in seconds. Before the pass the plan had 1280 subtasks and
// a 1.1 MB program.cu that nvcc took minutes to build.
#include <gtest/gtest.h>

#include <chrono>

#include "build_program.h"
#include "codegen/program_emitter.h"
#include "plan/planner.h"
#include "support/unrolled_rnn_graph.h"
#include "verify/build/compiler.h"

namespace stitch::codegen {
namespace {

Result<EmittedProgram> emit_unrolled_rnn() {
  STITCH_ASSIGN_OR_RETURN(
      plan::Plan plan,
      plan::make_plan(stitch::testing::unrolled_rnn_graph(stitch::testing::UnrolledRnn{}),
                      plan::PlanOptions{}));
  return emit_program(plan);
}

TEST(UnrolledRnnProgramTest, SourceStaysSmall) {
  auto program = emit_unrolled_rnn();
  ASSERT_TRUE(program.ok()) << program.error().message;
  EXPECT_LT(program->source.size(), 16u * 1024) << "the 256 steps are emitted one by one again";
  EXPECT_NE(program->source.find("CudnnRnn"), std::string::npos);
}

TEST(UnrolledRnnProgramTest, CompilesInSeconds) {
  auto program = emit_unrolled_rnn();
  ASSERT_TRUE(program.ok()) << program.error().message;
  if (!locate_nvcc().ok()) GTEST_SKIP() << "no nvcc here";
  const auto start = std::chrono::steady_clock::now();
  auto built = testing::build_program(*program);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(built.ok()) << built.error().message;
  EXPECT_EQ(built->failure(), "");
  EXPECT_LT(seconds, 240) << "nvcc took " << seconds << " s";  // loose: a shared 2-core machine
}

}  // namespace
}  // namespace stitch::codegen
