// Files embedded into stitch_rag at build time by src/adapters/embed_files.cmake (the evaluation
// set, src/rag/eval_questions.json), so the installed binary needs no source tree.
#pragma once

#include <string_view>
#include <vector>

namespace stitch::rag {

struct EmbeddedFile {
  std::string_view name;
  std::string_view contents;
};

const std::vector<EmbeddedFile>& embedded_files();

}  // namespace stitch::rag
