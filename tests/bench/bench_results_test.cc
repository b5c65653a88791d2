// results.jsonl: records round-trip through JSON and the file, torn and corrupt lines are skipped,
// the last record of a task wins, and bad fields are named in errors.
#include "bench/bench_results.h"

#include <fstream>

#include <gtest/gtest.h>

#include "sample_records.h"
#include "util/fs.h"

namespace stitch::bench {
namespace {

using testing::make_record;
using testing::rich_records;

fs::path fresh_file(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("stitch_bench_results_test_" + name);
  fs::remove_all(dir);
  return dir / "results.jsonl";
}

void append_text(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::app | std::ios::binary) << text;
}

TEST(BenchResults, JsonRoundTripKeepsEveryField) {
  for (const auto& record : rich_records()) {
    auto back = record_from_json(record_to_json(record));
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(*back, record) << record.task;
  }
}

TEST(BenchResults, InsecureSandboxRoundTripsAndIsAbsentWhenEmpty) {
  BenchRecord record = rich_records()[0];
  EXPECT_FALSE(record_to_json(record).contains("insecure_sandbox"));
  record.insecure_sandbox = {"user", "compiler.network_namespace"};
  auto back = record_from_json(record_to_json(record));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->insecure_sandbox, record.insecure_sandbox);
}

TEST(BenchResults, FileRoundTripInOrder) {
  fs::path path = fresh_file("round_trip");
  auto records = rich_records();
  for (const auto& record : records)
    ASSERT_TRUE(append_record(path, record).ok());
  int skipped = -1;
  auto back = read_results(path, &skipped);
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(skipped, 0);
  EXPECT_EQ(*back, records);
  // One line per record.
  auto text = read_file(path);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(std::count(text->begin(), text->end(), '\n'), static_cast<long>(records.size()));
}

TEST(BenchResults, TornAndCorruptLinesAreSkippedAndCounted) {
  fs::path path = fresh_file("torn");
  auto records = rich_records();
  ASSERT_TRUE(append_record(path, records[0]).ok());
  append_text(path, "not json at all\n");
  append_text(path, "[1, 2, 3]\n");                            // JSON, not a record
  append_text(path, "{\"task\": \"x\", \"level\": \"l\"}\n");  // no outcome
  append_text(path, "\n");                                     // blank: not counted
  ASSERT_TRUE(append_record(path, records[1]).ok());
  std::string torn = record_to_json(records[2]).dump();
  append_text(path, torn.substr(0, torn.size() / 2));  // a crash mid-write
  int skipped = -1;
  auto back = read_results(path, &skipped);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(skipped, 4);
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[0], records[0]);
  EXPECT_EQ((*back)[1], records[1]);
}

TEST(BenchResults, AppendAfterTornTailStartsOnANewLine) {
  fs::path path = fresh_file("fence");
  auto records = rich_records();
  ASSERT_TRUE(append_record(path, records[0]).ok());
  append_text(path, "{\"task\": \"half");
  ASSERT_TRUE(append_record(path, records[3]).ok());
  int skipped = -1;
  auto back = read_results(path, &skipped);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(skipped, 1);
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[1], records[3]);
}

TEST(BenchResults, LastRecordOfATaskWinsInFirstAppearanceOrder) {
  fs::path path = fresh_file("last_wins");
  auto first_b = make_record("B", "level1", BenchOutcome::timeout, std::nullopt, {});
  auto a = make_record("A", "level1", BenchOutcome::passed, 1.0, {{"eager", 2.0}});
  auto b_other_level = make_record("B", "level2", BenchOutcome::passed, 1.0, {});
  auto second_b = make_record("B", "level1", BenchOutcome::passed, 0.5, {{"eager", 1.0}});
  for (const auto& r : {first_b, a, b_other_level, second_b})
    ASSERT_TRUE(append_record(path, r).ok());
  auto back = read_results(path);
  ASSERT_TRUE(back.ok());
  ASSERT_EQ(back->size(), 3u);
  EXPECT_EQ((*back)[0], second_b);  // level1/B: the re-run, in B's first place
  EXPECT_EQ((*back)[1], a);
  EXPECT_EQ((*back)[2], b_other_level);  // same task name, other level: another task
}

