// Host code that escapes the identifier rules (HACKS.md rows 27 and 29), for the static checks
// (verify/checks/static_checks.h). Internal to src/verify.
//   Load-time hooks by any spelling: constructor/destructor attributes (__attribute__, [[gnu::]],
//   [[using gnu: ]]), ifunc resolvers (run while the library is relocated), section attributes that
//   name a load- or unload-time section (.init_array, .preinit_array, .ctors, .init, and their fini
//   counterparts) also when the name is split ("." "init_array"), built by a macro (refused: it
//   cannot be checked) or written in asm (.section / .pushsection), and #define'd strings naming
//   one. A string that merely mentions .init_array (a printf) is nothing. Raw system calls: syscall
//   / sysenter / int $0x80 / svc in inline asm (PTX has none of them), and data directives (.byte,
//   .long, ...) that would emit hand-encoded machine code, in asm templates or in #define'd strings
//   an asm statement may use.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "verify/checks/source_lexer.h"
#include "verify/checks/source_structure.h"
#include "verify/verdict.h"

namespace stitch {

struct HookFinding {
  size_t token = 0;  // where it was seen
  HackKind kind;
  std::string matched;
  std::string why;
};

std::vector<HookFinding> find_load_hooks(const LexedSource& source,
                                         const std::vector<AsmStatement>& asm_statements);

std::vector<HookFinding> find_raw_syscalls(const LexedSource& source,
                                           const std::vector<AsmStatement>& asm_statements);

}  // namespace stitch
