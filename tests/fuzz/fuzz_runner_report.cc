// Fuzz target for runner.json (runner/runner_report.h), which the orchestrator reads from the
// sandboxed runner's directory: any input must parse or fail with a message.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "runner/runner_report.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto report = stitch::parse_runner_report(text);
  if (!report.ok() && report.error().message.empty()) {
    std::fprintf(stderr, "fuzz_runner_report: an error without a message\n");
    std::abort();
  }
  return 0;
}
