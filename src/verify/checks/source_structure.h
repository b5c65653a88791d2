// Structure recovered from lexed sources for the static checks (verify/checks/static_checks.h):
// inline asm statements and the PTX they carry, function bodies, namespace-scope objects whose
// initialisation runs code at load time, and the split-precision 3xTF32 pattern. Heuristic by
// nature (no preprocessor, no type checker); each function says what it recognises.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "verify/checks/source_lexer.h"

namespace stitch {

// Reduced-precision math, from the most tolerated to the least (see the tracks in static_checks.h).
enum class ReducedPrecision : uint8_t {
  tf32,      // TF32 tensor-core math or TF32 rounding
  half,      // FP16 / BF16 math or conversions
  low_bits,  // FP8 / FP6 / FP4 / INT8 / INT4 / binary math
};

struct PtxInstruction {
  std::string text;  // the instruction's opcode with its modifiers, e.g. "cvt.rna.tf32.f32"
  ReducedPrecision precision;
};

// PTX instructions with a reduced-precision type modifier (.tf32, .f16, .bf16x2, .e4m3, integer mma
// ...). `ptx` is inline-asm template text, escapes (\n, \t) as written in the source.
std::vector<PtxInstruction> find_reduced_precision_ptx(std::string_view ptx);
bool ptx_rounds_to_tf32(std::string_view ptx);  // has a cvt to .tf32
// L2 cache-policy hints that can keep lines resident (evict_last, createpolicy, ...).
std::vector<std::string> find_l2_cache_hints(std::string_view ptx);

// One asm / __asm__ statement.
struct AsmStatement {
  size_t first_token = 0;                 // the asm keyword
  size_t last_token = 0;                  // its closing parenthesis
  std::string ptx;                        // the template: its string literals concatenated
  std::vector<std::string> output_names;  // identifiers in the output operands' expressions
  std::vector<std::pair<size_t, size_t>>
      input_ranges;                // token ranges [first, last) of input operands
  std::string enclosing_function;  // empty at namespace scope or in an unnamed body
};

// PTX written outside strings (e.g. `cvt.rna.tf32.f32` passed through a stringifying macro):
// chains `cvt.a.b`, `mma.a.b`, `wmma.a.b`, `wgmma.a.b` in code, with the token they start at.
std::vector<std::pair<size_t, std::string>> find_ptx_in_code(const LexedSource& source);

struct FunctionBody {
  std::string name;  // identifier before the parameter list ("operator" for operators)
  size_t name_token = 0;
  size_t open_brace = 0;
  size_t close_brace = 0;  // == tokens.size() when unbalanced
  bool at_namespace_scope = false;
};

// A namespace-scope object whose initialisation runs code when the library is loaded.
struct DynamicInit {
  size_t token = 0;    // where the declaration starts
  std::string name;    // the object's name, when it could be told
  std::string reason;  // "calls load_table()", "type Prefetcher has a user-provided constructor"
};

struct SourceStructure {
  std::vector<FunctionBody> functions;
  std::set<std::string> classes_with_constructors;  // user-provided, non-constexpr constructors
  std::vector<DynamicInit> dynamic_inits;
};

// Walks scopes (namespace, extern "C", class, function) skipping preprocessor lines. Classes with
// user-provided constructors found in the program's other files can be passed in `known`.
SourceStructure analyse_structure(const LexedSource& source,
                                  const std::set<std::string>& known = {});

// The innermost named function whose body contains `token`, or "".
std::string enclosing_function(const std::vector<FunctionBody>& functions, size_t token);

// Every asm statement, with its enclosing function taken from `functions`.
std::vector<AsmStatement> find_asm_statements(const LexedSource& source,
                                              const std::vector<FunctionBody>& functions);

// Evidence of split-precision 3xTF32 (see static_checks.h), across all files of one program.
struct SplitTf32Evidence {
  bool found = false;
  size_t file_index = 0;
  size_t token = 0;  // the rounding that subtracts a rounded value
  std::string how;   // "to_tf32(a[i] - ... a_big ...)"
};
// asm_statements[i] belongs to files[i].
SplitTf32Evidence find_split_tf32(const std::vector<const LexedSource*>& files,
                                  const std::vector<std::vector<AsmStatement>>& asm_statements);

}  // namespace stitch
