// Declarations found in C/C++ headers by line-level heuristics (no parser): function prototypes,
// enumerators, macros and named types, each with its line range and text. The index stores them
// so that a compile error naming an unknown identifier can be answered with the declaration of
// that name, or of the nearest name by edit distance (find_declaration in doc_index.h).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "util/enum_names.h"

namespace stitch::rag {

enum class DeclarationKind : uint8_t { function, enumerator, macro, type };
inline constexpr std::array<std::string_view, 4> kDeclarationKindNames = {"function", "enumerator",
                                                                          "macro", "type"};
constexpr const auto& enum_names(DeclarationKind) {
  return kDeclarationKindNames;
}
static_assert(names_every_enumerator(DeclarationKind::type));

struct Declaration {
  std::string name;
  DeclarationKind kind = DeclarationKind::function;
  int line_begin = 0;  // 1-based, inclusive
  int line_end = 0;
  std::string text;  // those lines (at most kDeclarationMaxLines)
};

inline constexpr int kDeclarationMaxLines = 40;

// The declarations of one header's text. Heuristic: a prototype is `type... name(` at the start of
// a statement (or `name(` after a line holding the return type) up to its `;` or `{`; an
// enumerator is `NAME [= value],` inside an enum's braces; a macro is `#define NAME`; a type is
// `struct/class/union/enum NAME {`, `typedef ... NAME;` or the `} NAME;` closing a typedef.
std::vector<Declaration> extract_declarations(std::string_view header_text);

}  // namespace stitch::rag
