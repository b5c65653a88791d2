// The PyTorch adapter end to end on the CPU: exports the fake capture with the fake host-memory
// program, then runs test_model_new.py (pytest, with the checkout's Python) against best/. The
// extension is compiled once for the whole Python run (about a minute on two cores).
#include <gtest/gtest.h>

#include "adapters/export.h"
#include "fake_capture.h"
#include "ir/ir.h"

namespace stitch::adapters {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// An export of the fake capture at run_dir/best; `random_input` adds a random graph input.
void export_fake(const fs::path& run_dir, const fs::path& library, bool random_input) {
  ASSERT_TRUE(testing::write_fake_capture(run_dir).ok());
  if (random_input) {
    auto graph = ir::load_graph((run_dir / "graph.json").string());
    ASSERT_TRUE(graph.ok()) << graph.error().message;
    ir::Input mask;
    mask.name = "dropout_mask";
    mask.kind = ir::InputKind::random;
    mask.type.shape = {4, 8};
    mask.type.strides = {8, 1};
    mask.distribution = "bernoulli:0.5";
    mask.source_op = "aten.native_dropout.default";
    graph->inputs.push_back(mask);
    ASSERT_TRUE(ir::save_graph(*graph, (run_dir / "graph.json").string()).ok());
  }
  auto source = testing::write_program_tree(run_dir / "attempt");
  ASSERT_TRUE(source.ok()) << source.error().message;
  ExportRequest request;
  request.capture_dir = run_dir;
  request.sources = {*source};
  request.include_dirs = testing::repo_include_dirs();
  request.library = library;
  request.out_dir = run_dir / "best";
  request.build_main = false;
  SystemProcessRunner runner;
  auto report = export_best(request, runner);
  ASSERT_TRUE(report.ok()) << report.error().message;
}

TEST(ModelNew, RunsTheFakeProgramFromPyTorch) {
  SystemProcessRunner runner;
  ProcessSpec probe;
  probe.argv = {STITCH_PYTHON, "-c", "import torch, pytest"};
  probe.timeout_s = 120;
  auto probed = runner.run(probe);
  if (!probed.ok() || !probed->succeeded())
    GTEST_SKIP() << STITCH_PYTHON << " cannot import torch and pytest: the PyTorch adapter is not "
                 << "checked";

  TempDir temp;
  const fs::path library = temp.path() / "fake_program.so";
  auto built = testing::build_fake_program(library);
  if (!built.ok()) GTEST_SKIP() << "no C compiler for the fake program: " << built.error().message;
  export_fake(temp.path() / "run", library, false);
  export_fake(temp.path() / "run_random", library, true);
  if (HasFatalFailure()) return;

  ProcessSpec spec;
  spec.argv = {STITCH_PYTHON,
               "-m",
               "pytest",
               "-q",
               "-rs",
               "-p",
               "no:cacheprovider",
               (testing::kSourceDir / "tests/adapters/test_model_new.py").string()};
  spec.cwd = temp.path();
  spec.env["STITCH_TEST_BEST"] = (temp.path() / "run" / "best").string();
  spec.env["STITCH_TEST_BEST_RANDOM"] = (temp.path() / "run_random" / "best").string();
  spec.env["STITCH_TEST_TASK"] = (testing::kData / "fake_task.py").string();
  spec.env["STITCH_TEST_WEIGHTS"] = (temp.path() / "run" / "weights.safetensors").string();
  spec.env["PYTHONPATH"] = (testing::kSourceDir / "python").string();
  spec.env_remove = {"STITCH_BEST_DIR"};
  spec.timeout_s = 900;
  auto result = runner.run(spec);
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_TRUE(result->succeeded()) << result->describe() << "\n"
                                   << result->stdout_text << result->stderr_text;
  std::printf("test_model_new.py: %.1f s\n%s", result->wall_s, result->stdout_text.c_str());
}

}  // namespace
}  // namespace stitch::adapters
