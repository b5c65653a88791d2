// Documentation search (search.h): BM25, and reciprocal rank fusion with embeddings when present.
#include "rag/search.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>

#include <fmt/format.h>

#include "rag/doc_index.h"
#include "rag/embeddings.h"
#include "rag/text_terms.h"
#include "util/text.h"

namespace stitch::rag {
namespace {

// Reciprocal rank fusion's constant (Cormack et al. 2009): a document's fused score is the sum
// over rankings of 1 / (kRrf + rank).
constexpr double kRrf = 60;

// At most this many chunks lead the ranking for the declarations of one query (overloads).
constexpr size_t kDeclaredChunksPerName = 3;

Result<std::vector<RankedChunk>> fuse(const DocIndex& index, std::string_view query,
                                      const std::vector<RankedChunk>& lexical,
                                      const SearchOptions& options) {
  STITCH_ASSIGN_OR_RETURN(std::vector<std::vector<float>> vectors,
                          options.embedder->embed({std::string(query)}));
  STITCH_ASSIGN_OR_RETURN(std::vector<RankedChunk> dense,
                          index.nearest(vectors.front(), options.candidates));
  std::map<int64_t, double> fused;
  for (const std::vector<RankedChunk>* ranking :
       std::initializer_list<const std::vector<RankedChunk>*>{&lexical, &dense})
    for (size_t rank = 0; rank < ranking->size(); ++rank)
      fused[(*ranking)[rank].id] += 1.0 / (kRrf + static_cast<double>(rank + 1));
  std::vector<RankedChunk> out;
  for (const auto& [id, score] : fused)
    out.push_back({id, score});
  std::stable_sort(out.begin(), out.end(),
                   [](const RankedChunk& a, const RankedChunk& b) { return a.score > b.score; });
  return out;
}

// Whether a query word looks like an API name (cudaMalloc, CUDNN_DATA_FLOAT, curand_init, fp16)
// rather than an English word: only those are looked up among the declarations.
bool api_like(std::string_view word) {
  if (word.size() < 4) return false;
  bool lower_seen = false;
  for (char c : word) {
    if (c == '_' || std::isdigit(static_cast<unsigned char>(c))) return true;
    if (std::islower(static_cast<unsigned char>(c))) lower_seen = true;
    if (lower_seen && std::isupper(static_cast<unsigned char>(c))) return true;
  }
  return !lower_seen;  // ALLCAPS
}

// Chunks that declare a name the query spells out come first (in the query's order), then the
// ranking as it was: someone who names cublasLtMatmul wants its prototype, not the fifty comments
// that mention it.
Result<std::vector<RankedChunk>> declarations_first(const DocIndex& index, std::string_view query,
                                                    std::vector<RankedChunk> ranked) {
  std::vector<RankedChunk> first;
  auto listed = [&](int64_t id) {
    return std::any_of(first.begin(), first.end(),
                       [&](const RankedChunk& r) { return r.id == id; });
  };
  for (std::string_view word : identifiers(query)) {
    if (!api_like(word)) continue;
    STITCH_ASSIGN_OR_RETURN(std::vector<StoredDeclaration> declared,
                            index.declarations_named(word));
    for (const StoredDeclaration& stored : declared) {
      STITCH_ASSIGN_OR_RETURN(std::optional<int64_t> id, index.chunk_holding(stored));
      if (id && !listed(*id)) first.push_back({*id, 0});
      if (first.size() >= kDeclaredChunksPerName) break;
    }
  }
  if (first.empty()) return ranked;
  double top = ranked.empty() ? 1.0 : ranked.front().score;
  for (size_t i = 0; i < first.size(); ++i)
    first[i].score = top + static_cast<double>(first.size() - i);
  for (const RankedChunk& r : ranked)
    if (!listed(r.id)) first.push_back(r);
  return first;
}

}  // namespace

std::string citation(const DocHit& hit) {
  if (hit.line_begin == hit.line_end) return fmt::format("{}:{}", hit.path, hit.line_begin);
  return fmt::format("{}:{}-{}", hit.path, hit.line_begin, hit.line_end);
}

Result<std::vector<DocHit>> search(const DocIndex& index, std::string_view query, int k) {
  SearchOptions options;
  options.k = k;
  return search(index, query, options);
}

Result<std::vector<DocHit>> search(const DocIndex& index, std::string_view query,
                                   const SearchOptions& options) {
  const std::string terms = fts_query(query);
  if (terms.empty())
    return make_error(ErrorKind::bad_input, "the query '{}' has no searchable word", query);
  const int depth = std::max(options.k, options.candidates);
  STITCH_ASSIGN_OR_RETURN(std::vector<RankedChunk> ranked, index.bm25(terms, depth));
  if (options.embedder != nullptr) {
    STITCH_ASSIGN_OR_RETURN(IndexCounts counts, index.counts());
    if (counts.embedded_chunks > 0) {
      STITCH_ASSIGN_OR_RETURN(ranked, fuse(index, query, ranked, options));
    }
  }
  if (options.declarations_first) {
    STITCH_ASSIGN_OR_RETURN(ranked, declarations_first(index, query, std::move(ranked)));
  }
  std::vector<DocHit> hits;
  for (const RankedChunk& r : ranked) {
    if (static_cast<int>(hits.size()) >= options.k) break;
    STITCH_ASSIGN_OR_RETURN(ChunkRecord chunk, index.chunk(r.id));
    hits.push_back({chunk.path, chunk.line_begin, chunk.line_end, r.score, chunk.text});
  }
  return hits;
}

DocHit focus_hit(const DocHit& hit, std::string_view query, int radius) {
  std::vector<std::string> words;
  for (std::string_view word : identifiers(query))
    if (word.size() > 2) words.push_back(lower(word));
  std::vector<std::string_view> lines = lines_of(hit.text);
  int center = -1;
  for (size_t i = 0; i < lines.size() && center < 0; ++i) {
    std::string low = lower(lines[i]);
    for (const std::string& word : words)
      if (low.find(word) != std::string::npos) center = static_cast<int>(i);
  }
  if (center < 0) return hit;
  int first = std::max(0, center - radius);
  int last = std::min(static_cast<int>(lines.size()) - 1, center + radius);
  DocHit focused = hit;
  focused.line_begin = hit.line_begin + first;
  focused.line_end = hit.line_begin + last;
  focused.text.clear();
  for (int i = first; i <= last; ++i) {
    focused.text += lines[static_cast<size_t>(i)];
    focused.text += '\n';
  }
  return focused;
}

std::filesystem::path default_index_path() {
  if (const char* path = std::getenv("STITCH_RAG_INDEX"); path && *path) return path;
  if (const char* cache = std::getenv("XDG_CACHE_HOME"); cache && *cache)
    return std::filesystem::path(cache) / "stitchcuda" / "rag.sqlite";
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::filesystem::path(home) / ".cache" / "stitchcuda" / "rag.sqlite";
  return std::filesystem::path(".stitchcuda-rag.sqlite");
}

Result<std::unique_ptr<DocIndex>> open_index_for_search(const std::filesystem::path& path) {
  return DocIndex::open(path.empty() ? default_index_path() : path, DocIndex::Access::read_only);
}

}  // namespace stitch::rag
