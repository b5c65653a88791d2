// Fuzz target for state.json (agents/run_state.h), the file `run --resume` reads back first: any
// input must parse or fail with a message, and a state that parses must satisfy what the loop
// indexes by (checked by the reader) and round-trip through its writer unchanged. Also
// result.json's attempt result. Replayed over tests/fuzz/corpus/run_state/ on every build.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include <nlohmann/json.hpp>

#include "agents/run_state.h"

namespace {

[[noreturn]] void property_failed(const char* what) {
  std::fprintf(stderr, "fuzz_run_state: property violated: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace stitch::agents;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded()) return 0;
  if (auto result = attempt_result_from_json(doc); result.ok())
    (void)attempt_result_to_json(*result).dump();
  auto state = run_state_from_json(doc);
  if (!state.ok()) {
    if (state.error().message.empty()) property_failed("empty error message");
    return 0;
  }
  // What the loop reaches for right after loading.
  (void)state->current_plan();
  (void)state->best();
  for (const AttemptRecord& attempt : state->attempts) {
    if (state->attempt(attempt.number) == nullptr) property_failed("attempt not found by number");
    (void)state->last_finished(attempt.kind, attempt.subtask);
    if (attempt.result) (void)attempt.result->verdict_name();
  }
  if (state->phase == Phase::coding &&
      static_cast<size_t>(state->current_subtask) >= state->subtasks.size())
    property_failed("coding past the last subtask");
  const nlohmann::json written = run_state_to_json(*state);
  auto reread = run_state_from_json(written);
  if (!reread.ok()) {
    std::fprintf(stderr, "%s\n", reread.error().message.c_str());
    property_failed("a written state does not read back");
  }
  if (run_state_to_json(*reread) != written) property_failed("state.json is not stable");
  return 0;
}
