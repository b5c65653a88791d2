// Fuzz target for the ELF reader (verify/checks/elf_reader.h), which reads a built candidate
// library: any bytes must parse or fail with a message, never read outside the input.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "verify/checks/elf_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto info = stitch::parse_elf_dynamic(bytes);
  if (!info.ok() && info.error().message.empty()) {
    std::fprintf(stderr, "fuzz_elf: an error without a message\n");
    std::abort();
  }
  return 0;
}
