// Splits a document into overlapping chunks at line ends, so every chunk cites a line range.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace stitch::rag {

struct ChunkOptions {
  int max_tokens = 1000;     // count_tokens (text_terms.h)
  int overlap_tokens = 100;  // at least this many tokens of the previous chunk's end, in lines
};

struct Chunk {
  int line_begin = 0;  // 1-based, inclusive
  int line_end = 0;
  std::string text;
};

// Lines are packed until the next would pass max_tokens; the next chunk starts at the earliest
// line such that the lines it repeats hold at least overlap_tokens (never the whole previous
// chunk, so chunking always advances). A single line longer than max_tokens is a chunk of its own.
// Blank-only documents give no chunks.
std::vector<Chunk> chunk_lines(std::string_view text, const ChunkOptions& options = {});

}  // namespace stitch::rag
