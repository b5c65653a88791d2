// Optional dense retrieval: vectors for chunks and queries from an OpenAI-compatible
// /v1/embeddings endpoint (vLLM, llama.cpp server, hosted APIs), sent through src/llm's
// HttpTransport. A server that returns one vector per token (llama.cpp with pooling "none" returns
// a list of vectors per input) is mean-pooled here.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "llm/chat.h"
#include "llm/http_transport.h"
#include "rag/doc_index.h"
#include "util/result.h"

namespace stitch::rag {

class Embedder {
 public:
  virtual ~Embedder() = default;
  // One vector per text, in order.
  virtual Result<std::vector<std::vector<float>>> embed(const std::vector<std::string>& texts) = 0;
  // Names the vectors' space: an index holds vectors of one model only.
  virtual std::string model() const = 0;
};

// The `data` of an /v1/embeddings response as one vector per input, ordered by `index`; an entry
// whose `embedding` is a list of vectors is mean-pooled. An Error when the body is not such a
// response, the count is not `expected`, or the vectors' sizes differ.
Result<std::vector<std::vector<float>>> parse_embeddings(std::string_view body, size_t expected);

class HttpEmbedder final : public Embedder {
 public:
  HttpEmbedder(llm::HttpTransport& transport, llm::Endpoint endpoint, std::string model)
      : transport_(transport), endpoint_(std::move(endpoint)), model_(std::move(model)) {}
  Result<std::vector<std::vector<float>>> embed(const std::vector<std::string>& texts) override;
  std::string model() const override { return model_; }

 private:
  llm::HttpTransport& transport_;
  llm::Endpoint endpoint_;
  std::string model_;
};

struct EmbedStats {
  int64_t embedded = 0;
  double seconds = 0;
};

// Embeds every chunk that has no vector yet, `batch` chunks per request. An index already holding
// another model's vectors is refused (re-index into a fresh file to switch models).
Result<EmbedStats> embed_missing(DocIndex& index, Embedder& embedder, int batch = 32,
                                 const std::function<void(const std::string&)>& progress = {});

}  // namespace stitch::rag
