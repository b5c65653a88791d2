// The differential table's GPU-mode program, built without a device (label nvcc: one large nvcc
// compile): the planned rows' graph (op_table_graph) emitted and compiled into a shared library.
#include <gtest/gtest.h>

#include "codegen/program_emitter.h"
#include "op_table.h"
#include "plan/planner.h"
#include "build_program.h"

namespace stitch::codegen::testing {
namespace {

TEST(OpTableProgram, Compiles) {
  if (!locate_nvcc().ok()) GTEST_SKIP() << "no nvcc: the op table's program is not compiled";
  auto plan = plan::make_plan(op_table_graph(planned_cases()), plan::PlanOptions{});
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  auto program = emit_program(*plan);
  ASSERT_TRUE(program.ok()) << program.error().message;
  auto built = build_program(*program);
  ASSERT_TRUE(built.ok()) << built.error().message;
  EXPECT_EQ(built->failure(), "");
}

}  // namespace
}  // namespace stitch::codegen::testing
