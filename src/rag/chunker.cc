// Line-aligned chunking (chunker.h).
#include "rag/chunker.h"

#include "rag/text_terms.h"
#include "util/text.h"

namespace stitch::rag {
namespace {

Chunk make_chunk(const std::vector<std::string_view>& lines, size_t first, size_t last) {
  Chunk chunk;
  chunk.line_begin = static_cast<int>(first) + 1;
  chunk.line_end = static_cast<int>(last) + 1;
  for (size_t i = first; i <= last; ++i) {
    chunk.text += lines[i];
    chunk.text += '\n';
  }
  return chunk;
}

}  // namespace

std::vector<Chunk> chunk_lines(std::string_view text, const ChunkOptions& options) {
  std::vector<std::string_view> lines = lines_of(text);
  std::vector<int> tokens(lines.size());
  for (size_t i = 0; i < lines.size(); ++i)
    tokens[i] = count_tokens(lines[i]);
  std::vector<Chunk> chunks;
  size_t first = 0;
  while (first < lines.size()) {
    size_t last = first;
    int total = tokens[first];
    while (last + 1 < lines.size() && total + tokens[last + 1] <= options.max_tokens)
      total += tokens[++last];
    Chunk chunk = make_chunk(lines, first, last);
    if (!trim(chunk.text).empty()) chunks.push_back(std::move(chunk));
    if (last + 1 >= lines.size()) break;
    size_t next = last + 1;
    int repeated = 0;
    while (next > first + 1 && repeated < options.overlap_tokens)
      repeated += tokens[--next];
    first = next;
  }
  return chunks;
}

}  // namespace stitch::rag
