// eval_kb.json as python/stitch_harness/eval_kb.py writes it, read into EvalKbReport: the verdict
// by its verdict.h name, the times, the findings; what is no eval-kb result is an Error.
#include "harness/eval_kb_report.h"

#include <gtest/gtest.h>

namespace stitch::harness {
namespace {

using nlohmann::json;

TEST(EvalKbReport, ReadsTheVerdictTimesAndFindings) {
  json doc = {{"version", 1},
              {"outcome", "passed"},
              {"reason", ""},
              {"track", "fp32"},
              {"device", "NVIDIA H200"},
              {"median_ms", 0.5},
              {"eager_median_ms", 1.5},
              {"speedup_vs_eager", 3.0},
              {"findings", json::array()},
              {"check_sets", json::array()}};
  auto report = eval_kb_report_from_json(doc);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_TRUE(report->passed());
  EXPECT_EQ(report->track, "fp32");
  EXPECT_EQ(report->device, "NVIDIA H200");
  EXPECT_EQ(report->median_ms, 0.5);
  EXPECT_EQ(report->eager_median_ms, 1.5);
  EXPECT_EQ(report->speedup_vs_eager, 3.0);
  EXPECT_EQ(report->findings, 0u);
  EXPECT_EQ(report->document, doc);

  // A hacked solution without timing; speedup_vs_eager null (a zero-time candidate).
  json hacked = {{"outcome", "hacked"},
                 {"reason", "output 0 of check set 1 repeats check set 0's"},
                 {"speedup_vs_eager", nullptr},
                 {"findings", {{{"kind", "output_cache"}, {"detail", "d"}}, {{"kind", "x"}}}}};
  report = eval_kb_report_from_json(hacked);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_EQ(report->outcome, Outcome::hacked);
  EXPECT_FALSE(report->passed());
  EXPECT_EQ(report->reason, "output 0 of check set 1 repeats check set 0's");
  EXPECT_EQ(report->findings, 2u);
  EXPECT_FALSE(report->median_ms);
  EXPECT_FALSE(report->speedup_vs_eager);
  EXPECT_EQ(report->track, "?");  // not said
}

TEST(EvalKbReport, WhatIsNoResultIsAnError) {
  for (const json& bad : {json::array(), json{{"reason", "no outcome"}}, json{{"outcome", "great"}},
                          json{{"outcome", 3}}}) {
    auto report = eval_kb_report_from_json(bad);
    ASSERT_FALSE(report.ok()) << bad.dump();
    EXPECT_EQ(report.error().kind, ErrorKind::bad_input);
  }
  EXPECT_NE(eval_kb_report_from_json({{"outcome", "great"}}).error().message.find("'great'"),
            std::string::npos);
}

}  // namespace
}  // namespace stitch::harness
