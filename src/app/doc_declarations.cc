// Compile errors' declarations from the documentation index (doc_declarations.h).
#include "app/doc_declarations.h"

#include "rag/declaration_search.h"
#include "rag/search.h"

namespace stitch::app {

agents::DocSearch documentation_search(const std::filesystem::path& index) {
  auto opened = rag::open_index_for_search(index);
  if (!opened.ok()) return {};
  std::shared_ptr<const rag::DocIndex> shared = std::move(*opened);
  return [shared](std::string_view query, int k) { return rag::search(*shared, query, k); };
}

bool IndexDeclarationSource::ensure_open() {
  if (tried_) return index_ != nullptr;
  tried_ = true;
  auto opened = rag::open_index_for_search(index_path_);
  if (!opened.ok()) {
    say(progress_, "note: compile errors get no declarations from the documentation index: " +
                       opened.error().message);
    return false;
  }
  index_ = std::move(*opened);
  return true;
}

std::optional<DeclarationNote> IndexDeclarationSource::find(std::string_view identifier,
                                                            bool fuzzy) {
  if (!ensure_open()) return std::nullopt;
  auto match = rag::find_declaration(*index_, identifier);
  if (!match.ok() || !*match) return std::nullopt;
  const rag::DeclarationMatch& found = **match;
  if (found.distance > 0 && !fuzzy) return std::nullopt;
  const rag::StoredDeclaration& best = found.declarations.front();
  return DeclarationNote{
      std::string(identifier),     best.declaration.name,     best.path,
      best.declaration.line_begin, best.declaration.line_end, best.declaration.text};
}

}  // namespace stitch::app
