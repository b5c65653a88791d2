// The Verifier's DeclarationSource (verify/declaration_notes.h) over the documentation index
// (src/rag): compile errors get the declarations they are about, in built-in and LLM modes alike.
// Without an index the source answers nothing and says so once through `progress`.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "app/progress.h"
#include "rag/doc_index.h"
#include "verify/declaration_notes.h"

namespace stitch::app {

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
