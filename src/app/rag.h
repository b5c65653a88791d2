// `stitchcuda rag`: build and update the documentation index, query it, and score it on the
// evaluation set (docs/rag.md). Wires src/rag to this machine: the CUDA toolkit found through nvcc,
// the project's kernels/ folder, libcurl for an optional embeddings endpoint.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "app/progress.h"
#include "rag/doc_index.h"
#include "rag/eval.h"
#include "rag/ingest.h"
#include "rag/search.h"
#include "util/result.h"

namespace stitch::app {

// An OpenAI-compatible /v1/embeddings endpoint; api_base empty: no embeddings (BM25 only).
struct EmbeddingOptions {
  std::string api_base;  // e.g. http://127.0.0.1:8080/v1
  std::string model;
  std::string api_key_env;  // the variable holding the key; empty: none sent
};

// The folders and files `rag index` takes by default: the toolkit's headers (toolkit_sources) under
// the include folder of the nvcc in use, and the project's kernels/.
std::vector<std::filesystem::path> default_rag_roots();

struct RagIndexOptions {
  std::filesystem::path index;               // empty: rag::default_index_path()
  std::vector<std::filesystem::path> paths;  // folders or files of HTML, Markdown, text, headers
  bool defaults = true;                      // also default_rag_roots()
  EmbeddingOptions embed;
  ProgressSink progress;
};

struct RagIndexResult {
  std::filesystem::path index;
  std::vector<std::filesystem::path> roots;
  rag::IndexStats stats;
  rag::IndexCounts counts;
  int64_t embedded = 0;  // chunks embedded this time
};

Result<RagIndexResult> rag_index(const RagIndexOptions& options);

struct RagQueryOptions {
  std::filesystem::path index;
  std::string query;
  int k = 5;
  EmbeddingOptions embed;
};

struct RagQueryResult {
  std::vector<rag::DocHit> hits;
  double ms = 0;  // the search alone (the index already open)
  bool hybrid = false;
};

Result<RagQueryResult> rag_query(const RagQueryOptions& options);

struct RagEvalOptions {
  std::filesystem::path index;
  std::filesystem::path questions;  // empty: the built-in set
  int k = 5;
  EmbeddingOptions embed;
  bool declarations_first = true;  // false: rank by BM25 (or fusion) alone
};

Result<rag::EvalReport> rag_eval(const RagEvalOptions& options);

}  // namespace stitch::app
