// Feedback: each suggestion rule chosen for the report it is meant for (and not for its
// neighbours), the facts kept (first compile errors, wrong outputs, top kernels, slowest profiled
// kernels), profile.json parsing and feedback.json's fields.
#include "verify/feedback.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

namespace stitch {
namespace {

using nlohmann::json;

VerifyReport verified(Outcome outcome, std::string reason = "") {
  VerifyReport report;
  report.outcome = outcome;
  report.reason = std::move(reason);
  return report;
}

CheckedOutput wrong_output(int64_t mismatches, int64_t first, double norm, int64_t nan = 0) {
  CheckedOutput output;
  output.where = "check set 0";
  output.check.passed = false;
  output.check.mismatches = mismatches;
  output.check.first_mismatch_index = first;
  output.check.relative_error_norm = norm;
  output.check.nan_or_inf = nan;
  output.elements = 1000;
  output.message = "output 0: mismatch";
  return output;
}

VerifyReport passed_report(double eager_speedup, double launches) {
  VerifyReport report = verified(Outcome::passed);
  report.timing = TimingStats{1.0, 0.9, 1.1, 0.8, 50};
  report.synced_timing = report.timing;
  report.launches_per_forward = launches;
  report.speedups = {{"eager", eager_speedup, 1.0, eager_speedup},
                     {"compile", 2.0 * eager_speedup, 1.0, 2.0 * eager_speedup}};
  PtxasKernelReport kernel;
  kernel.name = "fused_kernel";
  kernel.registers = 64;
  report.kernels = {kernel};
  return report;
}

SuggestionRule rule_for(const VerifyReport& report,
                        const std::optional<ProfileSummary>& profile = std::nullopt) {
  return build_feedback(report, profile).suggestion.rule;
}

TEST(Feedback, NoGpuAndInfrastructureAreNotTheProgramsFault) {
  VerifyReport report;
  report.state = VerifyState::no_gpu;
  EXPECT_EQ(rule_for(report), SuggestionRule::run_on_gpu);
  report.state = VerifyState::infrastructure_error;
  report.reason = "judge serve: setup failed";
  Feedback feedback = build_feedback(report);
  EXPECT_EQ(feedback.suggestion.rule, SuggestionRule::infrastructure);
  EXPECT_NE(feedback.suggestion.text.find("setup failed"), std::string::npos);
}

TEST(Feedback, CompileErrorPointsAtTheFirstError) {
  VerifyReport report = verified(Outcome::compile_error, "x");
  report.diagnostics = {{"a.cu", 3, "warning", "unused variable", ""},
                        {"a.cu", 7, "error", "identifier \"undefined_scale\" is undefined", "  7 | x"},
                        {"a.cu", 11, "error", "second", ""},
                        {"a.cu", 12, "error", "third", ""},
                        {"a.cu", 13, "error", "fourth", ""}};
  Feedback feedback = build_feedback(report);
  EXPECT_EQ(feedback.suggestion.rule, SuggestionRule::fix_compile_error);
  EXPECT_NE(feedback.suggestion.text.find("a.cu:7"), std::string::npos) << feedback.suggestion.text;
  EXPECT_NE(feedback.suggestion.text.find("undefined_scale"), std::string::npos);
  ASSERT_EQ(feedback.compile_errors.size(), kFeedbackItems) << "errors only, the first few";
  EXPECT_EQ(feedback.compile_errors[0].line, 7);
  EXPECT_EQ(feedback.compile_errors[0].snippet, "  7 | x");
}

TEST(Feedback, HackNamesTheFindingAndWhatToDoInstead) {
  VerifyReport report = verified(Outcome::hacked, "host_thread");
  report.findings = {{"source", {HackKind::side_stream, "joined stream", false}},
                     {"source", {HackKind::host_thread, "std::thread at a.cu:17", true}}};
  Feedback feedback = build_feedback(report);
  EXPECT_EQ(feedback.suggestion.rule, SuggestionRule::remove_hack);
  EXPECT_NE(feedback.suggestion.text.find("host threads"), std::string::npos);
  EXPECT_NE(feedback.suggestion.text.find("a.cu:17"), std::string::npos);
  ASSERT_EQ(feedback.findings.size(), 2u);
  EXPECT_EQ(feedback.findings[0].rfind("host_thread", 0), 0u) << "fatal findings first";
  EXPECT_EQ(feedback.findings[1].rfind("note: side_stream", 0), 0u);
}

TEST(Feedback, TimeoutAndRuntimeErrors) {
  EXPECT_EQ(rule_for(verified(Outcome::timeout, "runner killed after 120 s")),
            SuggestionRule::fix_hang);
  EXPECT_EQ(rule_for(verified(Outcome::runtime_error,
                              "cuda_error: an illegal memory access was encountered")),
            SuggestionRule::fix_memory_access);
  EXPECT_EQ(rule_for(verified(Outcome::runtime_error, "the runner died of SIGSEGV")),
            SuggestionRule::fix_memory_access);
  EXPECT_EQ(rule_for(verified(Outcome::runtime_error, "init_failed: cublasLtCreate returned 3")),
            SuggestionRule::fix_runtime_error);
}

TEST(Feedback, WrongWithNanMeansUnwrittenOutputOrRace) {
  VerifyReport report = verified(Outcome::wrong, "check set 0: NaN");
  report.output_checks = {wrong_output(1000, 0, std::numeric_limits<double>::infinity(), 1000)};
  Feedback feedback = build_feedback(report);
  EXPECT_EQ(feedback.suggestion.rule, SuggestionRule::write_every_output);
  EXPECT_NE(feedback.suggestion.text.find("1000 NaN/Inf"), std::string::npos);
  ASSERT_EQ(feedback.wrong_outputs.size(), 1u);
  EXPECT_EQ(feedback.wrong_outputs[0].check.nan_or_inf, 1000);
}

TEST(Feedback, WrongOnlyAtTheEndMeansTailHandling) {
  VerifyReport report = verified(Outcome::wrong);
  report.output_checks = {wrong_output(24, 976, 0.3)};
  Feedback feedback = build_feedback(report);
  EXPECT_EQ(feedback.suggestion.rule, SuggestionRule::fix_tail_handling);
  EXPECT_NE(feedback.suggestion.text.find("976"), std::string::npos);
}

TEST(Feedback, WrongByALittleMeansPrecision) {
  VerifyReport report = verified(Outcome::wrong);
  report.output_checks = {wrong_output(600, 0, 3e-4)};
  EXPECT_EQ(rule_for(report), SuggestionRule::fix_precision);
}

TEST(Feedback, WrongByALotMeansTheComputation) {
  VerifyReport report = verified(Outcome::wrong);
  report.output_checks = {wrong_output(900, 0, 0.8)};
  Feedback feedback = build_feedback(report);
  EXPECT_EQ(feedback.suggestion.rule, SuggestionRule::fix_computation);
  EXPECT_NE(feedback.suggestion.text.find("900 of 1000"), std::string::npos);
}

TEST(Feedback, SpillsComeFirstForACorrectProgram) {
  VerifyReport report = passed_report(0.5, 10);
  PtxasKernelReport spilling;
  spilling.name = "gemm_tile";
  spilling.registers = 255;
  spilling.spill_store_bytes = 96;
  spilling.spill_load_bytes = 64;
  report.kernels.push_back(spilling);
  Feedback feedback = build_feedback(report);
  EXPECT_EQ(feedback.suggestion.rule, SuggestionRule::reduce_spills);
  EXPECT_NE(feedback.suggestion.text.find("gemm_tile"), std::string::npos);
  EXPECT_NE(feedback.suggestion.text.find("160 bytes"), std::string::npos);
  ASSERT_EQ(feedback.kernels.size(), 2u);
  EXPECT_EQ(feedback.kernels[0].name, "gemm_tile") << "the spilling kernel first";
}

TEST(Feedback, SlowerThanEagerWithManyLaunchesMeansFuse) {
  Feedback feedback = build_feedback(passed_report(0.7, 12));
  EXPECT_EQ(feedback.suggestion.rule, SuggestionRule::fuse_launches);
  EXPECT_NE(feedback.suggestion.text.find("12 kernel launches"), std::string::npos);
  // Few launches: not a launch-overhead problem.
  EXPECT_EQ(rule_for(passed_report(0.7, 1)), SuggestionRule::profile_slowest);
}

TEST(Feedback, ProfileBottlenecks) {
  ProfileSummary profile;
  profile.kernels = {{"small", 0.01, "compute", 10, 10}, {"copy_kernel", 0.8, "memory", 35, 20}};
  Feedback feedback = build_feedback(passed_report(1.5, 2), profile);
  EXPECT_EQ(feedback.suggestion.rule, SuggestionRule::improve_memory_access);
  EXPECT_NE(feedback.suggestion.text.find("copy_kernel"), std::string::npos);
  EXPECT_NE(feedback.suggestion.text.find("35%"), std::string::npos);
  ASSERT_EQ(feedback.profile.size(), 2u);
  EXPECT_EQ(feedback.profile[0].name, "copy_kernel") << "slowest first";

  profile.kernels = {{"gemm", 2.0, "compute", 10, 30}};
  EXPECT_EQ(rule_for(passed_report(1.5, 2), profile), SuggestionRule::raise_utilisation);
  // Memory-bound at high DRAM utilisation: nothing to vectorise; falls through.
  profile.kernels = {{"copy", 2.0, "memory", 92, 30}};
  EXPECT_EQ(rule_for(passed_report(1.5, 2), profile), SuggestionRule::keep_going);
  // Not measured (no ncu): no claim about utilisation.
  profile.kernels = {{"copy", 2.0, "memory", std::nullopt, std::nullopt}};
  EXPECT_EQ(rule_for(passed_report(1.5, 2), profile), SuggestionRule::keep_going);
}

TEST(Feedback, FasterThanEverythingKeepsGoing) {
  Feedback feedback = build_feedback(passed_report(3.0, 1));
  EXPECT_EQ(feedback.suggestion.rule, SuggestionRule::keep_going);
  EXPECT_NE(feedback.suggestion.text.find("3.00x"), std::string::npos);
  ASSERT_TRUE(feedback.timed);
  ASSERT_EQ(feedback.baselines.size(), 2u);
}

TEST(Feedback, SlowerThanABaselineWithoutAProfile) {
  VerifyReport report = passed_report(1.2, 1);
  report.speedups[1].speedup = 0.6;  // slower than torch.compile
  Feedback feedback = build_feedback(report);
  EXPECT_EQ(feedback.suggestion.rule, SuggestionRule::profile_slowest);
  EXPECT_NE(feedback.suggestion.text.find("0.60x compile"), std::string::npos);
}

TEST(Feedback, ProfileJsonMinimalSchema) {
  auto parsed = parse_profile_summary(json::parse(
      R"({"kernels": [{"name": "k", "duration_ms": 0.5, "bottleneck": "memory", "dram_pct": 40,
                       "sm_pct": 12.5}], "other": 1})"));
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  ASSERT_EQ(parsed->kernels.size(), 1u);
  EXPECT_DOUBLE_EQ(*parsed->kernels[0].sm_pct, 12.5);
  auto unmeasured = parse_profile_summary(json::parse(
      R"({"kernels": [{"name": "k", "duration_ms": 0.5, "bottleneck": null}]})"));
  ASSERT_TRUE(unmeasured.ok()) << unmeasured.error().message;
  EXPECT_FALSE(unmeasured->kernels[0].dram_pct);
  EXPECT_EQ(unmeasured->kernels[0].bottleneck, "");
  EXPECT_FALSE(parse_profile_summary(json::parse(R"({"kernel": []})")).ok());
  EXPECT_FALSE(parse_profile_summary(json::parse(R"({"kernels": [{"duration_ms": "x"}]})")).ok());
  EXPECT_FALSE(read_profile_summary("/no/such/profile.json").ok());
}

