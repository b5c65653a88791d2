// verify.json and feedback.json: every field the writers put in the file comes back through the
// typed readers (write → read → write gives the same document, and the typed fields are equal),
// and the readers refuse a malformed file with an Error that names the problem.
#include <cmath>
#include <filesystem>

#include <gtest/gtest.h>

#include "util/fs.h"
#include "verify/feedback.h"
#include "verify/verify_report.h"

namespace stitch {
namespace {

using nlohmann::json;

VerifyReport full_report() {
  VerifyReport r;
  r.state = VerifyState::verified;
  r.outcome = Outcome::wrong;
  r.reason = "output 0 mismatches";
  r.summary = {"wrong (fp32 track, H200, sm_90)", "build: ok"};
  r.track = Track::tf32;
  r.rel_err_norm_max = 1e-3;
  r.arch = "sm_90a";
  r.gpu_name = "NVIDIA H200";
  r.capture_dir = "/runs/x";
  r.sources = {"src/program.cu"};
  r.built = true;
  r.build_cache_hit = true;
  r.build_seconds = 12.5;
  r.library_path = "/cache/lib.so";
  r.build_command = {"nvcc", "-shared", "-lcublasLt"};
  r.diagnostics = {{"program.cu", 42, "warning", "unused variable", "  int x;"}};
  PtxasKernelReport kernel;
  kernel.name = "fused";
  kernel.arch = "sm_90a";
  kernel.registers = 96;
  kernel.barriers = 1;
  kernel.spill_store_bytes = 8;
  kernel.spill_load_bytes = 4;
  kernel.stack_frame_bytes = 16;
  kernel.shared_bytes = 4096;
  r.kernels = {kernel};
  r.findings = {{"runner", {HackKind::side_stream, "joined side stream", false}}};
  r.runner_ran = true;
  r.runner_status = "ok";
  r.runner_reason = "";
  r.init_ms = 3.5;
  r.launches_per_forward = 4;
  r.kernel_launches = {{"fused", 100}, {"gemm", 50}};
  r.deterministic = false;
  r.timing = TimingStats{1.0, 0.9, 1.2, 0.8, 50};
  r.synced_timing = TimingStats{1.1, 1.0, 1.3, 0.9, 50};
  r.wall_timing = TimingStats{1.5, 1.4, 1.7, 1.3, 50};
  r.timing_basis = TimingBasis::stream;
  r.timing_basis_detail = "gap is the synchronize cost";
  r.compared = true;
  CheckedOutput output;
  output.where = "check set 0";
  output.check = {0, false, HUGE_VAL, 17, 0.5, 3, 17, 1};
  output.elements = 1024;
  output.message = "output 0: 3 mismatches";
  output.degenerate_reference = true;
  output.exact_reference_elements = 1000;
  r.output_checks = {output};
  r.comparison_messages = {"output 0 differs"};
  r.degenerate_reasons = {"all zeros"};
  r.baselines = {{"compile", std::nullopt, 0, "inductor failed"},
                 {"eager", TimingStats{2.0, 1.9, 2.1, 1.8, 20}, 0.5, ""}};
  r.baseline_error = "";
  r.baselines_from_cache = true;
  r.speedups = {{"eager", 2.0, 1.0, 2.0}};
  r.steps = {{"build", 12.5, "ok", ""}, {"runner", 2.0, "failed", "cuda_error"}};
  return r;
}

TEST(VerifyReportJson, EveryFieldRoundTrips) {
  const VerifyReport report = full_report();
  const json written = verify_report_to_json(report);
  auto back = verify_report_from_json(written);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(verify_report_to_json(*back), written);
  EXPECT_EQ(back->state, VerifyState::verified);
  EXPECT_EQ(back->outcome, Outcome::wrong);
  EXPECT_EQ(back->track, Track::tf32);
  EXPECT_EQ(back->timing_basis, TimingBasis::stream);
  EXPECT_EQ(back->build_command, report.build_command);
  EXPECT_EQ(back->kernels.at(0).spill_store_bytes, 8);
  EXPECT_EQ(back->findings.at(0).finding.kind, HackKind::side_stream);
  EXPECT_FALSE(back->findings.at(0).finding.fatal);
  EXPECT_EQ(back->kernel_launches, report.kernel_launches);
  EXPECT_EQ(back->launches_per_forward, 4);
  EXPECT_TRUE(std::isinf(back->output_checks.at(0).check.max_abs_error));  // written as null
  EXPECT_EQ(back->output_checks.at(0).exact_reference_elements, 1000);
  ASSERT_EQ(back->baselines.size(), 2u);
  EXPECT_EQ(back->baselines[0].error, "inductor failed");
  EXPECT_EQ(back->baselines[1].stats->median_ms, 2.0);
  EXPECT_EQ(back->baselines[1].compile_s, 0.5);
  ASSERT_EQ(back->speedups.size(), 1u);  // both times restored from the baseline and the basis
  EXPECT_EQ(back->speedups[0].baseline_ms, 2.0);
  EXPECT_EQ(back->speedups[0].candidate_ms, 1.0);
  EXPECT_EQ(back->steps.at(1).detail, "cuda_error");
}

TEST(VerifyReportJson, StatesWithoutAVerdictRoundTrip) {
  for (VerifyState state : {VerifyState::no_gpu, VerifyState::infrastructure_error}) {
    VerifyReport report;
    report.state = state;
    report.reason = "why";
    auto back = verify_report_from_json(verify_report_to_json(report));
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(back->state, state);
    EXPECT_FALSE(back->outcome.has_value());
    EXPECT_FALSE(back->timing.has_value());
  }
}

TEST(VerifyReportJson, MalformedDocumentsAreRefusedByName) {
  const json good = verify_report_to_json(full_report());
  auto refused = [&](auto edit, const std::string& expected) {
    json doc = good;
    edit(doc);
    auto read = verify_report_from_json(doc);
    ASSERT_FALSE(read.ok()) << "accepted: " << expected;
    EXPECT_NE(read.error().message.find(expected), std::string::npos) << read.error().message;
    EXPECT_EQ(read.error().kind, ErrorKind::bad_input);
  };
  refused([](json& d) { d["format"] = "stitchcuda.feedback"; }, "not a verify.json");
  refused([](json& d) { d["version"] = 2; }, "version 2");
  refused([](json& d) { d["state"] = "half_verified"; }, "half_verified");
  refused([](json& d) { d["outcome"] = "great"; }, "great");
  refused([](json& d) { d["build"]["ok"] = "yes"; }, "ok");
  refused([](json& d) { d["findings"][0]["kind"] = "teleports"; }, "findings[0]");
  refused([](json& d) { d["timing"]["speedup_basis"] = "vibes"; }, "vibes");
  refused([](json& d) { d["outputs"] = "none"; }, "outputs: not an array");
}

TEST(VerifyReportJson, FileReaderNamesTheFile) {
  const fs::path dir = fs::temp_directory_path() / "stitch_report_json_test";
  fs::remove_all(dir);
  fs::create_directories(dir);
  ASSERT_TRUE(write_verify_report(dir / "verify.json", full_report()).ok());
  auto read = read_verify_report(dir / "verify.json");
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(read->gpu_name, "NVIDIA H200");
  ASSERT_TRUE(write_file_atomic(dir / "broken.json", "{\"format\": \"stitchcuda.verify\"").ok());
  auto broken = read_verify_report(dir / "broken.json");
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.error().message.find("broken.json"), std::string::npos);
  fs::remove_all(dir);
}

TEST(FeedbackJson, EveryFieldRoundTrips) {
  VerifyReport report = full_report();
  report.diagnostics.push_back({"program.cu", 7, "error", "expected ';'", "  x = 1"});
  ProfileSummary profile;
  profile.kernels = {{"fused", 0.7, "memory", 45.0, std::nullopt},
                     {"gemm", 0.2, "compute", {}, 80}};
  const Feedback feedback = build_feedback(report, profile);
  ASSERT_TRUE(feedback.timed);
  const json written = feedback_to_json(feedback);
  auto back = feedback_from_json(written);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(feedback_to_json(*back), written);
  EXPECT_EQ(back->outcome, Outcome::wrong);
  EXPECT_EQ(back->suggestion.rule, feedback.suggestion.rule);
  ASSERT_EQ(back->compile_errors.size(), 1u);
  EXPECT_EQ(back->compile_errors[0].severity, "error");
  ASSERT_EQ(back->wrong_outputs.size(), 1u);
  EXPECT_TRUE(std::isinf(back->wrong_outputs[0].check.max_abs_error));
  EXPECT_EQ(back->baselines.at(0).candidate_ms, feedback.median_ms);
  EXPECT_EQ(back->profile.at(1).sm_pct, 80);
  EXPECT_FALSE(back->profile.at(1).dram_pct.has_value());
}

TEST(FeedbackJson, MalformedDocumentsAreRefusedByName) {
  const json good = feedback_to_json(build_feedback(full_report()));
  for (auto [key, value, expected] :
       {std::tuple{"format", json("stitchcuda.verify"), "not a feedback.json"},
        std::tuple{"state", json("maybe"), "maybe"},
        std::tuple{"suggestion", json{{"rule", "pray"}}, "pray"},
        std::tuple{"kernels", json::array({{{"registers", "many"}}}), "kernels[0]"}}) {
    json doc = good;
    doc[key] = value;
    auto read = feedback_from_json(doc);
    ASSERT_FALSE(read.ok()) << key;
    EXPECT_NE(read.error().message.find(expected), std::string::npos) << read.error().message;
  }
}

}  // namespace
}  // namespace stitch
