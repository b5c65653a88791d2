// Declarations attached to a compile error's feedback: the identifiers an nvcc error is about are
// read from its message (`identifier "X" is undefined`, `no instance of overloaded function "X"`,
// `namespace "N" has no member "X"`) or, for a call with the wrong arguments (`too few arguments in
// function call`, `argument of type ... is incompatible with parameter of type ...`), from the
// functions called on the failing line; a DeclarationSource (the documentation index, see
// app/doc_declarations.h; a fake in tests) answers with the declaration, and the feedback carries
// it with its path:lines. Without an index the source says so once and the feedback is unchanged.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "verify/feedback.h"

namespace stitch {

class DeclarationSource {
 public:
  virtual ~DeclarationSource() = default;
  // The declaration of `identifier`; `fuzzy`: or of the nearest declared name (a misspelling).
  virtual std::optional<DeclarationNote> find(std::string_view identifier, bool fuzzy) = 0;
};

// An identifier an error is about; `fuzzy` when the compiler did not know the name at all (so a
// near name is the likely meaning), not when a known function was called wrongly.
struct ErrorIdentifier {
  std::string name;
  bool fuzzy = false;
  bool operator==(const ErrorIdentifier&) const = default;
};

// The identifiers one compile error is about, most specific first.
std::vector<ErrorIdentifier> error_identifiers(const Diagnostic& error);

// At most this many declarations per feedback.
inline constexpr size_t kMaxDeclarationNotes = 3;

// Looks up the identifiers of feedback.compile_errors and keeps the first declaration found for
// each error (each declared name once); when any is found, the suggestion names the first.
void attach_declarations(Feedback& feedback, DeclarationSource& source);

}  // namespace stitch
