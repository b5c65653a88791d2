// `stitchcuda rag` wired to this machine (rag.h).
#include "app/rag.h"

#include <chrono>
#include <memory>

#include <fmt/format.h>

#include "llm/http_transport.h"
#include "rag/embeddings.h"
#include "verify/build/compiler.h"

namespace stitch::app {
namespace fs = std::filesystem;
namespace {

fs::path index_path(const fs::path& given) {
  return given.empty() ? rag::default_index_path() : given;
}

// The embedder an EmbeddingOptions names (nullptr for none); `transport` must outlive it.
Result<std::unique_ptr<rag::Embedder>> make_embedder(const EmbeddingOptions& options,
                                                     llm::HttpTransport& transport) {
  if (options.api_base.empty()) return std::unique_ptr<rag::Embedder>();
  if (options.model.empty())
    return make_error(ErrorKind::bad_input, "--embed-url needs --embed-model");
  llm::Endpoint endpoint;
  endpoint.api_base = options.api_base;
  endpoint.api_key_env = options.api_key_env;
  endpoint.timeout_s = 120;
  return std::unique_ptr<rag::Embedder>(
      std::make_unique<rag::HttpEmbedder>(transport, endpoint, options.model));
}

}  // namespace

std::vector<fs::path> default_rag_roots() {
  std::vector<fs::path> roots;
  if (auto nvcc = locate_nvcc(); nvcc.ok()) {
    std::error_code ec;
    fs::path bin = fs::canonical(*nvcc, ec).parent_path();
    if (ec) bin = nvcc->parent_path();
    roots = rag::toolkit_sources(bin.parent_path() / "include");
  }
  fs::path kernels = default_stitch_include_dir().parent_path() / "kernels";
  if (fs::is_directory(kernels)) roots.push_back(kernels);
  return roots;
}

Result<RagIndexResult> rag_index(const RagIndexOptions& options) {
  RagIndexResult result;
  result.index = index_path(options.index);
  if (options.defaults) result.roots = default_rag_roots();
  result.roots.insert(result.roots.end(), options.paths.begin(), options.paths.end());
  for (const fs::path& root : options.paths)
    if (!fs::exists(root))
      return make_error(ErrorKind::bad_input, "{}: no such file or folder", root.string());
  if (result.roots.empty())
    return make_error(ErrorKind::bad_input,
                      "nothing to index: no CUDA toolkit found (nvcc) and no paths given");
  STITCH_ASSIGN_OR_RETURN(auto index,
                          rag::DocIndex::open(result.index, rag::DocIndex::Access::read_write));
  rag::IngestOptions ingest;
  ingest.progress = options.progress;
  say(options.progress, fmt::format("indexing into {}", result.index.string()));
  STITCH_ASSIGN_OR_RETURN(result.stats,
                          rag::ingest_files(*index, rag::collect_files(result.roots), ingest));
  llm::CurlTransport transport;
  STITCH_ASSIGN_OR_RETURN(std::unique_ptr<rag::Embedder> embedder,
                          make_embedder(options.embed, transport));
  if (embedder) {
    STITCH_ASSIGN_OR_RETURN(rag::EmbedStats embedded,
                            rag::embed_missing(*index, *embedder, 32, options.progress));
    result.embedded = embedded.embedded;
  }
  STITCH_ASSIGN_OR_RETURN(result.counts, index->counts());
  return result;
}

Result<RagQueryResult> rag_query(const RagQueryOptions& options) {
  STITCH_ASSIGN_OR_RETURN(auto index, rag::open_index_for_search(index_path(options.index)));
  llm::CurlTransport transport;
  STITCH_ASSIGN_OR_RETURN(std::unique_ptr<rag::Embedder> embedder,
                          make_embedder(options.embed, transport));
  rag::SearchOptions search;
  search.k = options.k;
  search.embedder = embedder.get();
  RagQueryResult result;
  auto started = std::chrono::steady_clock::now();
  STITCH_ASSIGN_OR_RETURN(result.hits, rag::search(*index, options.query, search));
  result.ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  result.hybrid = embedder != nullptr;
  return result;
}

Result<rag::EvalReport> rag_eval(const RagEvalOptions& options) {
  STITCH_ASSIGN_OR_RETURN(auto index, rag::open_index_for_search(index_path(options.index)));
  STITCH_ASSIGN_OR_RETURN(
      std::vector<rag::EvalQuestion> questions,
      options.questions.empty() ? rag::builtin_eval_set() : rag::read_eval_set(options.questions));
  llm::CurlTransport transport;
  STITCH_ASSIGN_OR_RETURN(std::unique_ptr<rag::Embedder> embedder,
                          make_embedder(options.embed, transport));
  rag::SearchOptions search;
  search.k = options.k;
  search.embedder = embedder.get();
  search.declarations_first = options.declarations_first;
  return rag::run_eval(*index, questions, search);
}

}  // namespace stitch::app
