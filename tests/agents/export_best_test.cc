// export_best_attempt: a finished run's best attempt (draft.json, verify.json naming the built
// library) becomes best/ with its adapters; a run without a passing attempt is refused.
#include "agents/export_best.h"

#include <gtest/gtest.h>

#include "../adapters/fake_capture.h"
#include "util/fs.h"
#include "verify/verify_report.h"

namespace stitch::agents {
namespace {

namespace testing_fakes = stitch::adapters::testing;
using nlohmann::json;

TEST(ExportBestTest, TheBestAttemptBecomesBestWithAdapters) {
  testing_fakes::TempDir temp;
  const fs::path run = temp.path() / "run";
  ASSERT_TRUE(testing_fakes::write_fake_capture(run).ok());
  const fs::path attempt = run / "attempts/02";
  auto source = testing_fakes::write_program_tree(attempt);
  ASSERT_TRUE(source.ok()) << source.error().message;
  const fs::path library = temp.path() / "cache/program.so";
  ASSERT_TRUE(make_dirs(library.parent_path()).ok());
  auto built = testing_fakes::build_fake_program(library);
  if (!built.ok()) GTEST_SKIP() << "no C compiler for the fake program: " << built.error().message;
  ASSERT_TRUE(write_file_atomic(attempt / "draft.json",
                                json{{"sources", {source->lexically_relative(attempt).string()}},
                                     {"libraries", json::array()},
                                     {"variant", {{"cuda_graph", false}}},
                                     {"label", "built-in: cuda_graph=false"}}
                                    .dump())
                  .ok());
  VerifyReport verified;
  verified.outcome = Outcome::passed;
  verified.arch = "sm_90";
  verified.track = Track::fp32;
  verified.built = true;
  verified.library_path = library.string();
  verified.speedups = {{"eager", 0, 0, 1.7}};
  ASSERT_TRUE(write_verify_report(attempt / "verify.json", verified).ok());
  RunState state;
  AttemptRecord record;
  record.number = 2;
  record.dir = "attempts/02";
  record.status = AttemptStatus::finished;
  record.label = "built-in: cuda_graph=false";
  record.variant = {{"cuda_graph", false}};
  record.result = AttemptResult{};
  record.result->outcome = Outcome::passed;
  record.result->timing = Timing{1, 1, 1};
  state.attempts.push_back(record);

  SystemProcessRunner runner;
  auto none = export_best_attempt(run, state, testing_fakes::repo_include_dirs(), false, runner);
  EXPECT_FALSE(none.ok());  // no best attempt yet

  state.best_attempt = 2;
  auto exported =
      export_best_attempt(run, state, testing_fakes::repo_include_dirs(), false, runner);
  ASSERT_TRUE(exported.ok()) << exported.error().message;
  EXPECT_EQ(exported->dir, run / "best");
  EXPECT_NE(exported->note.find("attempt 02"), std::string::npos) << exported->note;
  for (const char* file : {"program.cu", "program.so", "model_new.py", "stitch_extension.cpp",
                           "main.cc", "manifest.json", "README.md", "graph.json"})
    EXPECT_TRUE(fs::exists(run / "best" / file)) << file;
  auto manifest = read_file(run / "best/manifest.json");
  ASSERT_TRUE(manifest.ok());
  json doc = json::parse(*manifest);
  EXPECT_EQ(doc.dump().find("\"attempt\":2") != std::string::npos, true) << doc.dump();
  EXPECT_NE(doc.dump().find("cuda_graph=false"), std::string::npos);
}

}  // namespace
}  // namespace stitch::agents
