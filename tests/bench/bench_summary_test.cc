// Aggregation on hand-computed examples (a failed task, a task without one baseline, a speedup of
// exactly 1.0, which is not > 1) and the markdown / text tables.
#include "bench/bench_summary.h"

#include <cmath>
#include <sstream>

#include <gtest/gtest.h>

#include "sample_records.h"

namespace stitch::bench {
namespace {

using testing::hand_computed_records;
using testing::make_record;

const ModeSummary& mode_of(const LevelSummary& level, const std::string& mode) {
  for (const auto& m : level.modes)
    if (m.mode == mode) return m;
  ADD_FAILURE() << "no mode " << mode << " in " << level.level;
  static ModeSummary none;
  return none;
}

void expect_fast_p(const ModeSummary& m, std::array<double, 4> expected) {
  for (size_t p = 0; p < expected.size(); ++p)
    EXPECT_DOUBLE_EQ(m.fast_p[p], expected[p]) << m.mode << " fast_" << kFastPThresholds[p];
}

TEST(BenchSummary, FastPAndGeomeanPerLevelAndOverAll) {
  auto levels = summarize_levels(hand_computed_records());
  ASSERT_EQ(levels.size(), 3u);
  EXPECT_EQ(levels[0].level, "level1");
  EXPECT_EQ(levels[1].level, "level2");
  EXPECT_EQ(levels[2].level, kAllLevels);

  const LevelSummary& l1 = levels[0];
  EXPECT_EQ(l1.tasks, 4);
  EXPECT_EQ(l1.passed, 3);
  EXPECT_DOUBLE_EQ(l1.correct_fraction(), 0.75);
  ASSERT_EQ(l1.modes.size(), 2u);
  EXPECT_EQ(l1.modes[0].mode, "eager");
  // eager speedups A 2.0, B 0.5, D 1.5; C failed. 1.5 is not > 1.5, 2.0 is not > 2.
  expect_fast_p(mode_of(l1, "eager"), {0.75, 0.5, 0.25, 0.0});
  EXPECT_NEAR(*mode_of(l1, "eager").geomean_speedup, std::cbrt(2.0 * 0.5 * 1.5), 1e-12);
  EXPECT_EQ(mode_of(l1, "eager").geomean_count, 3);
  EXPECT_EQ(mode_of(l1, "eager").tasks_with_baseline, 4);
  // compile speedups A exactly 1.0 (not > 1), D 3.0; B has no compile baseline.
  expect_fast_p(mode_of(l1, "compile"), {0.75, 0.25, 0.25, 0.25});
  EXPECT_NEAR(*mode_of(l1, "compile").geomean_speedup, std::sqrt(3.0), 1e-12);
  EXPECT_EQ(mode_of(l1, "compile").geomean_count, 2);
  EXPECT_EQ(mode_of(l1, "compile").tasks_with_baseline, 2);

  const LevelSummary& l2 = levels[1];
  EXPECT_EQ(l2.tasks, 1);
  expect_fast_p(mode_of(l2, "eager"), {1.0, 1.0, 1.0, 0.0});
  EXPECT_DOUBLE_EQ(*mode_of(l2, "eager").geomean_speedup, 2.0);
  EXPECT_FALSE(mode_of(l2, "compile").geomean_speedup);
  EXPECT_EQ(mode_of(l2, "compile").tasks_with_baseline, 0);
  EXPECT_DOUBLE_EQ(mode_of(l2, "compile").fast_p[0], 1.0) << "fast_0 is correctness alone";

  const LevelSummary& all = levels[2];
  EXPECT_EQ(all.tasks, 5);
  EXPECT_EQ(all.passed, 4);
  expect_fast_p(mode_of(all, "eager"), {0.8, 0.6, 0.4, 0.0});
  EXPECT_NEAR(*mode_of(all, "eager").geomean_speedup, std::pow(3.0, 0.25), 1e-12);
  EXPECT_EQ(mode_of(all, "eager").geomean_count, 4);
  expect_fast_p(mode_of(all, "compile"), {0.8, 0.2, 0.2, 0.2});
}

TEST(BenchSummary, ModesStandardFirstThenAlphabetical) {
  auto r = make_record("t", "l", BenchOutcome::passed, 1.0,
                       {{"zeta", 1}, {"reduce-overhead", 1}, {"alpha", 1}, {"eager", 1}});
  EXPECT_EQ(baseline_modes({r}),
            (std::vector<std::string>{"eager", "reduce-overhead", "alpha", "zeta"}));
  EXPECT_EQ(table_modes({r}),
            (std::vector<std::string>{"eager", "compile", "reduce-overhead", "alpha", "zeta"}));
  EXPECT_TRUE(baseline_modes({make_record("t", "l", BenchOutcome::passed, 1.0, {})}).empty());
}

TEST(BenchSummary, LevelsInNaturalOrder) {
  std::vector<BenchRecord> records = {make_record("a", "level10", BenchOutcome::passed, 1, {}),
                                      make_record("b", "level2", BenchOutcome::wrong, 1, {}),
                                      make_record("c", "level1", BenchOutcome::passed, 1, {})};
  auto levels = summarize_levels(records);
  ASSERT_EQ(levels.size(), 4u);
  EXPECT_EQ(levels[0].level, "level1");
  EXPECT_EQ(levels[1].level, "level2");
  EXPECT_EQ(levels[2].level, "level10");
  EXPECT_EQ(levels[3].level, "all");
  EXPECT_TRUE(levels[3].modes.empty());
}

TEST(BenchSummary, Formatters) {
  EXPECT_EQ(format_ms(1.23456), "1.235");
  EXPECT_EQ(format_ms(std::nullopt), "—");
  EXPECT_EQ(format_ms(std::nan("")), "—");
  EXPECT_EQ(format_speedup(2.0), "2.00×");
  EXPECT_EQ(format_speedup(std::nullopt), "—");
  EXPECT_EQ(format_percent(0.75), "75.0%");
  EXPECT_EQ(format_seconds(41.27), "41.3");
}

TEST(BenchSummary, MarkdownTableCells) {
  std::string md = format_table_markdown(hand_computed_records());
  EXPECT_NE(md.find("Track: fp32. GPU: NVIDIA H200. 5 tasks, 4 passed."), std::string::npos) << md;
  EXPECT_NE(
      md.find("| task | level | outcome | ours ms | eager ms | compile ms | reduce-overhead ms "
              "| vs eager | vs compile | vs reduce-overhead | % of floor | attempts |"),
      std::string::npos)
      << md;
  EXPECT_NE(md.find("| A | level1 | passed | 1.000 | 2.000 | 1.000 | — | 2.00× | 1.00× | — | 50.0% | 1 |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| C | level1 | compile_error | — | 3.000 | — | — | — | — | — | — | 1 |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| level1 | eager | 4 | 3/4 | 75.0% | 50.0% | 25.0% | 0.0% | 1.14× (3) |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| level2 | compile | 1 | 1/1 | 100.0% | — | — | — | — |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("| all | eager | 5 | 4/5 | 80.0% | 60.0% | 40.0% | 0.0% | 1.32× (4) |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("- level1/C: compile_error"), std::string::npos) << md;
}

TEST(BenchSummary, MarkdownEscapesPipesAndNamesMixedTracks) {
  auto records = testing::rich_records();
  records[1].track = "tf32";
  records[2].gpu = "NVIDIA A100";
  std::string md = format_table_markdown(records);
  EXPECT_NE(md.find("elements off \\| max abs error"), std::string::npos) << md;
  EXPECT_NE(md.find("| \\<script>alert(1)\\</script>&\" | level1 |"), std::string::npos) << md;
  EXPECT_NE(md.find("Tracks: fp32, tf32."), std::string::npos) << md;
  EXPECT_NE(md.find("GPUs: NVIDIA H200, NVIDIA A100."), std::string::npos) << md;
  EXPECT_NE(md.find("Mixed tracks"), std::string::npos) << md;
}

size_t display_width(const std::string& line) {
  return static_cast<size_t>(std::count_if(line.begin(), line.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

TEST(BenchSummary, TextTableColumnsAligned) {
  std::string text = format_table_text(hand_computed_records());
  // Blocks: header line, task table, summary table; in each table every line is equally wide
  // because the last column is right-aligned.
  std::vector<std::vector<std::string>> blocks(1);
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty())
      blocks.emplace_back();
    else
      blocks.back().push_back(line);
  }
  ASSERT_EQ(blocks.size(), 3u) << text;
  ASSERT_EQ(blocks[1].size(), 6u) << text;  // header + 5 tasks
  ASSERT_EQ(blocks[2].size(), 7u) << text;  // header + 3 levels x 2 modes
  for (size_t b = 1; b < 3; ++b)
    for (const auto& line : blocks[b])
      EXPECT_EQ(display_width(line), display_width(blocks[b][0])) << line;
  EXPECT_NE(blocks[1][0].find("vs eager"), std::string::npos);
  EXPECT_EQ(blocks[1][0].find("reduce-overhead"), std::string::npos) << "only modes present";
  // The "vs compile" column of A holds exactly 1.00×, right-aligned under its header.
  size_t column_end = blocks[1][0].find("vs compile") + std::string("vs compile").size();
  const std::string& row_a = blocks[1][1];
  ASSERT_EQ(row_a.rfind("A", 0), 0u);
  std::string prefix = row_a.substr(0, row_a.find("1.00×") + std::string("1.00×").size());
  EXPECT_EQ(display_width(prefix), column_end) << row_a;
}

}  // namespace
}  // namespace stitch::bench
