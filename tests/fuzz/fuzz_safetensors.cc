// Fuzz target for safetensors header parsing: any bytes must parse or fail cleanly; whatever
// parses must describe tensors that lie inside the buffer, and writing those tensors again must
// give a file that parses to the same tensors and bytes. Built as a libFuzzer binary
// (STITCH_FUZZ=ON) and, always, as a replay test over tests/fuzz/corpus/safetensors/.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "io/safetensors.h"

namespace {

[[noreturn]] void property_failed(const char* what) {
  std::fprintf(stderr, "fuzz_safetensors: property violated: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace stitch::io;
  const std::string_view file(reinterpret_cast<const char*>(data), size);
  auto header = parse_safetensors_header(file, size);
  if (!header.ok()) {
    if (header.error().message.empty()) property_failed("empty error message");
    return 0;
  }
  if (header->data_offset + header->data_bytes != size) property_failed("sizes do not add up");
  std::vector<TensorView> views;
  for (const TensorInfo& info : header->tensors) {
    if (info.begin > info.end || info.end > header->data_bytes)
      property_failed("tensor outside the data section");
    const auto* bytes = reinterpret_cast<const std::byte*>(data) + header->data_offset + info.begin;
    views.push_back({info.name, info.dtype, info.shape, {bytes, info.byte_size()}});
  }
  auto rewritten = serialize_safetensors(views, header->metadata);
  if (!rewritten.ok()) {
    std::fprintf(stderr, "%s\n", rewritten.error().message.c_str());
    property_failed("a parsed file cannot be written again");
  }
  auto again = parse_safetensors_header(*rewritten, rewritten->size());
  if (!again.ok()) property_failed("a written file does not parse");
  if (again->metadata != header->metadata) property_failed("metadata changed");
  if (again->tensors.size() != views.size()) property_failed("tensor count changed");
  for (size_t i = 0; i < views.size(); ++i) {
    const TensorInfo& info = again->tensors[i];
    if (info.name != views[i].name || info.dtype != views[i].dtype ||
        info.shape != views[i].shape || info.byte_size() != views[i].data.size())
      property_failed("tensor changed");
    if (!views[i].data.empty() && std::memcmp(rewritten->data() + again->data_offset + info.begin,
                                              views[i].data.data(), views[i].data.size()) != 0)
      property_failed("tensor bytes changed");
  }
  return 0;
}
