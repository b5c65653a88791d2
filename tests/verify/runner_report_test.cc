// runner.json: what the runner's ReportBuilder writes comes back through the orchestrator's typed
// reader (runner/runner_report.h) with one status enum on both sides, and a malformed file is
// refused with an Error naming the problem.
#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "runner/report.h"
#include "runner/runner_report.h"
#include "util/fs.h"

namespace stitch {
namespace {

namespace fs = std::filesystem;

class RunnerReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // One directory per test and process: ctest runs this fixture's tests in parallel.
    dir_ = fs::temp_directory_path() /
           ("stitch_runner_report_test_" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
            std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(RunnerReportTest, WhatTheBuilderWritesTheReaderReads) {
  runner::ReportBuilder builder(dir_ / "runner.json");
  builder.set_phase("timing");
  builder.add_finding(enum_name(HackKind::side_stream), "work on stream 7", false);
  builder.add_finding(enum_name(HackKind::guard_band), "wrote past output 0");
  builder.set_status(runner::RunStatus::cuda_error, "illegal address");
  builder.update([](nlohmann::json& doc) {
    doc["nonce"] = "abc123";
    doc["device"] = {{"index", 0}, {"name", "NVIDIA H200"}};
    doc["init_ms"] = 4.5;
    doc["check_sets"].push_back({{"index", 0},
                                 {"run", 0},
                                 {"canaries_intact", false},
                                 {"poison_remaining", {0, 12}},
                                 {"launches", 3},
                                 {"gpu_ms", 0.25}});
    doc["timing"] = {{"gpu_ms", {1.0, 1.1}}, {"synced_ms", {1.2, 1.3}}, {"wall_ms", {1.5, 1.6}}};
    doc["launches"] = {{"available", true}, {"kernel_names", {{"fused", 6}}}};
  });
  ASSERT_TRUE(builder.write().ok());

  auto report = read_runner_report(dir_ / "runner.json");
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_EQ(report->status, runner::RunStatus::cuda_error);
  EXPECT_EQ(enum_name(report->status), "cuda_error");
  EXPECT_EQ(report->message, "illegal address");
  EXPECT_EQ(report->phase, "timing");
  EXPECT_EQ(report->nonce, "abc123");
  EXPECT_EQ(report->device_name, "NVIDIA H200");
  EXPECT_EQ(report->init_ms, 4.5);
  ASSERT_EQ(report->findings.size(), 2u);
  EXPECT_EQ(report->findings[0].kind, HackKind::side_stream);
  EXPECT_FALSE(report->findings[0].fatal);
  EXPECT_TRUE(report->has_fatal_finding());
  ASSERT_EQ(report->check_sets.size(), 1u);
  EXPECT_FALSE(report->canaries_intact());
  EXPECT_EQ(report->check_sets[0].poison_remaining, (std::vector<int64_t>{0, 12}));
  EXPECT_EQ(report->synced_ms, (std::vector<double>{1.2, 1.3}));
  EXPECT_EQ(report->kernel_names, (std::vector<std::pair<std::string, int>>{{"fused", 6}}));
}

TEST_F(RunnerReportTest, EveryStatusNameRoundTrips) {
  for (size_t i = 0; i < runner::kRunStatusNames.size(); ++i) {
    auto status = static_cast<runner::RunStatus>(i);
    EXPECT_EQ(enum_from_name<runner::RunStatus>(enum_name(status)), status);
  }
  EXPECT_FALSE(enum_from_name<runner::RunStatus>("exploded").has_value());
}

TEST_F(RunnerReportTest, MalformedFilesAreRefusedByName) {
  auto refused = [](const std::string& text, const std::string& expected) {
    auto report = parse_runner_report(text);
    ASSERT_FALSE(report.ok()) << text;
    EXPECT_NE(report.error().message.find(expected), std::string::npos) << report.error().message;
  };
  refused("{\"format\": ", "not valid JSON");
  refused(R"({"format": "stitchcuda.verify", "version": 1, "status": "ok"})", "format");
  refused(R"({"format": "stitchcuda.runner", "version": 1, "status": "exploded"})", "exploded");
  refused(R"({"format": "stitchcuda.runner", "version": 1, "status": "ok", "findings": {}})",
          "findings");
  refused(R"({"format": "stitchcuda.runner", "version": 1, "status": "ok", "init_ms": "soon"})",
          "malformed");
  auto missing = read_runner_report(dir_ / "absent.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("absent.json"), std::string::npos);
}

}  // namespace
}  // namespace stitch
