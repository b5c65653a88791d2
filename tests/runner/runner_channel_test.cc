// The supervisor-worker channel's framing (runner/channel.h) and the supervisor's timing
// cross-check (runner/timing_check.h): pure functions, no processes.
#include <gtest/gtest.h>

#include "runner/channel.h"
#include "runner/timing_check.h"

namespace stitch::runner {
namespace {

TEST(FrameDecoder, ReassemblesFramesSplitAnywhere) {
  std::string bytes = encode_frame(FrameType::report, R"({"a": 1})") +
                      encode_frame(FrameType::mark, encode_mark({MarkKind::call_end, 7}));
  FrameDecoder decoder;
  std::vector<Frame> frames;
  for (char byte : bytes) {  // one byte at a time: every split point
    decoder.append(std::string_view(&byte, 1));
    while (true) {
      auto frame = decoder.next();
      ASSERT_TRUE(frame.ok()) << frame.error().message;
      if (!*frame) break;
      frames.push_back(**frame);
    }
  }
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_EQ(frames[0].type, FrameType::report);
  EXPECT_EQ(frames[0].payload, R"({"a": 1})");
  auto mark = decode_mark(frames[1].payload);
  ASSERT_TRUE(mark.ok());
  EXPECT_EQ(mark->kind, MarkKind::call_end);
  EXPECT_EQ(mark->iteration, 7);
}

TEST(FrameDecoder, RefusesGarbageUnknownTypesAndOversizedFrames) {
  FrameDecoder garbage;
  garbage.append("this is not a frame at all");
  EXPECT_FALSE(garbage.next().ok());
  garbage.append(encode_frame(FrameType::report, "{}"));  // no recovery after a violation
  EXPECT_FALSE(garbage.next().ok());

  std::string unknown = encode_frame(FrameType::report, "{}");
  unknown[4] = 9;
  FrameDecoder unknown_type;
  unknown_type.append(unknown);
  EXPECT_FALSE(unknown_type.next().ok());

  // The header alone announces too much: refused before any payload arrives.
  std::string huge = encode_frame(FrameType::report, "");
  uint32_t length = kMaxReportBytes + 1;
  std::memcpy(huge.data() + 8, &length, sizeof length);
  FrameDecoder oversized;
  oversized.append(huge);
  auto frame = oversized.next();
  ASSERT_FALSE(frame.ok());
  EXPECT_NE(frame.error().message.find("bytes"), std::string::npos);

  FrameDecoder long_mark;
  long_mark.append(encode_frame(FrameType::mark, std::string(9, '\0')));
  EXPECT_FALSE(long_mark.next().ok());
}

TEST(FrameDecoder, MarksWithUnknownKindsOrNegativeIterationsAreRefused) {
  std::string payload = encode_mark({MarkKind::call_begin, 1});
  payload[0] = 42;
  EXPECT_FALSE(decode_mark(payload).ok());
  EXPECT_FALSE(decode_mark(encode_mark({MarkKind::call_begin, -3})).ok());
  EXPECT_FALSE(decode_mark("short").ok());
}

std::vector<TimedMark> calls(const std::vector<double>& durations_ms) {
  std::vector<TimedMark> marks;
  double at = 1000;
  for (size_t i = 0; i < durations_ms.size(); ++i) {
    marks.push_back({{MarkKind::call_begin, static_cast<int32_t>(i)}, at});
    at += durations_ms[i];
    marks.push_back({{MarkKind::call_end, static_cast<int32_t>(i)}, at});
    at += 3;  // between calls: flushes, checks
  }
  return marks;
}

TEST(TimingCheck, HonestTimesPass) {
  CallIntervals seen = call_intervals(calls({5.0, 5.1, 4.9}));
  ASSERT_TRUE(seen.problem.empty());
  ReportedTimes reported{{4.8, 4.9, 4.7}, {4.85, 4.95, 4.75}, {4.95, 5.05, 4.85}};
  EXPECT_TRUE(cross_check_timing(seen, reported).empty());
  // Tiny calls: the supervisor's interval is mostly message latency, which the slack absorbs.
  CallIntervals tiny = call_intervals(calls({0.3, 0.3}));
  EXPECT_TRUE(cross_check_timing(tiny, {{0.01, 0.01}, {0.02, 0.02}, {0.03, 0.03}}).empty());
}

TEST(TimingCheck, TenTimesLessThanHappenedIsCaught) {
  CallIntervals seen = call_intervals(calls({20, 20, 20, 20}));
  ReportedTimes forged{{2, 2, 2, 2}, {2, 2, 2, 2}, {2, 2, 2, 2}};
  std::vector<std::string> violations = cross_check_timing(seen, forged);
  ASSERT_FALSE(violations.empty());
  EXPECT_NE(violations.front().find("wall_ms sums to 8.000 ms"), std::string::npos)
      << violations.front();
}

std::vector<TimedMark> probes(const std::vector<double>& durations_ms) {
  std::vector<TimedMark> marks;
  double at = 500;
  for (size_t i = 0; i < durations_ms.size(); ++i) {
    marks.push_back({{MarkKind::probe_begin, static_cast<int32_t>(i)}, at});
    at += durations_ms[i];
    marks.push_back({{MarkKind::probe_end, static_cast<int32_t>(i)}, at});
  }
  return marks;
}

// As the H200 machine measured an honest program with eight verifications sharing its cores:
// 2.2 ms a call reported, 5.6 ms between the marks.
TEST(TimingCheck, ALoadedMachinesSlowChannelIsAllowedForByTheProbes) {
  CallIntervals seen = call_intervals(calls(std::vector<double>(10, 5.6)));
  ReportedTimes honest{std::vector<double>(10, 2.2), std::vector<double>(10, 2.5),
                       std::vector<double>(10, 2.2)};
  EXPECT_FALSE(cross_check_timing(seen, honest).empty());  // the fixed slack alone: flagged
  CallIntervals loaded = call_intervals(probes({3.1, 2.9, 3.4, 3.0, 40.0}),
                                        MarkKind::probe_begin, MarkKind::probe_end);
  ASSERT_TRUE(loaded.problem.empty());
  EXPECT_NEAR(underreport_slack_ms({}, loaded), 2 * 3.1, 1e-9);  // the median, not the outlier
  EXPECT_TRUE(cross_check_timing(seen, honest, {}, loaded).empty());

  // Ten times less than happened is still caught on the loaded machine...
  CallIntervals long_calls = call_intervals(calls(std::vector<double>(10, 23.4)));
  ReportedTimes forged{std::vector<double>(10, 2), std::vector<double>(10, 2),
                       std::vector<double>(10, 2)};
  EXPECT_FALSE(cross_check_timing(long_calls, forged, {}, loaded).empty());
  // ... and a quiet machine's probes leave the fixed slack as it was.
  CallIntervals quiet = call_intervals(probes({0.04, 0.05, 0.06}), MarkKind::probe_begin,
                                       MarkKind::probe_end);
  EXPECT_DOUBLE_EQ(underreport_slack_ms({}, quiet), 0.5);
  EXPECT_FALSE(cross_check_timing(seen, honest, {}, quiet).empty());
  // The call marks ignore probe marks between them.
  std::vector<TimedMark> mixed = calls({1, 1});
  std::vector<TimedMark> probe_marks = probes({0.1});
  mixed.insert(mixed.begin() + 2, probe_marks.begin(), probe_marks.end());
  EXPECT_EQ(call_intervals(mixed).ms.size(), 2u);
}

// Twelve verifications side by side on the H200 machine: a load that came for the last 20 of 50
// calls (the median probe still quiet) raised those calls' gaps and their own probes'.
TEST(TimingCheck, EachCallsOwnProbeAllowsForLoadThatComesAndGoes) {
  std::vector<double> call_ms(50, 0.1), probe_ms(50, 0.05);
  std::fill(call_ms.begin() + 30, call_ms.end(), 3.0);
  std::fill(probe_ms.begin() + 30, probe_ms.end(), 1.5);
  CallIntervals seen = call_intervals(calls(call_ms));
  CallIntervals probed =
      call_intervals(probes(probe_ms), MarkKind::probe_begin, MarkKind::probe_end);
  ASSERT_EQ(probed.ms.size(), seen.ms.size());
  ReportedTimes honest{std::vector<double>(50, 0.06), std::vector<double>(50, 0.07),
                       std::vector<double>(50, 0.06)};
  EXPECT_DOUBLE_EQ(underreport_slack_ms({}, probed), 0.5);  // the median probe alone: too little
  EXPECT_TRUE(cross_check_timing(seen, honest, {}, probed).empty());
  TimingCheckLimits median_only;
  median_only.probe_factor = 0;  // no probe raises the fixed slack
  EXPECT_FALSE(cross_check_timing(seen, honest, median_only, probed).empty());
  // The same probes do not excuse calls ten times longer than reported.
  CallIntervals long_calls = call_intervals(calls(std::vector<double>(50, 8.0)));
  ReportedTimes forged{std::vector<double>(50, 0.8), std::vector<double>(50, 0.8),
                       std::vector<double>(50, 0.8)};
  EXPECT_FALSE(cross_check_timing(long_calls, forged, {}, probed).empty());
}

// A burst of host load on a few calls is left out; the rest must still add up.
TEST(TimingCheck, AFewCallsFurthestOverAreLeftOut) {
  std::vector<double> call_ms(20, 1.0);
  call_ms[3] = call_ms[11] = 40.0;  // two calls of twenty: the outlier share, 10%
  CallIntervals seen = call_intervals(calls(call_ms));
  ReportedTimes honest{std::vector<double>(20, 0.9), std::vector<double>(20, 0.9),
                       std::vector<double>(20, 0.9)};
  EXPECT_TRUE(cross_check_timing(seen, honest).empty());
  TimingCheckLimits none_left_out;
  none_left_out.outlier_share = 0;
  std::vector<std::string> flagged = cross_check_timing(seen, honest, none_left_out);
  ASSERT_FALSE(flagged.empty());
  EXPECT_EQ(flagged[0].find("left out"), std::string::npos) << flagged[0];
  call_ms[7] = 40.0;  // a third: one stays in
  std::vector<std::string> third = cross_check_timing(call_intervals(calls(call_ms)), honest);
  ASSERT_FALSE(third.empty());
  EXPECT_NE(third[0].find("over 18 timed calls"), std::string::npos) << third[0];
  EXPECT_NE(third[0].find("the 2 calls furthest over left out"), std::string::npos) << third[0];
}

TEST(TimingCheck, MoreThanTheSupervisorSawIsCaught) {
  CallIntervals seen = call_intervals(calls({1, 1}));
  std::vector<std::string> violations =
      cross_check_timing(seen, {{1.0, 30.0}, {1.0, 1.0}, {1.0, 1.0}});
  ASSERT_EQ(violations.size(), 1u);
  EXPECT_NE(violations[0].find("timed call 1: gpu_ms 30"), std::string::npos) << violations[0];
}

TEST(TimingCheck, CallsMustMatchInNumberAndOrder) {
  CallIntervals seen = call_intervals(calls({1, 1, 1}));
  EXPECT_FALSE(cross_check_timing(seen, {{1, 1}, {1, 1}, {1, 1}}).empty());

  std::vector<TimedMark> unmatched = calls({1});
  unmatched.push_back({{MarkKind::call_end, 5}, 2000});
  EXPECT_FALSE(call_intervals(unmatched).problem.empty());
  std::vector<TimedMark> open = calls({1});
  open.push_back({{MarkKind::call_begin, 1}, 2000});
  EXPECT_NE(call_intervals(open).problem.find("never ended"), std::string::npos);
}

}  // namespace
}  // namespace stitch::runner
