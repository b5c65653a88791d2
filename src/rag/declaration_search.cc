// Exact, then fuzzy, declaration lookup (declaration_search.h).
#include "rag/declaration_search.h"

#include <algorithm>

#include "rag/text_terms.h"
#include "util/text.h"

namespace stitch::rag {
namespace {

size_t common_prefix(std::string_view a, std::string_view b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n])
    ++n;
  return n;
}

// Prototypes before enumerators, types and macros: a call's error wants the function.
int kind_rank(DeclarationKind kind) {
  switch (kind) {
    case DeclarationKind::function:
      return 0;
    case DeclarationKind::type:
      return 1;
    case DeclarationKind::enumerator:
      return 2;
    case DeclarationKind::macro:
      return 3;
  }
  return 4;
}

Result<std::optional<DeclarationMatch>> match_named(const DocIndex& index, std::string_view asked,
                                                    const std::string& name, int distance) {
  STITCH_ASSIGN_OR_RETURN(std::vector<StoredDeclaration> found, index.declarations_named(name));
  if (found.empty()) return std::optional<DeclarationMatch>();
  // A prototype (ends in ';') before an inline definition of the same name (cuda_runtime.h's
  // template overloads of the runtime API).
  auto rank = [](const StoredDeclaration& d) {
    std::string_view text = trim(d.declaration.text);
    return 2 * kind_rank(d.declaration.kind) + (!text.empty() && text.back() == ';' ? 0 : 1);
  };
  std::stable_sort(
      found.begin(), found.end(),
      [&](const StoredDeclaration& a, const StoredDeclaration& b) { return rank(a) < rank(b); });
  if (found.size() > kMaxDeclarationsPerMatch) found.resize(kMaxDeclarationsPerMatch);
  return std::optional<DeclarationMatch>(
      DeclarationMatch{std::string(asked), distance, std::move(found)});
}

}  // namespace

Result<std::optional<DeclarationMatch>> find_declaration(const DocIndex& index,
                                                         std::string_view identifier) {
  if (identifier.empty()) return std::optional<DeclarationMatch>();
  STITCH_ASSIGN_OR_RETURN(std::optional<DeclarationMatch> exact,
                          match_named(index, identifier, std::string(identifier), 0));
  if (exact) return exact;
  const std::string wanted = lower(identifier);
  const int limit = std::max(1, std::min(3, static_cast<int>(wanted.size()) / 4));
  STITCH_ASSIGN_OR_RETURN(const std::vector<std::string>* names, index.declaration_names());
  const std::string* best = nullptr;
  int best_distance = limit + 1;
  size_t best_prefix = 0;
  for (const std::string& name : *names) {
    int distance = edit_distance(wanted, lower(name), limit);
    if (distance > limit) continue;
    size_t prefix = common_prefix(wanted, lower(name));
    if (distance < best_distance || (distance == best_distance && prefix > best_prefix)) {
      best = &name;
      best_distance = distance;
      best_prefix = prefix;
    }
  }
  if (best == nullptr) return std::optional<DeclarationMatch>();
  return match_named(index, identifier, *best, best_distance);
}

}  // namespace stitch::rag
