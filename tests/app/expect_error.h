// is_error: whether an app function's Result is an Error of the given kind whose message says
// `part`, for EXPECT_TRUE (the message and the kind are printed when it is not).
#pragma once

#include <string>

#include <gtest/gtest.h>

#include "util/result.h"

namespace stitch::app::testing {

template <class T>
::testing::AssertionResult is_error(const Result<T>& result, ErrorKind kind,
                                    const std::string& part) {
  if (result.ok())
    return ::testing::AssertionFailure() << "no Error (wanted one saying " << part << ")";
  const Error& error = result.error();
  if (error.kind != kind)
    return ::testing::AssertionFailure()
           << "kind " << static_cast<int>(error.kind) << ": " << error.message;
  if (error.message.find(part) == std::string::npos)
    return ::testing::AssertionFailure() << "'" << part << "' not in: " << error.message;
  return ::testing::AssertionSuccess();
}

}  // namespace stitch::app::testing