TEST(BenchResults, ErrorsNameTheBadField) {
  auto doc = record_to_json(rich_records()[0]);
  auto expect_error = [](nlohmann::json bad, const std::string& part) {
    auto r = record_from_json(bad);
    ASSERT_FALSE(r.ok()) << part;
    EXPECT_NE(r.error().message.find(part), std::string::npos) << r.error().message;
  };
  auto missing_level = doc;
  missing_level.erase("level");
  expect_error(missing_level, "level: missing");
  auto bad_ms = doc;
  bad_ms["ours_ms"] = "fast";
  expect_error(bad_ms, "ours_ms: ");
  expect_error(bad_ms, "must be number");
  auto bad_baseline = doc;
  bad_baseline["baselines"][1].erase("ms");
  expect_error(bad_baseline, "baselines[1]: ms: must be a number");
  auto bad_outcome = doc;
  bad_outcome["outcome"] = "great";
  expect_error(bad_outcome, "outcome: unknown value 'great'");
  auto bad_attempts = doc;
  bad_attempts["attempts"] = 1.5;
  expect_error(bad_attempts, "attempts: must be an integer");
  expect_error(nlohmann::json::array(), "must be a JSON object");
  // The task is named when known, so a log line points at the task.
  expect_error(bad_ms, "12_Gemm_Multiply_LeakyReLU");
}

// Lines as results.jsonl has held them since the first bench (docs/bench-history/): each reads back
// and is written again to the same bytes, whatever its outcome.
TEST(BenchResults, RecordsOnDiskReadBackToTheSameBytes) {
  const std::string line =
      R"({"attempts":3,"baselines":[{"mode":"eager","ms":0.5}],"finished_at":"2026-12-01T02:09:20Z",)"
      R"("floor_ms":0.02,"gpu":"NVIDIA H200","level":"level2","ours_ms":0.1,"ours_p10_ms":0.09,)"
      R"("ours_p90_ms":0.11,"outcome":"OUTCOME","reason":"r","refine_before_ms":null,"run_dir":"d",)"
      R"("task":"t","task_file":"t.py","top_kernels":[{"ms":0.05,"name":"k"}],"track":"fp32",)"
      R"("wall_s":12.5})";
  for (std::string_view name : kBenchOutcomeNames) {
    std::string text = line;
    text.replace(text.find("OUTCOME"), 7, name);
    auto record = record_from_json(nlohmann::json::parse(text));
    ASSERT_TRUE(record.ok()) << name << ": " << record.error().message;
    EXPECT_EQ(bench_outcome_name(record->outcome), name);
    EXPECT_EQ(record->passed(), name == "passed");
    EXPECT_EQ(record_to_json(*record).dump(), text);
  }
}

TEST(BenchOutcome, EveryVerdictIsTheBenchOutcomeOfItsName) {
  for (size_t i = 0; i < kOutcomeNames.size(); ++i) {
    const BenchOutcome outcome = bench_outcome_of(static_cast<Outcome>(i));
    EXPECT_EQ(bench_outcome_name(outcome), kOutcomeNames[i]);
  }
  EXPECT_EQ(bench_outcome_of(Outcome::passed), BenchOutcome::passed);
  EXPECT_FALSE(bench_outcome_from_name("unknown"));
}

TEST(BenchResults, OptionalFieldsDefaultAndNonFiniteTimesAreDropped) {
  auto minimal = record_from_json({{"task", "t"}, {"level", "l"}, {"outcome", "no_gpu"}});
  ASSERT_TRUE(minimal.ok()) << minimal.error().message;
  EXPECT_EQ(minimal->track, "fp32");
  EXPECT_FALSE(minimal->ours_ms);
  EXPECT_TRUE(minimal->baselines.empty());

  auto r = make_record("t", "l", BenchOutcome::passed, std::numeric_limits<double>::quiet_NaN(),
                       {{"eager", std::numeric_limits<double>::infinity()}, {"compile", 2.0}});
  auto back = record_from_json(nlohmann::json::parse(record_to_json(r).dump()));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_FALSE(back->ours_ms);
  ASSERT_EQ(back->baselines.size(), 1u);
  EXPECT_EQ(back->baselines[0].mode, "compile");
}

TEST(BenchResults, SpeedupNeedsAPassAndBothTimes) {
  auto r = make_record("t", "l", BenchOutcome::passed, 2.0, {{"eager", 3.0}, {"compile", 0.0}});
  EXPECT_DOUBLE_EQ(r.speedup("eager").value(), 1.5);
  EXPECT_FALSE(r.speedup("compile")) << "a zero baseline time is not a measurement";
  EXPECT_FALSE(r.speedup("reduce-overhead"));
  r.outcome = BenchOutcome::wrong;
  EXPECT_FALSE(r.speedup("eager"));
  EXPECT_DOUBLE_EQ(r.baseline_ms("eager").value(), 3.0);  // still shown for a failed task
}

TEST(BenchResults, FloorFractionNeedsAPassAndBothTimes) {
  auto r = make_record("t", "l", BenchOutcome::passed, 2.0, {});
  EXPECT_FALSE(r.floor_fraction()) << "no plan, no floor";
  r.floor_ms = 0.5;
  EXPECT_DOUBLE_EQ(r.floor_fraction().value(), 0.25);
  r.outcome = BenchOutcome::wrong;
  EXPECT_FALSE(r.floor_fraction());
}

}  // namespace
}  // namespace stitch::bench
