// The documentation index over the fixture corpus (tests/rag/corpus): ingest, incremental
// re-index, BM25 search with citations, declarations (exact and fuzzy), embeddings with hybrid
// ranking through a fake transport, and the evaluation's scoring.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "llm/http_transport.h"
#include "rag/declaration_search.h"
#include "rag/doc_index.h"
#include "rag/embeddings.h"
#include "rag/eval.h"
#include "rag/ingest.h"
#include "rag/search.h"
#include "util/fs.h"

namespace stitch::rag {
namespace {

namespace fs = std::filesystem;

const fs::path kCorpus = fs::path(STITCH_TEST_DATA_DIR) / "rag" / "corpus";

class RagIndex : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("rag-index-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "docs");
    for (const auto& entry : fs::directory_iterator(kCorpus))
      fs::copy_file(entry.path(), dir_ / "docs" / entry.path().filename());
    auto index = DocIndex::open(dir_ / "cache" / "rag.sqlite", DocIndex::Access::read_write);
    ASSERT_TRUE(index.ok()) << index.error().message;
    index_ = std::move(*index);
  }
  void TearDown() override {
    index_.reset();
    fs::remove_all(dir_);
  }
  IndexStats ingest() {
    auto stats = ingest_files(*index_, collect_files({dir_ / "docs"}));
    EXPECT_TRUE(stats.ok()) << stats.error().message;
    return stats.ok() ? *stats : IndexStats{};
  }
  std::vector<DocHit> query(std::string_view q, int k = 3) {
    auto hits = search(*index_, q, k);
    EXPECT_TRUE(hits.ok()) << hits.error().message;
    return hits.ok() ? *hits : std::vector<DocHit>{};
  }

