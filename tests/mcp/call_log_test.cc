// FileCallLog: one complete line per record, appended across reopenings, readable while the
// server still runs (nothing is held in a buffer).
#include "mcp/call_log.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "app/temp_dir.h"

namespace stitch::mcp {
namespace {

std::vector<nlohmann::json> read_lines(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);)
    lines.push_back(nlohmann::json::parse(line));
  return lines;
}

TEST(FileCallLog, AppendsOneLinePerRecordAtOnce) {
  app::testing::TempDir dir("mcp_call_log");
  const auto record_dir = dir.path() / "runs" / "mcp-x";
  {
    auto log = FileCallLog::open(record_dir);
    ASSERT_TRUE(log.ok()) << log.error().message;
    (*log)->record({{"kind", "request"}, {"id", 1}});
    // Readable before the log is closed: written through, not buffered.
    EXPECT_EQ(read_lines(record_dir / "calls.jsonl").size(), 1u);
    (*log)->record({{"kind", "response"}, {"text", std::string("bad \xff byte")}});
  }
  auto again = FileCallLog::open(record_dir);
  ASSERT_TRUE(again.ok());
  (*again)->record({{"kind", "request"}, {"id", 2}});
  auto lines = read_lines(record_dir / "calls.jsonl");
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0]["id"], 1);
  EXPECT_EQ(lines[1]["kind"], "response");  // the invalid byte was replaced, not thrown on
  EXPECT_EQ(lines[2]["id"], 2);
}

TEST(FileCallLog, AnUnmakeableDirectoryIsBadInput) {
  auto log = FileCallLog::open("/proc/self/no/such");
  ASSERT_FALSE(log.ok());
  EXPECT_EQ(log.error().kind, ErrorKind::bad_input);
}

TEST(UtcTimestamp, IsIso8601WithMilliseconds) {
  const std::string at = utc_timestamp();
  ASSERT_EQ(at.size(), 24u) << at;
  EXPECT_EQ(at[10], 'T');
  EXPECT_EQ(at.back(), 'Z');
}

}  // namespace
}  // namespace stitch::mcp
