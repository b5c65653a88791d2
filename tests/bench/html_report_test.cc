// The HTML report: text is escaped, every per-task number is printed as the tables print it, the
// JSON data island reads back to the same records, and the charts have one group per task.
#include "bench/html_report.h"

#include <gtest/gtest.h>

#include "bench/bench_summary.h"
#include "sample_records.h"

namespace stitch::bench {
namespace {

using testing::kEvilName;
using testing::rich_records;

size_t count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1))
    ++n;
  return n;
}

// The text of the element that starts with `open_prefix` and ends at the next `close`.
std::string element(const std::string& html, const std::string& open_prefix,
                    const std::string& close) {
  size_t start = html.find(open_prefix);
  if (start == std::string::npos) return "";
  size_t end = html.find(close, start);
  return end == std::string::npos ? "" : html.substr(start, end - start);
}

std::string render(const std::vector<BenchRecord>& records) {
  return render_html_report(records, {"Bench <nightly> & co", "2025-01-01T00:00:00Z"});
}

TEST(HtmlReport, EscapesEveryText) {
  std::string html = render(rich_records());
  EXPECT_EQ(html.find(kEvilName), std::string::npos);
  EXPECT_EQ(html.find("<script>alert"), std::string::npos);
  EXPECT_EQ(html.find("<img src=x"), std::string::npos);
  EXPECT_EQ(html.find("<b>tags</b>"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;&amp;&quot;"), std::string::npos);
  EXPECT_NE(html.find("reason with &lt;b&gt;tags&lt;/b&gt; &amp; &#39;quotes&#39;"),
            std::string::npos);
  EXPECT_NE(html.find("<title>Bench &lt;nightly&gt; &amp; co</title>"), std::string::npos);
  // The only <script> is the data island, and nothing closes it early.
  EXPECT_EQ(count(html, "<script"), 1u);
  EXPECT_EQ(count(html, "</script>"), 1u);
}

// A pass without every sandbox layer (--insecure-sandbox) is marked on its row, and only there.
TEST(HtmlReport, InsecureSandboxRowIsMarked) {
  std::vector<BenchRecord> records = rich_records();
  records[0].insecure_sandbox = {"seccomp", "compiler.mount_namespace"};
  std::string html = render(records);
  EXPECT_EQ(count(html, "INSECURE SANDBOX: ran without seccomp, compiler.mount_namespace"), 1u);
  EXPECT_EQ(count(html, " insecure-sandbox\""), 1u);
  EXPECT_EQ(count(render(rich_records()), "INSECURE SANDBOX"), 0u);
}

TEST(HtmlReport, SelfContained) {
  std::string html = render(rich_records());
  for (const char* external : {"http://", "https://", "src=\"", "<link", "@import", "url("}) {
    // The SVG namespace is an identifier, not a resource.
    std::string without_ns = html;
    for (size_t at; (at = without_ns.find("http://www.w3.org/2000/svg")) != std::string::npos;)
      without_ns.erase(at, 26);
    EXPECT_EQ(without_ns.find(external), std::string::npos) << external;
  }
  EXPECT_NE(html.find("<style>"), std::string::npos);
  EXPECT_EQ(html.find("<script>"), std::string::npos) << "no executable script";
}

TEST(HtmlReport, EveryPerTaskNumberAppearsAsFormatted) {
  auto records = rich_records();
  std::string html = render(records);
  std::vector<std::string> modes = {"eager", "compile", "reduce-overhead"};
  for (const auto& r : records) {
    std::string key = html_escape(r.key());
    std::string row = element(html,
                              "<tr class=\"outcome-" + std::string(bench_outcome_name(r.outcome)) +
                                  "\" data-key=\"" + key + "\"",
                              "</tr>");
    ASSERT_FALSE(row.empty()) << r.key();
    std::vector<std::string> expected = {format_ms(r.ours_ms),       format_ms(r.ours_p10_ms),
                                         format_ms(r.ours_p90_ms),   format_ms(r.refine_before_ms),
                                         std::to_string(r.attempts), format_seconds(r.wall_s),
                                         format_percent(r.floor_fraction())};
    for (const auto& mode : modes) {
      expected.push_back(format_ms(r.baseline_ms(mode)));
      expected.push_back(format_speedup(r.speedup(mode)));
    }
    for (const auto& number : expected)
      EXPECT_NE(row.find("<td class=\"num\">" + number + "</td>"), std::string::npos)
          << r.key() << ": " << number << " in " << row;

    // The chart group shows each speedup, or the outcome for a task that did not pass.
    std::string group = element(html, "<g class=\"task-group\" data-key=\"" + key + "\"", "</g>");
    ASSERT_FALSE(group.empty()) << r.key();
    for (const auto& mode : modes) {
      if (auto s = r.speedup(mode)) {
        EXPECT_NE(group.find(">" + format_speedup(s) + "</text>"), std::string::npos) << group;
      }
    }
    if (!r.passed()) {
      EXPECT_NE(group.find("class=\"task-gap\""), std::string::npos) << group;
      EXPECT_NE(group.find(">" + std::string(bench_outcome_name(r.outcome)) + "</text>"),
                std::string::npos)
          << group;
    }

    // Kernel times in the breakdown of passed tasks.
    if (r.passed() && !r.top_kernels.empty()) {
      std::string section = element(
          html, "<section class=\"kernel-breakdown\" data-key=\"" + key + "\"", "</section>");
      ASSERT_FALSE(section.empty()) << r.key();
      for (const auto& kernel : r.top_kernels) {
        EXPECT_NE(section.find(html_escape(kernel.name)), std::string::npos) << kernel.name;
        EXPECT_NE(section.find(">" + format_ms(kernel.ms) + " ms</td>"), std::string::npos)
            << kernel.name;
      }
    }
  }
}

TEST(HtmlReport, KernelBreakdownAddsOther) {
  auto records = rich_records();
  std::string html = render(records);
  const BenchRecord& gemm = records[0];
  std::string section =
      element(html, "<section class=\"kernel-breakdown\" data-key=\"level2/", "</section>");
  double other = *gemm.ours_ms - gemm.top_kernels[0].ms - gemm.top_kernels[1].ms;
  EXPECT_NE(section.find(">other</td><td class=\"num\">" + format_ms(other) + " ms</td>"),
            std::string::npos)
      << section;
  EXPECT_EQ(count(section, "<rect class=\"kernel-segment\""), 3u);
  // Only passed tasks with kernels get a breakdown.
  EXPECT_EQ(count(html, "<section class=\"kernel-breakdown\""), 2u);
}

TEST(HtmlReport, DataIslandParsesBackToTheRecords) {
  auto records = rich_records();
  std::string html = render(records);
  std::string open = "<script type=\"application/json\" id=\"stitch-results\">";
  std::string island = element(html, open, "</script>");
  ASSERT_FALSE(island.empty());
  auto doc = nlohmann::json::parse(island.substr(open.size()), nullptr, false);
  ASSERT_FALSE(doc.is_discarded());
  EXPECT_EQ(doc["format"], kResultsFormat);
  EXPECT_EQ(doc["version"], 1);
  ASSERT_EQ(doc["records"].size(), records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    auto back = record_from_json(doc["records"][i]);
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(*back, records[i]);
  }
}

TEST(HtmlReport, ChartHasOneGroupPerTaskAndTheReferenceLine) {
  auto records = rich_records();
  std::string html = render(records);
  std::string chart = element(html, "<svg id=\"speedup-chart\"", "</svg>");
  ASSERT_FALSE(chart.empty());
  EXPECT_EQ(count(chart, "<g class=\"task-group\""), records.size());
  EXPECT_EQ(count(chart, "class=\"reference-line\""), 1u);
  EXPECT_NE(chart.find(">1×</text>"), std::string::npos);
  // One bar per known speedup: gemm 3, evil 1, slow 1.
  EXPECT_EQ(count(chart, "<rect class=\"bar\""), 5u);
  EXPECT_EQ(count(chart, "class=\"task-gap\""), 2u);  // wrong and refused
}

TEST(HtmlReport, HeaderAndSummary) {
  std::string html = render(rich_records());
  EXPECT_NE(html.find("GPU: NVIDIA H200 · Track: fp32 · Generated 2025-01-01T00:00:00Z"),
            std::string::npos);
  EXPECT_NE(html.find("5 tasks · 3 passed · 1 wrong · 1 refused"), std::string::npos);
  std::string summary = element(html, "<table id=\"summary-table\"", "</table>");
  ASSERT_FALSE(summary.empty());
  // level1: evil (1.25× eager), 19_ReLU wrong, 3_Matmul (0.33× eager): 2/3 correct, 1 of 3 > 1×.
  EXPECT_NE(summary.find("<td>level1</td><td>eager</td><td class=\"num\">3</td><td class=\"num\">"
                         "2/3</td><td class=\"num\">66.7%</td><td class=\"num\">33.3%</td>"),
            std::string::npos)
      << summary;
}

TEST(HtmlReport, EmptyBenchStillRenders) {
  std::string html = render({});
  EXPECT_NE(html.find("<svg id=\"speedup-chart\""), std::string::npos);
  EXPECT_NE(html.find("\"records\":[]"), std::string::npos);
  EXPECT_NE(html.find("0 tasks"), std::string::npos);
}

}  // namespace
}  // namespace stitch::bench
