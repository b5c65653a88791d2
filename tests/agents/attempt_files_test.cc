// attempt.json, draft.json and result.json: written and read back through their typed readers
// (write → read → equal), and a malformed file refused with an Error naming the problem.
#include "agents/attempt_files.h"

#include <gtest/gtest.h>

#include "util/fs.h"

namespace stitch::agents {
namespace {

using nlohmann::json;

TEST(AttemptFiles, IntentRoundTripsAndUnknownKindsAreRefused) {
  AttemptRecord record;
  record.number = 7;
  record.kind = AttemptKind::refine;
  record.plan_version = 2;
  record.subtask = 3;
  record.variant = {{"block", 256}};
  record.label = "refine: block 256";
  const json written = attempt_intent_to_json(record);
  auto back = attempt_intent_from_json(written);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(attempt_intent_to_json(*back), written);
  EXPECT_EQ(back->kind, AttemptKind::refine);
  EXPECT_EQ(back->status, AttemptStatus::interrupted);

  json bad = written;
  bad["kind"] = "daydream";
  auto refused = attempt_intent_from_json(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("daydream"), std::string::npos);
  EXPECT_FALSE(attempt_intent_from_json(json{{"format", "stitchcuda.attempt"}}).ok());
}

TEST(AttemptFiles, DraftRoundTripsWithPathsRelativeToTheAttempt) {
  const fs::path dir = fs::temp_directory_path() / "stitch_attempt_files_test" / "attempts" / "01";
  fs::remove_all(dir.parent_path().parent_path());
  ASSERT_TRUE(make_dirs(dir).ok());
  CodeDraft draft;
  draft.sources = {dir / "src" / "program.cu"};
  draft.headers = {dir / "src" / "helpers.cuh"};
  draft.include_dirs = {"/opt/kernels"};
  draft.libraries = {"cublasLt"};
  draft.variant = {{"cuda_graph", false}};
  draft.label = "built-in: cuda_graph=false";
  draft.tokens = 42;
  ASSERT_TRUE(write_draft(dir, draft).ok());
  auto text = read_file(dir / "draft.json");
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find("\"src/program.cu\""), std::string::npos);  // relative inside the attempt
  auto back = read_draft(dir);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->sources, draft.sources);
  EXPECT_EQ(back->headers, draft.headers);
  EXPECT_EQ(back->include_dirs, draft.include_dirs);
  EXPECT_EQ(back->libraries, draft.libraries);
  EXPECT_EQ(back->variant, draft.variant);
  EXPECT_EQ(back->label, draft.label);
  EXPECT_EQ(back->tokens, 42);

  ASSERT_TRUE(write_file_atomic(dir / "draft.json", R"({"sources": "program.cu"})").ok());
  auto refused = read_draft(dir);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("sources"), std::string::npos);
  fs::remove_all(dir.parent_path().parent_path());
}

TEST(AttemptFiles, ResultRoundTrips) {
  FinishedAttempt finished;
  finished.result.state = VerifyState::no_gpu;
  finished.result.reason = "no CUDA device";
  finished.result.suggestion_rule = "run_on_gpu";
  finished.seconds = 3.25;
  const json written = finished_attempt_to_json(finished);
  auto back = finished_attempt_from_json(written);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(finished_attempt_to_json(*back), written);
  EXPECT_EQ(back->result.state, VerifyState::no_gpu);
  EXPECT_EQ(back->seconds, 3.25);
  EXPECT_FALSE(finished_attempt_from_json(json{{"result", written["result"]}}).ok());
}

}  // namespace
}  // namespace stitch::agents
