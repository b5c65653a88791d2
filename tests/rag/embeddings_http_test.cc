// Embeddings over real HTTP (libcurl) from the scripted OpenAI-compatible server's /v1/embeddings
// (support/scripted_openai_server.py), which answers one vector per token as llama.cpp's server
// does with pooling "none": vectors are pooled, stored, and used for hybrid ranking.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "llm/http_transport.h"
#include "rag/doc_index.h"
#include "rag/embeddings.h"
#include "rag/ingest.h"
#include "rag/search.h"
#include "support/scripted_server.h"

namespace stitch::rag {
namespace {

namespace fs = std::filesystem;

TEST(EmbeddingsHttp, PerTokenVectorsFromTheServerArePooledStoredAndRanked) {
  const fs::path dir = fs::temp_directory_path() / ("rag-embed-http-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  testing::ScriptedServer server(dir / "server",
                                 {{"embeddings", {{"dims", 32}, {"per_token", true}}}});
  ASSERT_GT(server.port(), 0);
  auto index = DocIndex::open(dir / "rag.sqlite", DocIndex::Access::read_write);
  ASSERT_TRUE(index.ok()) << index.error().message;
  ASSERT_TRUE(
      ingest_files(**index, collect_files({fs::path(STITCH_TEST_DATA_DIR) / "rag" / "corpus"}))
          .ok());
  ::setenv("STITCH_TEST_EMBED_KEY", "secret-key", 1);
  llm::CurlTransport transport;
  llm::Endpoint endpoint;
  endpoint.api_base = server.api_base();
  endpoint.api_key_env = "STITCH_TEST_EMBED_KEY";
  HttpEmbedder embedder(transport, endpoint, "scripted-embed");
  auto stats = embed_missing(**index, embedder, 3);
  ASSERT_TRUE(stats.ok()) << stats.error().message;
  EXPECT_EQ(stats->embedded, 4);

  std::vector<nlohmann::json> requests = server.requests();
  ASSERT_EQ(requests.size(), 2u) << "4 chunks, 3 a request";
  EXPECT_EQ(requests[0]["path"], "/v1/embeddings");
  EXPECT_EQ(requests[0]["body"]["model"], "scripted-embed");
  EXPECT_EQ(requests[0]["body"]["input"].size(), 3u);
  EXPECT_TRUE(requests[0]["authorization"]["present"].get<bool>());

  SearchOptions options;
  options.k = 4;
  options.embedder = &embedder;
  auto hits = search(**index, "producer warp group consumer", options);
  ASSERT_TRUE(hits.ok()) << hits.error().message;
  ASSERT_FALSE(hits->empty());
  EXPECT_EQ(fs::path(hits->front().path).filename(), "notes.txt");
  EXPECT_EQ(server.requests().size(), 3u) << "the query was embedded too";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace stitch::rag
