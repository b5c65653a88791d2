// Fuzz target for graph.json parsing: any input must parse or fail cleanly, and whatever parses
// must survive everything a loaded graph goes through (serialize, re-parse, print, cost) with the
// round-trip properties the IR promises. Built as a libFuzzer binary (STITCH_FUZZ=ON) and, always,
// as a replay test over tests/fuzz/corpus/graph/.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "ir/ir.h"
#include "ir/print.h"

namespace {

[[noreturn]] void property_failed(const char* what) {
  std::fprintf(stderr, "fuzz_graph: property violated: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace stitch::ir;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto graph = parse_graph(text, "fuzz.json");
  if (!graph.ok()) {
    if (graph.error().message.empty()) property_failed("empty error message");
    return 0;
  }
  if (!verify(*graph).ok()) property_failed("parse_graph returned an unverified graph");
  const std::string serialized = serialize_graph(*graph);
  auto reparsed = parse_graph(serialized, "reserialized.json");
  if (!reparsed.ok()) {
    std::fprintf(stderr, "%s\n%s\n", reparsed.error().message.c_str(), serialized.c_str());
    property_failed("serialized graph does not parse");
  }
  if (!(*reparsed == *graph)) property_failed("parse(serialize(g)) != g");
  if (serialize_graph(*reparsed) != serialized) property_failed("serialization is not stable");
  const std::string table = format_node_table(*graph);
  const std::string summary = format_graph_summary(*graph);
  if (table.empty() || summary.empty()) property_failed("empty printout");
  return 0;
}
