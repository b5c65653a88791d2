// Reads what a shared library asks of the dynamic loader: DT_NEEDED libraries, undefined (imported)
// dynamic symbols and defined (exported) ones. Follows the loader's own view (program headers and
// the dynamic segment), with .dynsym from the section headers as a second source when present, so
// stripping section headers hides nothing. Every read is bounds-checked: a truncated, garbage or
// hostile file yields an Error, never a crash.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace stitch {

struct ElfDynamicInfo {
  bool is_64_bit = true;
  std::vector<std::string> needed;            // DT_NEEDED, in order
  std::vector<std::string> imported_symbols;  // undefined dynamic symbols, sorted, unique
  std::vector<std::string>
      exported_symbols;  // defined, global or weak, default/protected visibility
};

Result<ElfDynamicInfo> parse_elf_dynamic(std::string_view bytes);
Result<ElfDynamicInfo> read_elf_dynamic(const std::filesystem::path& path);

}  // namespace stitch
