// Result<T> and Error: the kind an error is created with survives context and propagation, so that
// `main` can map it to an exit code without reading the message.
#include "util/result.h"

#include <gtest/gtest.h>

namespace stitch {
namespace {

Result<int> parse_positive(int value) {
  if (value < 0) return make_error(ErrorKind::bad_input, "{} is negative", value);
  if (value == 0) return make_error("zero");
  return value;
}

Result<int> doubled(int value) {
  STITCH_ASSIGN_OR_RETURN(int parsed, parse_positive(value));
  return parsed * 2;
}

TEST(Result, ErrorsAreWorkFailuresUnlessTheySayOtherwise) {
  EXPECT_EQ(make_error("x {}", 1).kind, ErrorKind::work_failed);
  EXPECT_EQ(make_error(ErrorKind::machine, "no GPU").kind, ErrorKind::machine);
  EXPECT_EQ(make_error(ErrorKind::machine, "no {}", "GPU").message, "no GPU");
}

TEST(Result, TheKindSurvivesContextAndPropagation) {
  const Result<int> bad = doubled(-3);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().kind, ErrorKind::bad_input);
  const Error wrapped = bad.error().with_context("reading options");
  EXPECT_EQ(wrapped.kind, ErrorKind::bad_input);
  EXPECT_EQ(wrapped.message, "reading options: -3 is negative");
  EXPECT_EQ(wrapped.with_kind(ErrorKind::machine).kind, ErrorKind::machine);
  EXPECT_EQ(doubled(0).error().kind, ErrorKind::work_failed);
  EXPECT_EQ(*doubled(4), 8);
}

}  // namespace
}  // namespace stitch
