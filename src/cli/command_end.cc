// How a command's end is printed and becomes an exit code (commands.h), shared by `stitchcuda` and
// `stitchcuda-serve`.
#include <fmt/format.h>

#include "cli/commands.h"

namespace stitch::cli {

void print_progress(const std::string& line) {
  fmt::print(stderr, "{}\n", line);
}

int exit_code(const Result<CommandEnd>& end) {
  if (end.ok()) return *end == CommandEnd::succeeded ? kExitOk : kExitFailure;
  fmt::print(stderr, "error: {}\n", end.error().message);
  return end.error().kind == ErrorKind::bad_input ? kExitBadInput : kExitFailure;
}

}  // namespace stitch::cli
