// Golden files shared by the golden tests (plans, generated programs): compare a text with its
// checked-in copy, or rewrite the copy when asked. STITCH_UPDATE_GOLDEN=1 rewrites the file and
// still fails the test, so a switch left set never lets a changed output pass; under CI (CI set)
// rewriting is refused, goldens are only compared there.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "util/fs.h"

namespace stitch::testing_support {

inline bool golden_update_requested() {
  const char* update = std::getenv("STITCH_UPDATE_GOLDEN");
  return update != nullptr && std::string(update) == "1";
}

// Expects `actual` to equal the file at `path`; `what` names the output in the failure message.
inline void expect_matches_golden(const std::string& path, const std::string& actual,
                                  const std::string& what) {
  if (golden_update_requested()) {
    if (const char* ci = std::getenv("CI"); ci != nullptr && *ci != '\0') {
      ADD_FAILURE() << "STITCH_UPDATE_GOLDEN=1 under CI: goldens are compared, never rewritten, here";
      return;
    }
    auto current = read_file(path);
    if (current.ok() && *current == actual) return;  // nothing to rewrite: an honest pass
    ASSERT_TRUE(write_file_atomic(path, actual).ok()) << "cannot write " << path;
    ADD_FAILURE() << "rewrote " << path << " (" << what
                  << "): review the diff, then rerun without STITCH_UPDATE_GOLDEN";
    return;
  }
  auto expected = read_file(path);
  ASSERT_TRUE(expected.ok()) << path << " missing: run with STITCH_UPDATE_GOLDEN=1";
  EXPECT_EQ(actual, *expected) << what << " changed; if intended, rerun with STITCH_UPDATE_GOLDEN=1"
                               << " and review the diff";
}

}  // namespace stitch::testing_support
