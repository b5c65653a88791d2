// Parsers for compiler output: nvcc's front end (EDG), the host compiler (gcc), ptxas, nvlink and
// ld messages become Diagnostic records (verdict.h) with a source snippet, and `ptxas info` lines
// (-Xptxas -v) become one resource report per kernel and target (STYLE.md item 14: compiler
// diagnostics are data). Pure functions over text; the fixtures they are tested on are real nvcc
// output captured in tests/verify/data/.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "verify/verdict.h"

namespace stitch {

// What ptxas reported for one entry function (kernel) compiled for one target.
struct PtxasKernelReport {
  std::string name;          // demangled where possible, else as mangled
  std::string mangled_name;  // as ptxas printed it
  std::string arch;          // "sm_90", "sm_90a"
  int registers = 0;
  int barriers = 0;
  int64_t spill_store_bytes = 0;
  int64_t spill_load_bytes = 0;
  int64_t stack_frame_bytes = 0;
  int64_t shared_bytes = 0;    // static shared memory ("smem")
  int64_t constant_bytes = 0;  // sum of the kernel's cmem[N] banks
  double ptxas_ms = 0;         // ptxas's own "Compile time"
};

// Parses every error and warning in a compiler log. Relative file names are resolved against
// `source_dir` to read a snippet of ±`context_lines` lines around the reported line; a file that
// cannot be read leaves the snippet empty. Notes (gcc's "note:") are appended to the message of the
// diagnostic they follow; duplicates (nvcc runs the preprocessor once per pass) are dropped.
std::vector<Diagnostic> parse_diagnostics(std::string_view log,
                                          const std::filesystem::path& source_dir = {},
                                          int context_lines = 2);

// Diagnostics never quote a file outside the program's sources (HACKS.md row 31): the text of one
// whose file (resolved against `source_dir`, symbolic links followed) lies outside `quotable_dirs`
// (the program's folders and the project's public headers) is withheld: its location and severity
// stay, its message and snippet do not. That covers a host file a directive or `#line` named and
// the toolkit's and system's headers alike. Diagnostics with no file (ptxas, nvlink, ld) stay.
void withhold_foreign_text(std::vector<Diagnostic>& diagnostics,
                           const std::filesystem::path& source_dir,
                           const std::vector<std::filesystem::path>& quotable_dirs);

// The same for a raw compiler log: a message line about such a file becomes `file(line): severity`
// and the indented source echo and caret lines after it are dropped.
std::string withhold_foreign_log_text(std::string_view log, const std::filesystem::path& source_dir,
                                      const std::vector<std::filesystem::path>& quotable_dirs);

// Parses the `ptxas info` lines of a log, in the order the kernels were compiled.
std::vector<PtxasKernelReport> parse_ptxas_report(std::string_view log);

// "  5 | text" lines around `line` (1-based), the line itself marked with '>'. Empty when the file
// cannot be read or has no such line.
std::string read_snippet(const std::filesystem::path& file, int line, int context_lines = 2);

// The C++ demangling of a symbol ("_Z6kernelPf" → "kernel(float*)"), or the symbol unchanged.
std::string demangle_symbol(const std::string& mangled);

}  // namespace stitch
