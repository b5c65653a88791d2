// Embeddings over HTTP and their storage in the index (embeddings.h).
#include "rag/embeddings.h"

#include <chrono>
#include <cstdlib>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace stitch::rag {
namespace {

using nlohmann::json;

// What is sent of a chunk: servers cap an input's tokens (llama.cpp's default batch is 512-2048),
// and the start of a chunk says what it is about.
constexpr size_t kMaxEmbeddedChars = 4000;

Result<std::vector<float>> vector_of(const json& embedding) {
  if (!embedding.is_array() || embedding.empty())
    return make_error("an embedding is not a non-empty array");
  if (embedding.front().is_number()) {
    std::vector<float> v;
    v.reserve(embedding.size());
    for (const json& x : embedding) {
      if (!x.is_number()) return make_error("an embedding holds a non-number");
      v.push_back(x.get<float>());
    }
    return v;
  }
  // One vector per token: the mean.
  std::vector<float> mean;
  for (const json& token : embedding) {
    STITCH_ASSIGN_OR_RETURN(std::vector<float> v, vector_of(token));
    if (mean.empty()) mean.assign(v.size(), 0.0f);
    if (v.size() != mean.size()) return make_error("per-token vectors of different sizes");
    for (size_t i = 0; i < v.size(); ++i)
      mean[i] += v[i];
  }
  for (float& x : mean)
    x /= static_cast<float>(embedding.size());
  return mean;
}

}  // namespace

Result<std::vector<std::vector<float>>> parse_embeddings(std::string_view body, size_t expected) {
  json doc = json::parse(body, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("data") || !doc["data"].is_array())
    return make_error("the embeddings response has no data array");
  const json& data = doc["data"];
  if (data.size() != expected)
    return make_error("the embeddings response holds {} vectors for {} inputs", data.size(),
                      expected);
  std::vector<std::vector<float>> out(expected);
  for (size_t i = 0; i < data.size(); ++i) {
    const json& item = data[i];
    size_t index = item.contains("index") && item["index"].is_number_unsigned()
                       ? item["index"].get<size_t>()
                       : i;
    if (index >= expected || !item.contains("embedding"))
      return make_error("embeddings response item {} is malformed", i);
    STITCH_ASSIGN_OR_RETURN(out[index], vector_of(item["embedding"]));
  }
  for (const auto& v : out)
    if (v.empty() || v.size() != out.front().size())
      return make_error("the embeddings response's vectors differ in size or are missing");
  return out;
}

Result<std::vector<std::vector<float>>> HttpEmbedder::embed(const std::vector<std::string>& texts) {
  json input = json::array();
  for (const std::string& text : texts)
    input.push_back(text.substr(0, kMaxEmbeddedChars));
  llm::HttpRequest request;
  request.url = endpoint_.api_base + "/embeddings";
  request.headers = {"Content-Type: application/json"};
  if (!endpoint_.api_key_env.empty()) {
    const char* key = std::getenv(endpoint_.api_key_env.c_str());
    if (key == nullptr || *key == '\0')
      return make_error(ErrorKind::bad_input, "${} (the embeddings API key) is not set",
                        endpoint_.api_key_env);
    request.headers.push_back(std::string("Authorization: Bearer ") + key);
  }
  request.body = json{{"model", model_}, {"input", input}}.dump();
  request.stall_timeout_s = endpoint_.timeout_s;
  llm::HttpResponse response = transport_.send(request);
  if (response.failure != llm::TransportFailure::none)
    return make_error(ErrorKind::machine, "embeddings at {}: {}", request.url,
                      response.failure_message);
  if (response.status != 200)
    return make_error("embeddings at {}: HTTP {}: {}", request.url, response.status,
                      response.body.substr(0, 300));
  auto parsed = parse_embeddings(response.body, texts.size());
  if (!parsed.ok()) return parsed.error().with_context("embeddings at " + request.url);
  return parsed;
}

Result<EmbedStats> embed_missing(DocIndex& index, Embedder& embedder, int batch,
                                 const std::function<void(const std::string&)>& progress) {
  auto started = std::chrono::steady_clock::now();
  STITCH_ASSIGN_OR_RETURN(std::optional<std::string> stored_model, index.meta("embedding_model"));
  STITCH_ASSIGN_OR_RETURN(IndexCounts counts, index.counts());
  if (stored_model && *stored_model != embedder.model() && counts.embedded_chunks > 0)
    return make_error(ErrorKind::bad_input,
                      "{} holds embeddings of model '{}', not '{}': index into a new file to "
                      "switch models",
                      index.path().string(), *stored_model, embedder.model());
  STITCH_TRY(index.set_meta("embedding_model", embedder.model()));
  EmbedStats stats;
  while (true) {
    STITCH_ASSIGN_OR_RETURN(std::vector<ChunkRecord> chunks, index.chunks_without_embedding(batch));
    if (chunks.empty()) break;
    std::vector<std::string> texts;
    for (const ChunkRecord& chunk : chunks)
      texts.push_back(chunk.text);
    STITCH_ASSIGN_OR_RETURN(std::vector<std::vector<float>> vectors, embedder.embed(texts));
    STITCH_TRY(index.begin());
    for (size_t i = 0; i < chunks.size(); ++i)
      STITCH_TRY(index.set_embedding(chunks[i].id, vectors[i]));
    STITCH_TRY(index.commit());
    stats.embedded += static_cast<int64_t>(chunks.size());
    if (progress && stats.embedded % (batch * 10) < batch)
      progress(fmt::format("embedded {} of {} chunks", stats.embedded + counts.embedded_chunks,
                           counts.chunks));
  }
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return stats;
}

}  // namespace stitch::rag
