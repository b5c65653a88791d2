// Atomic writes and whole-file reads.
#include "util/fs.h"

#include <gtest/gtest.h>

namespace stitch {
namespace {

TEST(Fs, AtomicWriteReplacesWholeFileAndLeavesNoTemporary) {
  fs::path dir = fs::temp_directory_path() / "stitch_fs_test";
  fs::remove_all(dir);
  fs::path file = dir / "nested" / "a.json";
  ASSERT_TRUE(write_file_atomic(file, "first").ok());
  ASSERT_TRUE(write_file_atomic(file, "second").ok());
  auto text = read_file(file);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "second");
  int entries = 0;
  for (const auto& entry : fs::directory_iterator(file.parent_path())) {
    (void)entry;
    ++entries;
  }
  EXPECT_EQ(entries, 1);
}

TEST(Fs, ReadMissingFileNamesIt) {
  auto text = read_file("/nonexistent/stitch/file.txt");
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.error().message.find("/nonexistent/stitch/file.txt"), std::string::npos);
}

TEST(Fs, WriteIntoUnwritablePlaceFails) {
  EXPECT_FALSE(write_file_atomic("/proc/stitch_cannot_write_here/x", "data").ok());
}

}  // namespace
}  // namespace stitch