  fs::path dir_;
  std::unique_ptr<DocIndex> index_;
};

TEST_F(RagIndex, IngestsEveryKindAndCitesLines) {
  IndexStats stats = ingest();
  EXPECT_EQ(stats.files, 4);
  EXPECT_EQ(stats.added, 4);
  std::vector<DocHit> hits = query("tensor memory accelerator swizzle");
  ASSERT_FALSE(hits.empty());
  EXPECT_EQ(fs::path(hits[0].path).filename(), "guide.md");
  EXPECT_EQ(hits[0].line_begin, 1);
  EXPECT_EQ(hits[0].line_end, 8);
  EXPECT_EQ(citation(hits[0]), hits[0].path + ":1-8");
  hits = query("occupancy registers");
  ASSERT_FALSE(hits.empty());
  EXPECT_EQ(fs::path(hits[0].path).filename(), "page.html");
  EXPECT_EQ(hits[0].text.find("<p>"), std::string::npos) << "tags stripped";
  EXPECT_EQ(hits[0].text.find("occupancyScript"), std::string::npos) << "script bodies dropped";
  EXPECT_EQ(hits[0].text.find("color: red"), std::string::npos) << "style bodies dropped";
}

TEST_F(RagIndex, IdentifiersMatchWholeAndByTheirParts) {
  ingest();
  std::vector<DocHit> hits = query("MINIBLAS_EPILOGUE_RELU_BIAS");
  ASSERT_FALSE(hits.empty());
  EXPECT_NE(hits[0].text.find("MINIBLAS_EPILOGUE_RELU_BIAS"), std::string::npos);
  hits = query("matmul desc set attribute");
  ASSERT_FALSE(hits.empty());
  EXPECT_NE(hits[0].text.find("miniblasMatmulDescSetAttribute"), std::string::npos);
  EXPECT_FALSE(search(*index_, "the of", 3).ok()) << "no searchable word";
}

TEST_F(RagIndex, ReindexSkipsUnchangedReplacesChangedRemovesDeletedSkipsDuplicates) {
  ingest();
  IndexStats again = ingest();
  EXPECT_EQ(again.unchanged, 4);
  EXPECT_EQ(again.added + again.updated + again.removed, 0);

  { std::ofstream(dir_ / "docs" / "notes.txt") << "Cluster launch control notes\n"; }
  fs::remove(dir_ / "docs" / "guide.md");
  fs::copy_file(dir_ / "docs" / "page.html", dir_ / "docs" / "page_copy.html");
  IndexStats changed = ingest();
  EXPECT_EQ(changed.updated, 1);
  EXPECT_EQ(changed.removed, 1);
  EXPECT_EQ(changed.duplicates, 1);
  EXPECT_EQ(changed.unchanged, 2);
  EXPECT_TRUE(query("swizzle").empty()) << "the deleted file's chunks are gone";
  EXPECT_TRUE(query("producer warp").empty()) << "the changed file's old text is gone";
  EXPECT_EQ(query("cluster launch").size(), 1u);
  auto counts = index_->counts();
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(counts->files, 3);
}

TEST_F(RagIndex, DeclarationsAreFoundExactlyOrByTheNearestName) {
  ingest();
  auto exact = find_declaration(*index_, "miniblasMatmul");
  ASSERT_TRUE(exact.ok() && exact->has_value());
  EXPECT_EQ((*exact)->distance, 0);
  EXPECT_EQ((*exact)->declarations.front().declaration.line_begin, 33);

  auto misspelt = find_declaration(*index_, "miniblasMatmull");
  ASSERT_TRUE(misspelt.ok() && misspelt->has_value());
  EXPECT_EQ((*misspelt)->distance, 1);
  EXPECT_EQ((*misspelt)->declarations.front().declaration.name, "miniblasMatmul");

  auto far = find_declaration(*index_, "somethingElseEntirely");
  ASSERT_TRUE(far.ok());
  EXPECT_FALSE(far->has_value());
}

TEST_F(RagIndex, AQueryNamingADeclaredNameGetsItsDeclarationFirst) {
  ingest();
  std::vector<DocHit> hits = query("miniblasCreate", 1);
  ASSERT_EQ(hits.size(), 1u);
  EXPECT_NE(hits[0].text.find("miniblasStatus_t MINIBLASAPI miniblasCreate("), std::string::npos);
}

TEST_F(RagIndex, ASecondOpenOfAnotherSchemaIsRefused) {
  ASSERT_TRUE(index_->set_meta("schema_version", "999").ok());
  index_.reset();
  auto reopened = DocIndex::open(dir_ / "cache" / "rag.sqlite", DocIndex::Access::read_only);
  ASSERT_FALSE(reopened.ok());
  EXPECT_NE(reopened.error().message.find("schema 999"), std::string::npos);
  auto missing = open_index_for_search(dir_ / "nothing.sqlite");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("stitchcuda rag index"), std::string::npos);
}

// A scripted /v1/embeddings server: vectors from which words a text holds, per token for the
// first input of each request (as llama.cpp returns with pooling "none").
class FakeEmbeddingTransport : public llm::HttpTransport {
 public:
  llm::HttpResponse send(const llm::HttpRequest& request) override {
    requests.push_back(request);
    nlohmann::json body = nlohmann::json::parse(request.body);
    nlohmann::json data = nlohmann::json::array();
    for (size_t i = 0; i < body["input"].size(); ++i) {
      std::string text = body["input"][i];
      std::vector<float> v = {text.find("warp") != std::string::npos ? 1.0f : 0.0f,
                              text.find("occupancy") != std::string::npos ? 1.0f : 0.0f, 0.1f};
      nlohmann::json embedding = v;
      if (i == 0) embedding = nlohmann::json::array({v, v});  // per token: pooled to v
      data.push_back({{"index", i}, {"embedding", embedding}});
    }
    llm::HttpResponse response;
    response.status = 200;
    response.body = nlohmann::json{{"data", data}}.dump();
    return response;
  }
  std::vector<llm::HttpRequest> requests;
};

TEST(Embeddings, PerTokenVectorsAreMeanPooledAndOrderedByIndex) {
  auto parsed = parse_embeddings(
      R"({"data":[{"index":1,"embedding":[1,2]},{"index":0,"embedding":[[1,0],[3,4]]}]})", 2);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ((*parsed)[0], (std::vector<float>{2, 2}));
  EXPECT_EQ((*parsed)[1], (std::vector<float>{1, 2}));
  EXPECT_FALSE(parse_embeddings(R"({"data":[{"embedding":[1]}]})", 2).ok());
  EXPECT_FALSE(parse_embeddings(R"({"data":[{"embedding":[1]},{"embedding":[1,2]}]})", 2).ok());
  EXPECT_FALSE(parse_embeddings("not json", 1).ok());
}

