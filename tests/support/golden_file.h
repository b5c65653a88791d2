// Golden files: a test's output compared exactly with a checked-in file. With STITCH_UPDATE_GOLDEN=1
// a differing (or missing) file is rewritten — and the test still FAILS, naming the file, so a
// switch left set never makes a golden test pass without checking. Review the diff, then rerun
// without the switch; a file that already matches passes either way. Under CI (CI set) the switch is
// refused: goldens are only compared there.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "util/fs.h"

namespace stitch::testing {

inline bool golden_update_requested() {
  const char* update = std::getenv("STITCH_UPDATE_GOLDEN");
  return update != nullptr && std::string(update) == "1";
}

// Adds a gtest failure unless `actual` equals the file at `path` (gtest prints the diff).
inline void expect_golden(const std::filesystem::path& path, const std::string& actual) {
  auto expected = read_file(path);
  if (expected.ok() && *expected == actual) return;
  if (golden_update_requested()) {
    if (const char* ci = std::getenv("CI"); ci != nullptr && *ci != '\0') {
      ADD_FAILURE() << path << " differs, and STITCH_UPDATE_GOLDEN=1 is refused under CI";
      return;
    }
    const Status written = write_file_atomic(path, actual);
    ASSERT_TRUE(written.ok()) << "cannot rewrite " << path << ": " << written.error().message;
    ADD_FAILURE() << "rewrote " << path << " (STITCH_UPDATE_GOLDEN=1): review the diff, then "
                  << "rerun without the switch; a golden test never passes while it rewrites";
    return;
  }
  ASSERT_TRUE(expected.ok()) << path << " missing: run with STITCH_UPDATE_GOLDEN=1, review it";
  EXPECT_EQ(actual, *expected) << path << " changed; if intended, rerun with "
                               << "STITCH_UPDATE_GOLDEN=1 and review the diff";
}

}  // namespace stitch::testing
