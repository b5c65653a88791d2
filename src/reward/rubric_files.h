// The files embedded into stitch_reward at build time (src/reward/CMakeLists.txt): docs/rubric.md
// ("rubric.md") and the LLM judge's prompt template ("judge.md").
#pragma once

#include <string_view>
#include <vector>

namespace stitch::reward {

struct EmbeddedFile {
  std::string_view name;
  std::string_view contents;
};

const std::vector<EmbeddedFile>& embedded_files();

}  // namespace stitch::reward
