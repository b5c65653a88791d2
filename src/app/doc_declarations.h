// The documentation index (src/rag) where the loop uses it: the Verifier's DeclarationSource
// (verify/declaration_notes.h), so compile errors get the declarations they are about in built-in
// and LLM modes alike, and the LLM roles' search (tool and pre-fetched context). Without an index
// the declaration source answers nothing and says so once through `progress`.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "agents/doc_context.h"
#include "app/progress.h"
#include "rag/doc_index.h"
#include "verify/declaration_notes.h"

namespace stitch::app {

// The LLM roles' documentation search (agents/doc_context.h) over the index at `index` (empty:
// rag::default_index_path()), opened once; an empty function when there is no index.
agents::DocSearch documentation_search(const std::filesystem::path& index = {});

class IndexDeclarationSource final : public DeclarationSource {
 public:
  // `index`: empty for rag::default_index_path(). The index is opened on the first lookup.
  IndexDeclarationSource(std::filesystem::path index, ProgressSink progress)
      : index_path_(std::move(index)), progress_(std::move(progress)) {}
  std::optional<DeclarationNote> find(std::string_view identifier, bool fuzzy) override;

 private:
  bool ensure_open();

  std::filesystem::path index_path_;
  ProgressSink progress_;
  std::unique_ptr<rag::DocIndex> index_;
  bool tried_ = false;
};

}  // namespace stitch::app
