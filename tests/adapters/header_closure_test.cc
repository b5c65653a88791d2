// local_header_closure: the transitive local includes of a program and their places under
// best/include/, on a tree that mixes sibling headers, the repo's kernels/ and toolkit headers.
#include "adapters/header_closure.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "fake_capture.h"
#include "util/fs.h"

namespace stitch::adapters {
namespace {

using testing::TempDir;

std::vector<std::string> relatives(const std::vector<LocalHeader>& headers) {
  std::vector<std::string> out;
  for (const LocalHeader& h : headers)
    out.push_back(h.relative.generic_string());
  return out;
}

TEST(HeaderClosure, FollowsQuotedIncludesThroughSiblingsAndIncludeDirs) {
  TempDir temp;
  auto source = testing::write_program_tree(temp.path());
  ASSERT_TRUE(source.ok()) << source.error().message;
  auto headers = local_header_closure({*source}, testing::repo_include_dirs());
  ASSERT_TRUE(headers.ok()) << headers.error().message;
  std::vector<std::string> got = relatives(*headers);
  // program_support.cuh includes "runtime.cuh" beside itself: it stays beside it under kernels/.
  for (const char* want : {"stitch/program.h", "kernels/program_support.cuh", "kernels/runtime.cuh",
                           "helpers.cuh", "detail/more.cuh"})
    EXPECT_NE(std::find(got.begin(), got.end(), want), got.end()) << want;
  // Not copied: angle includes and a quoted include found nowhere local (the toolkit's).
  EXPECT_EQ(std::find(got.begin(), got.end(), "cuda_runtime.h"), got.end());
  EXPECT_TRUE(std::is_sorted(got.begin(), got.end()));
  for (const LocalHeader& h : *headers) {
    EXPECT_TRUE(h.file.is_absolute()) << h.file;
    EXPECT_TRUE(std::filesystem::exists(h.file)) << h.file;
  }
  auto runtime = std::find_if(headers->begin(), headers->end(), [](const LocalHeader& h) {
    return h.relative == "kernels/runtime.cuh";
  });
  ASSERT_NE(runtime, headers->end());
  EXPECT_EQ(runtime->file, std::filesystem::canonical(testing::kSourceDir / "kernels/runtime.cuh"));
}

TEST(HeaderClosure, NoIncludesGivesNothing) {
  TempDir temp;
  ASSERT_TRUE(write_file_atomic(temp.path() / "p.cu", "#include <cstdio>\nint x;\n").ok());
  auto headers = local_header_closure({temp.path() / "p.cu"}, {});
  ASSERT_TRUE(headers.ok()) << headers.error().message;
  EXPECT_TRUE(headers->empty());
}

TEST(HeaderClosure, RefusesIncludesBestCannotCarry) {
  TempDir temp;
  ASSERT_TRUE(write_file_atomic(temp.path() / "outside.cuh", "#pragma once\n").ok());
  ASSERT_TRUE(
      write_file_atomic(temp.path() / "src" / "up.cu", "#include \"../outside.cuh\"\n").ok());
  auto up = local_header_closure({temp.path() / "src" / "up.cu"}, {});
  ASSERT_FALSE(up.ok());
  EXPECT_NE(up.error().message.find("climbs out"), std::string::npos) << up.error().message;

  ASSERT_TRUE(write_file_atomic(temp.path() / "abs.cu",
                                "#include \"" + (temp.path() / "outside.cuh").string() + "\"\n")
                  .ok());
  auto absolute = local_header_closure({temp.path() / "abs.cu"}, {});
  ASSERT_FALSE(absolute.ok());
  EXPECT_NE(absolute.error().message.find("absolute"), std::string::npos);

  // Two sources in different folders, each with its own "h.cuh": both would be include/h.cuh.
  ASSERT_TRUE(write_file_atomic(temp.path() / "a" / "a.cu", "#include \"h.cuh\"\n").ok());
  ASSERT_TRUE(write_file_atomic(temp.path() / "a" / "h.cuh", "// a\n").ok());
  ASSERT_TRUE(write_file_atomic(temp.path() / "b" / "b.cu", "#include \"h.cuh\"\n").ok());
  ASSERT_TRUE(write_file_atomic(temp.path() / "b" / "h.cuh", "// b\n").ok());
  auto clash = local_header_closure({temp.path() / "a" / "a.cu", temp.path() / "b" / "b.cu"}, {});
  ASSERT_FALSE(clash.ok());
  EXPECT_NE(clash.error().message.find("include/h.cuh"), std::string::npos)
      << clash.error().message;
}

TEST(HeaderClosure, MissingSourceIsAnError) {
  auto headers = local_header_closure({"/nonexistent/program.cu"}, {});
  ASSERT_FALSE(headers.ok());
  EXPECT_NE(headers.error().message.find("/nonexistent/program.cu"), std::string::npos);
}

}  // namespace
}  // namespace stitch::adapters
