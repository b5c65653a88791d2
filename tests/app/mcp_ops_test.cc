// read_run_overview (read_run_state's answer): state.json and each attempt's verify.json through
// their typed readers, summary.json as written, attempts in order (one without a verify.json
// listed with nulls, a corrupt one with the reader's complaint); not a run directory: bad_input.
#include "app/mcp_ops.h"

#include <gtest/gtest.h>

#include "agents/run_state.h"
#include "temp_dir.h"
#include "util/fs.h"
#include "verify/verify_report.h"

namespace stitch::app {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

TEST(ReadRunOverview, ReadsStateSummaryAndAttempts) {
  testing::TempDir dir("mcp_ops");
  const fs::path run = dir.path() / "run";
  ASSERT_TRUE(write_json_file(run / "summary.json", {{"status", "complete"}, {"task", "t"}}).ok());
  ASSERT_TRUE(agents::save_run_state(run, agents::RunState{}).ok());
  VerifyReport report;
  report.outcome = Outcome::wrong;
  report.reason = "output 0 differs";
  ASSERT_TRUE(
      write_json_file(run / "attempts" / "02" / "verify.json", verify_report_to_json(report)).ok());
  ASSERT_TRUE(make_dirs(run / "attempts" / "01").ok());
  ASSERT_TRUE(write_file_atomic(run / "attempts" / "03" / "verify.json", "{}").ok());

  auto overview = read_run_overview(run);
  ASSERT_TRUE(overview.ok()) << overview.error().message;
  EXPECT_EQ((*overview)["summary"]["status"], "complete");
  EXPECT_TRUE((*overview)["state"].is_object());
  const json& attempts = (*overview)["attempts"];
  ASSERT_EQ(attempts.size(), 3u);
  EXPECT_TRUE(attempts[0]["outcome"].is_null());
  EXPECT_EQ(attempts[1]["outcome"], "wrong");
  EXPECT_EQ(attempts[1]["state"], "verified");
  EXPECT_EQ(attempts[1]["reason"], "output 0 differs");
  EXPECT_TRUE(attempts[2]["outcome"].is_null());
  EXPECT_FALSE(attempts[2]["reason"].get<std::string>().empty());
}

TEST(ReadRunOverview, ACorruptStateIsAnErrorAndNotARunIsBadInput) {
  testing::TempDir dir("mcp_ops_bad");
  auto missing = read_run_overview(dir.path() / "nowhere");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().kind, ErrorKind::bad_input);
  const fs::path run = dir.path() / "run";
  ASSERT_TRUE(write_file_atomic(run / "graph.json", "{}").ok());
  auto bare = read_run_overview(run);  // a bare capture directory reads, with nulls
  ASSERT_TRUE(bare.ok()) << bare.error().message;
  EXPECT_TRUE((*bare)["summary"].is_null());
  EXPECT_TRUE((*bare)["attempts"].empty());
  ASSERT_TRUE(write_file_atomic(run / "state.json", "{\"version\": 99}").ok());
  EXPECT_FALSE(read_run_overview(run).ok());
}

}  // namespace
}  // namespace stitch::app