TEST(Feedback, JsonHasEveryField) {
  VerifyReport report = verified(Outcome::wrong, "check set 0: mismatch");
  report.output_checks = {wrong_output(900, 0, std::numeric_limits<double>::infinity())};
  json doc = feedback_to_json(build_feedback(report));
  EXPECT_EQ(doc["format"], "stitchcuda.feedback");
  EXPECT_EQ(doc["outcome"], "wrong");
  EXPECT_EQ(doc["state"], "verified");
  EXPECT_EQ(doc["wrong_outputs"][0]["relative_error_norm"], nullptr) << "inf is written as null";
  EXPECT_EQ(doc["wrong_outputs"][0]["mismatches"], 900);
  EXPECT_EQ(doc["timing"], nullptr);
  EXPECT_EQ(doc["suggestion"]["rule"], "fix_computation");
  EXPECT_FALSE(doc["suggestion"]["text"].get<std::string>().empty());
  for (const char* key : {"compile_errors", "findings", "kernels", "profile"})
    EXPECT_TRUE(doc[key].is_array()) << key;
}

TEST(Feedback, EveryRuleHasAName) {
  for (int rule = 0; rule <= static_cast<int>(SuggestionRule::keep_going); ++rule)
    EXPECT_FALSE(enum_name(static_cast<SuggestionRule>(rule)).empty());
  EXPECT_EQ(enum_name(SuggestionRule::reduce_spills), "reduce_spills");
}

}  // namespace
}  // namespace stitch