TEST_F(RagIndex, EmbeddingsAreStoredAndFusedWithBm25) {
  ingest();
  FakeEmbeddingTransport transport;
  llm::Endpoint endpoint;
  endpoint.api_base = "http://embed.test/v1";
  HttpEmbedder embedder(transport, endpoint, "fake-embed");
  auto stats = embed_missing(*index_, embedder, 2);
  ASSERT_TRUE(stats.ok()) << stats.error().message;
  EXPECT_EQ(stats->embedded, 4);
  EXPECT_EQ(transport.requests.front().url, "http://embed.test/v1/embeddings");
  EXPECT_EQ(index_->counts()->embedded_chunks, 4);

  // "warp" is in notes.txt only; the dense side ranks it first for a query BM25 cannot match.
  SearchOptions options;
  options.k = 4;
  options.embedder = &embedder;
  auto hybrid = search(*index_, "warp ztqx", options);
  ASSERT_TRUE(hybrid.ok()) << hybrid.error().message;
  ASSERT_FALSE(hybrid->empty());
  EXPECT_EQ(fs::path(hybrid->front().path).filename(), "notes.txt");
  auto again = embed_missing(*index_, embedder, 2);
  EXPECT_EQ(again->embedded, 0) << "only missing vectors are computed";

  FakeEmbeddingTransport other;
  HttpEmbedder other_model(other, endpoint, "another-model");
  EXPECT_FALSE(embed_missing(*index_, other_model).ok()) << "one model's vectors per index";
}

TEST_F(RagIndex, EvaluationScoresRecallAndReciprocalRank) {
  ingest();
  std::vector<EvalQuestion> questions = {
      {1, "api", "miniblasMatmul", "mini_blas.h", "miniblasMatmul"},
      {2, "enum", "MINIBLAS_STATUS_INVALID_VALUE", "mini_blas.h", "MINIBLAS_STATUS_INVALID_VALUE"},
      {3, "api", "swizzle", "notes.txt", "swizzle"},  // wrong source on purpose: a miss
  };
  SearchOptions options;
  options.k = 5;
  auto report = run_eval(*index_, questions, options);
  ASSERT_TRUE(report.ok()) << report.error().message;
  EXPECT_DOUBLE_EQ(report->recall_at_1, 2.0 / 3);
  EXPECT_DOUBLE_EQ(report->recall_at_k, 2.0 / 3);
  EXPECT_DOUBLE_EQ(report->mrr, 2.0 / 3);
  EXPECT_EQ(report->answers[2].rank, 0);
  EXPECT_EQ(eval_report_to_json(*report)["questions"], 3);
}

TEST(EvalSet, TheBuiltInSetHasFortyOrMoreQuestionsOfEveryCategory) {
  auto questions = builtin_eval_set();
  ASSERT_TRUE(questions.ok()) << questions.error().message;
  EXPECT_GE(questions->size(), 40u);
  std::set<std::string> categories;
  for (const EvalQuestion& q : *questions)
    categories.insert(q.category);
  EXPECT_EQ(categories, (std::set<std::string>{"api", "attribute", "enum", "limit", "signature"}));
  EXPECT_FALSE(parse_eval_set(nlohmann::json::parse(R"({"format":"x"})")).ok());
}

TEST(EvalSet, AHitAnswersWhenItsPathEndsWithTheSourceAndItHoldsTheIdentifier) {
  EvalQuestion q{1, "api", "?", "cublasLt.h", "cublasLtMatmul"};
  EXPECT_TRUE(answers({"/usr/include/cublasLt.h", 1, 2, 0, "x cublasLtMatmul("}, q));
  EXPECT_FALSE(answers({"/usr/include/xcublasLt.h", 1, 2, 0, "cublasLtMatmul"}, q));
  EXPECT_FALSE(answers({"/usr/include/cublasLt.h", 1, 2, 0, "cublasLtCreate"}, q));
}

}  // namespace
}  // namespace stitch::rag
