// The differential table's GPU-mode program, built without a device (label nvcc: one large nvcc
// compile): the planned rows' graph (op_table_graph) emitted and compiled into a shared library.
#include <gtest/gtest.h>

#include <filesystem>

#include "codegen/program_emitter.h"
#include "op_table.h"
#include "plan/planner.h"
#include "util/fs.h"
#include "util/process.h"
#include "verify/compiler.h"

namespace stitch::codegen::testing {
namespace {

namespace fs = std::filesystem;

TEST(OpTableProgram, Compiles) {
  if (!locate_nvcc().ok()) GTEST_SKIP() << "no nvcc: the op table's program is not compiled";
  auto plan = plan::make_plan(op_table_graph(planned_cases()), plan::PlanOptions{});
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  auto program = emit_program(*plan);
  ASSERT_TRUE(program.ok()) << program.error().message;
  std::string pattern = (fs::temp_directory_path() / "stitch_op_table_XXXXXX").string();
  ASSERT_NE(mkdtemp(pattern.data()), nullptr);
  const fs::path dir = pattern;
  ASSERT_TRUE(write_file_atomic(dir / "program.cu", program->source).ok());
  SystemProcessRunner runner;
  NvccCompiler compiler(runner);
  BuildRequest request;
  request.sources = {dir / "program.cu"};
  request.libraries = program->libraries;
  request.output_path = dir / "program.so";
  auto built = compiler.build(request);
  ASSERT_TRUE(built.ok()) << built.error().message;
  EXPECT_TRUE(built->ok) << built->failure << "\n" << built->log.substr(0, 4000);
  std::error_code ignored;
  fs::remove_all(dir, ignored);
}

}  // namespace
}  // namespace stitch::codegen::testing
