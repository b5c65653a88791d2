// Reads what a shared library asks of the dynamic loader: DT_NEEDED libraries, undefined (imported)
// dynamic symbols and defined (exported) ones, and the functions it runs at load and unload
// (init/fini entries, resolved through their relocations to the functions' names). Follows the loader's own view (program headers and
// the dynamic segment), with .dynsym from the section headers as a second source when present, so
// stripping section headers hides nothing. Every read is bounds-checked: a truncated, garbage or
// hostile file yields an Error, never a crash.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace stitch {

// A function the dynamic loader runs when it loads or unloads the library.
struct ElfLoadHook {
  // DT_INIT, DT_INIT_ARRAY, DT_PREINIT_ARRAY, DT_FINI, DT_FINI_ARRAY, or IRELATIVE (an ifunc
  // resolver, run while the library is relocated).
  std::string table;
  uint64_t address = 0;
  // The function at `address` (.symtab, else .dynsym) or the symbol the slot's relocation names;
  // empty when nothing names it.
  std::string symbol;
};

struct ElfDynamicInfo {
  bool is_64_bit = true;
  std::vector<std::string> needed;            // DT_NEEDED, in order
  std::vector<std::string> imported_symbols;  // undefined dynamic symbols, sorted, unique
  std::vector<std::string>
      exported_symbols;  // defined, global or weak, default/protected visibility
  std::vector<std::string> exported_functions;  // of those, STT_FUNC with global binding
  std::vector<ElfLoadHook> load_hooks;          // in table order
};

Result<ElfDynamicInfo> parse_elf_dynamic(std::string_view bytes);
Result<ElfDynamicInfo> read_elf_dynamic(const std::filesystem::path& path);

}  // namespace stitch
