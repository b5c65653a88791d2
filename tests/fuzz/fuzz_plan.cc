// Fuzz target for plan.json (plan/plan_json.h), which the loop reads back from plans/ on resume and
// an LLM Planner's plan reaches too: any input must parse or fail with a message, and what parses
// must serialize to a plan that parses to the same plan.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "plan/plan_json.h"

namespace {

[[noreturn]] void property_failed(const char* what) {
  std::fprintf(stderr, "fuzz_plan: property violated: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace stitch::plan;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto plan = parse_plan(text, "fuzz.plan.json");
  if (!plan.ok()) {
    if (plan.error().message.empty()) property_failed("empty error message");
    return 0;
  }
  const std::string serialized = serialize_plan(*plan);
  auto reparsed = parse_plan(serialized, "reserialized.plan.json");
  if (!reparsed.ok()) {
    std::fprintf(stderr, "%s\n", reparsed.error().message.c_str());
    property_failed("a serialized plan does not parse");
  }
  if (serialize_plan(*reparsed) != serialized) property_failed("plan.json is not stable");
  return 0;
}
