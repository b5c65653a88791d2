// Fuzz target for an attempt's files that the loop reads back on resume and when routing:
// attempt.json, result.json, draft.json (agents/attempt_files.h), verify.json and feedback.json
// (verify/verify_report.h, verify/feedback.h). Any input must parse or fail with a message; the
// records that parse must round-trip through their writers.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include <nlohmann/json.hpp>

#include "agents/attempt_files.h"
#include "verify/feedback.h"
#include "verify/verify_report.h"

namespace {

[[noreturn]] void property_failed(const char* what) {
  std::fprintf(stderr, "fuzz_attempt_files: property violated: %s\n", what);
  std::abort();
}

template <class T>
void must_say_why(const stitch::Result<T>& result) {
  if (!result.ok() && result.error().message.empty()) property_failed("empty error message");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace stitch;
  using namespace stitch::agents;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded()) return 0;
  if (auto intent = attempt_intent_from_json(doc); intent.ok()) {
    if (!attempt_intent_from_json(attempt_intent_to_json(*intent)).ok())
      property_failed("attempt.json does not read back");
  } else {
    must_say_why(intent);
  }
  if (auto finished = finished_attempt_from_json(doc); finished.ok()) {
    if (!finished_attempt_from_json(finished_attempt_to_json(*finished)).ok())
      property_failed("result.json does not read back");
  } else {
    must_say_why(finished);
  }
  const std::filesystem::path attempt_dir = "/nonexistent/attempts/01";
  if (auto draft = draft_from_json(doc, attempt_dir); draft.ok())
    (void)draft_to_json(*draft, attempt_dir).dump();
  else
    must_say_why(draft);
  must_say_why(verify_report_from_json(doc));
  must_say_why(feedback_from_json(doc));
  return 0;
}
