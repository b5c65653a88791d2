// The adapter sources best/ receives (src/adapters/templates/: main.cc, stitch_extension.cpp,
// model_new.py, README.md, plus include/stitch/program.h), embedded into the library at build time
// by embed_files.cmake; the exporter only fills in values.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace stitch::adapters {

struct EmbeddedFile {
  std::string_view name;  // "main.cc", "stitch/program.h"
  std::string_view contents;
};

const std::vector<EmbeddedFile>& embedded_files();

// The contents of the embedded file `name`; nullopt when there is none.
inline std::optional<std::string_view> embedded_file(std::string_view name) {
  for (const EmbeddedFile& file : embedded_files())
    if (file.name == name) return file.contents;
  return std::nullopt;
}

}  // namespace stitch::adapters
