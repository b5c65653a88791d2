// Fuzz target for slots.json (runner/spec.h), the runner's description of its parameters, inputs
// and outputs: any input must parse or fail with a message, in both modes; its distribution and
// IPC-handle fields parse alone too.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "runner/spec.h"

namespace {

template <class T>
void must_say_why(const stitch::Result<T>& result) {
  if (!result.ok() && result.error().message.empty()) {
    std::fprintf(stderr, "fuzz_slots: an error without a message\n");
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  must_say_why(stitch::runner::parse_slots(text, false, 0));
  must_say_why(stitch::runner::parse_slots(text, true, 2));
  must_say_why(stitch::runner::parse_distribution(text.substr(0, 64)));
  must_say_why(stitch::runner::parse_ipc_handle(text.substr(0, 256)));
  return 0;
}
