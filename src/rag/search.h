// The documentation search that the CLI (`stitchcuda rag query`), the LLM roles, the Verifier's
// feedback and the MCP server share: a query in, the best chunks out, each with the path and line
// range it came from (its citation). BM25 over SQLite FTS5 always; when the index holds embeddings
// and an embedder is given, BM25 and cosine similarity are fused by reciprocal rank (docs/rag.md).
// This header is the stable API other modules call; the index itself is in doc_index.h.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.h"

namespace stitch::rag {

class DocIndex;
class Embedder;

// One chunk that matched a query. score: higher is better — BM25 negated, or the fused
// reciprocal-rank score with hybrid ranking; chunks put first for declaring a name the query
// spells out score just above the best of the rest.
struct DocHit {
  std::string path;    // the source file as it was indexed (absolute)
  int line_begin = 0;  // 1-based, inclusive
  int line_end = 0;
  double score = 0;
  std::string text;  // the chunk's text
};

// "path:12-40" (or "path:12" for one line).
std::string citation(const DocHit& hit);

// The k best chunks for `query` by BM25 (identifiers are matched whole and by their camelCase /
// underscore parts). An empty result is not an error; a query with no searchable word is.
Result<std::vector<DocHit>> search(const DocIndex& index, std::string_view query, int k);

struct SearchOptions {
  int k = 5;
  // Embeds the query for hybrid ranking; nullptr (or an index without embeddings): BM25 only.
  Embedder* embedder = nullptr;
  int candidates = 50;  // how deep each ranking goes before fusion
  // Chunks declaring an API name the query spells out (cudaMallocAsync, CUDNN_DATA_FLOAT) lead
  // the ranking; false: the BM25 (or fused) ranking alone.
  bool declarations_first = true;
};
Result<std::vector<DocHit>> search(const DocIndex& index, std::string_view query,
                                   const SearchOptions& options);

// The part of a hit around its first line that names a word of `query` (case-insensitive): at most
// 2 * radius + 1 lines, with the line range narrowed to match (the whole hit when none matches).
DocHit focus_hit(const DocHit& hit, std::string_view query, int radius);

// $STITCH_RAG_INDEX, else $XDG_CACHE_HOME/stitchcuda/rag.sqlite, else
// ~/.cache/stitchcuda/rag.sqlite.
std::filesystem::path default_index_path();

// Opens the index at `path` (default_index_path() when empty) for reading. An Error naming the path
// and `stitchcuda rag index` when there is none.
Result<std::unique_ptr<DocIndex>> open_index_for_search(const std::filesystem::path& path = {});

}  // namespace stitch::rag
