// Whether a failed build failed because of the machine, not the program: a full disk, a quota,
// memory exhausted or the compiler killed (the OOM killer), too many open files, a read-only file
// system, a compiler stage that could not be started. Such a build says nothing about the source:
// it is the Verifier's infrastructure_error (never cached, never the program's compile_error), so
// the loop neither spends an attempt on it nor abandons the plan (docs/loop.md).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "util/result.h"
#include "verify/build/compiler.h"

namespace stitch {

// The line of `log` that says the machine failed the build ("nvcc error   : 'cicc' died due to
// signal 9", "cc1plus: fatal error: ...: No space left on device"), if any. A line the compiler
// quotes from the program's source (followed by the caret line under it) never counts, so a program
// cannot pass its own errors off as the machine's.
std::optional<std::string> machine_failure_line(std::string_view log);

// An Error of kind machine naming why, when `result` is a failed build the machine caused (a
// machine_failure_line in its log, or the compiler ended by a signal other than the build's
// timeout); success otherwise (built, or the program's own failure).
Status check_machine_build_failure(const BuildResult& result);

}  // namespace stitch
