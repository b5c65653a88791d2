// The declaration a compile error is about: an identifier the compiler did not know (perhaps
// misspelled) or a function called with the wrong arguments, looked up among the declarations the
// index holds (declarations.h): the exact name first, then the nearest names by edit distance.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "rag/doc_index.h"
#include "util/result.h"

namespace stitch::rag {

struct DeclarationMatch {
  std::string asked;  // the identifier looked up
  int distance = 0;   // 0: that very name; else the edit distance to the name found
  std::vector<StoredDeclaration> declarations;  // of one name (overloads: a few), best first
};

inline constexpr size_t kMaxDeclarationsPerMatch = 3;

// nullopt when no declared name is within max(1, min(3, length / 4)) edits of `identifier`
// (case-insensitive); ties go to the name sharing the longest prefix with it.
Result<std::optional<DeclarationMatch>> find_declaration(const DocIndex& index,
                                                         std::string_view identifier);

}  // namespace stitch::rag
