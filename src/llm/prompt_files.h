// The prompt templates (src/llm/prompts/*.md) and the program ABI header they quote
// (include/stitch/program.h), embedded into the library at build time by
// src/adapters/embed_files.cmake, so the installed binary needs no source tree.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace stitch::llm {

struct EmbeddedFile {
  std::string_view name;  // "coder_generate.md", "stitch/program.h"
  std::string_view contents;
};

const std::vector<EmbeddedFile>& embedded_files();

// The contents of the embedded file `name`; nullopt when there is none.
inline std::optional<std::string_view> embedded_file(std::string_view name) {
  for (const EmbeddedFile& file : embedded_files())
    if (file.name == name) return file.contents;
  return std::nullopt;
}

}  // namespace stitch::llm
