// The HTML report rendered by a real browser: headless Chromium loads it, its DOM holds the charts
// and the summary, and a screenshot has far more ink than a blank page. Skips (visibly) where no
// Chromium is installed; scripts/setup.sh installs the `chromium` package.
#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

#include "bench/html_report.h"
#include "sample_records.h"
#include "util/fs.h"
#include "util/process.h"

namespace stitch::bench {
namespace {

std::string find_browser() {
  for (const char* name : {"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"})
    if (std::string path = find_in_path(name); !path.empty()) return path;
  return "";
}

size_t count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1))
    ++n;
  return n;
}

class ChromiumRender : public ::testing::Test {
 protected:
  void SetUp() override {
    browser_ = find_browser();
    if (browser_.empty())
      GTEST_SKIP() << "no chromium, chromium-browser or google-chrome on PATH: the report is not "
                      "rendered (scripts/setup.sh installs the chromium package)";
    dir_ = fs::temp_directory_path() / fmt::format("stitch_bench_chromium_{}", ::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // One headless run with a fresh profile; `extra` selects what it produces.
  ProcessResult run_browser(const std::string& profile, const fs::path& page,
                            std::vector<std::string> extra) {
    ProcessSpec spec;
    spec.argv = {browser_,
                 "--headless=new",
                 "--no-sandbox",
                 "--disable-gpu",
                 "--disable-dev-shm-usage",
                 "--no-first-run",
                 "--no-default-browser-check",
                 "--disable-extensions",
                 "--user-data-dir=" + (dir_ / profile).string()};
    spec.argv.insert(spec.argv.end(), extra.begin(), extra.end());
    spec.argv.push_back("file://" + page.string());
    spec.timeout_s = 60;
    spec.env["HOME"] = dir_.string();  // nothing written into the user's home
    SystemProcessRunner runner;
    auto result = runner.run(spec);
    EXPECT_TRUE(result.ok()) << (result.ok() ? "" : result.error().message);
    return result.ok() ? *result : ProcessResult{};
  }

  std::string browser_;
  fs::path dir_;
};

// Width and height from a PNG's IHDR chunk; {0, 0} when the file is not a PNG.
std::pair<uint32_t, uint32_t> png_size(const std::string& bytes) {
  static const std::string kSignature = "\x89PNG\r\n\x1a\n";
  if (bytes.size() < 24 || bytes.compare(0, 8, kSignature) != 0 ||
      bytes.compare(12, 4, "IHDR") != 0)
    return {0, 0};
  auto be32 = [&](size_t at) {
    uint32_t v = 0;
    for (size_t i = 0; i < 4; ++i)
      v = (v << 8) | static_cast<unsigned char>(bytes[at + i]);
    return v;
  };
  return {be32(16), be32(20)};
}

TEST_F(ChromiumRender, DomHasChartsAndScreenshotHasInk) {
  auto records = testing::rich_records();
  for (int i = 0; i < 8; ++i) {  // enough tasks to fill the screenshot
    auto extra =
        testing::make_record(fmt::format("{}_Extra", i + 20), "level2", BenchOutcome::passed,
                             1.0 + i, {{"eager", 2.0 + 0.5 * i}, {"compile", 1.5 + 0.25 * i}});
    records.push_back(extra);
  }
  fs::path page = dir_ / "report.html";
  ASSERT_TRUE(
      write_file_atomic(page, render_html_report(records, {"Chromium render", "now"})).ok());

  ProcessResult dom = run_browser("profile-dom", page, {"--dump-dom"});
  ASSERT_TRUE(dom.succeeded()) << dom.describe() << "\n" << dom.stderr_text;
  EXPECT_NE(dom.stdout_text.find("id=\"speedup-chart\""), std::string::npos) << dom.stdout_text;
  EXPECT_EQ(count(dom.stdout_text, "class=\"task-group\""), records.size());
  EXPECT_GE(count(dom.stdout_text, "<rect class=\"bar\""), records.size());
  EXPECT_NE(dom.stdout_text.find("class=\"reference-line\""), std::string::npos);
  EXPECT_NE(dom.stdout_text.find("id=\"summary-table\""), std::string::npos);
  EXPECT_NE(dom.stdout_text.find("class=\"kernel-segment\""), std::string::npos);
  // The browser parsed the escaped name as text, not as a script element.
  EXPECT_EQ(count(dom.stdout_text, "<script"), 1u);

  // A blank page of the same size is the yardstick for "something was drawn".
  fs::path blank_page = dir_ / "blank.html";
  ASSERT_TRUE(write_file_atomic(blank_page, "<!DOCTYPE html><html><body></body></html>").ok());
  std::vector<std::string> shot_flags = {"--window-size=1400,2000", "--hide-scrollbars"};
  auto screenshot = [&](const std::string& name, const fs::path& of) {
    fs::path png = dir_ / (name + ".png");
    auto flags = shot_flags;
    flags.push_back("--screenshot=" + png.string());
    ProcessResult shot = run_browser("profile-" + name, of, flags);
    EXPECT_TRUE(shot.succeeded()) << shot.describe() << "\n" << shot.stderr_text;
    auto bytes = read_file(png);
    return bytes.ok() ? *bytes : std::string();
  };
  std::string report_png = screenshot("report", page);
  std::string blank_png = screenshot("blank", blank_page);
  ASSERT_FALSE(report_png.empty()) << "no screenshot written";
  ASSERT_FALSE(blank_png.empty()) << "no blank screenshot written";
  EXPECT_EQ(png_size(report_png), std::make_pair(1400u, 2000u));
  EXPECT_GT(report_png.size(), 3 * blank_png.size())
      << "report " << report_png.size() << " bytes, blank page " << blank_png.size();
}

}  // namespace
}  // namespace stitch::bench
