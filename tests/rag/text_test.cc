// Search terms, token counts, chunking, HTML text and header declarations (src/rag).
#include <gtest/gtest.h>

#include "rag/chunker.h"
#include "rag/declarations.h"
#include "rag/html_text.h"
#include "rag/text_terms.h"
#include "util/fs.h"

namespace stitch::rag {
namespace {

using Parts = std::vector<std::string>;

TEST(TextTerms, IdentifiersSplitAtCaseUnderscoresAndDigits) {
  EXPECT_EQ(split_identifier("cublasLtMatmulDescCreate"),
            (Parts{"cublas", "lt", "matmul", "desc", "create"}));
  EXPECT_EQ(split_identifier("CUDNN_ATTR_OPERATION_MATMUL_ADESC"),
            (Parts{"cudnn", "attr", "operation", "matmul", "adesc"}));
  EXPECT_EQ(split_identifier("HTTPServer"), (Parts{"http", "server"}));
  EXPECT_EQ(split_identifier("fp16"), (Parts{"fp", "16"}));
  EXPECT_EQ(split_identifier("matmul"), (Parts{"matmul"}));
}

TEST(TextTerms, TheQueryHoldsWholeIdentifiersAndTheirPartsWithoutStopWords) {
  EXPECT_EQ(fts_query("What is cublasLtMatmul?"),
            R"("cublasltmatmul" OR "cublas" OR "lt" OR "matmul")");
  EXPECT_EQ(fts_query("the CUDNN_DATA_FLOAT"),
            R"("cudnn_data_float" OR "cudnn" OR "data" OR "float")");
  EXPECT_EQ(fts_query("what is the"), "");
  EXPECT_EQ(fts_query("\"quote\" OR ( -"), R"("quote")") << "FTS5 syntax never leaks through";
}

TEST(TextTerms, TokensAreWordRunsAndSinglePunctuation) {
  EXPECT_EQ(count_tokens("cublasLtMatmul(handle, 0);"), 7);
  EXPECT_EQ(count_tokens("  \n\t "), 0);
  EXPECT_EQ(split_parts_text("int cudaMallocAsync(void);"), "cuda malloc async ");
}

TEST(TextTerms, EditDistanceGivesUpPastItsLimit) {
  EXPECT_EQ(edit_distance("cublasltmatmulx", "cublasltmatmul", 3), 1);
  EXPECT_EQ(edit_distance("kitten", "sitting", 5), 3);
  EXPECT_EQ(edit_distance("abc", "abcdefgh", 2), 3);
}

TEST(Chunker, ChunksEndAtLinesAndOverlapByAtLeastTheOverlap) {
  std::string text;
  for (int i = 1; i <= 100; ++i)
    text += "word word word word word\n";  // 5 tokens a line
  std::vector<Chunk> chunks = chunk_lines(text, {50, 10});
  ASSERT_GT(chunks.size(), 2u);
  EXPECT_EQ(chunks.front().line_begin, 1);
  EXPECT_EQ(chunks.front().line_end, 10);
  EXPECT_EQ(chunks[1].line_begin, 9) << "two lines (10 tokens) repeated";
  EXPECT_EQ(chunks.back().line_end, 100);
  for (const Chunk& chunk : chunks) {
    EXPECT_LE(count_tokens(chunk.text), 50);
    EXPECT_EQ(chunk.line_end - chunk.line_begin + 1,
              static_cast<int>(std::count(chunk.text.begin(), chunk.text.end(), '\n')));
  }
}

TEST(Chunker, ALongLineIsAChunkOfItsOwnAndBlankTextNone) {
  std::string line(400, 'x');
  std::string text = "a\n" + std::string(200, ' ') + std::string(3000, '+') + "\nb\n";
  std::vector<Chunk> chunks = chunk_lines(text, {1000, 100});
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[1].line_begin, 2);
  EXPECT_EQ(chunks[1].line_end, 2);
  EXPECT_TRUE(chunk_lines("\n\n  \n").empty());
}

TEST(HtmlText, TagsScriptsAndStylesGoEntitiesAreDecodedBlocksBreakLines) {
  std::string text = html_to_text(
      "<html><style>p{}</style><script>var x = '<p>';</script><h1>Title</h1><p>a &amp; b"
      "&lt;c&gt;</p><ul><li>one</li><li>two</li></ul></html>");
  EXPECT_EQ(text.find("var x"), std::string::npos);
  EXPECT_EQ(text.find("p{}"), std::string::npos);
  EXPECT_NE(text.find("Title\n"), std::string::npos) << text;
  EXPECT_NE(text.find("a & b<c>"), std::string::npos) << text;
  EXPECT_NE(text.find("one\ntwo"), std::string::npos) << text;
}

const Declaration* named(const std::vector<Declaration>& all, std::string_view name) {
  for (const Declaration& d : all)
    if (d.name == name) return &d;
  return nullptr;
}

TEST(Declarations, PrototypesEnumeratorsMacrosAndTypesOfAHeader) {
  auto text = read_file(std::string(STITCH_TEST_DATA_DIR) + "/rag/corpus/mini_blas.h");
  ASSERT_TRUE(text.ok());
  std::vector<Declaration> all = extract_declarations(*text);

  const Declaration* matmul = named(all, "miniblasMatmul");
  ASSERT_NE(matmul, nullptr);
  EXPECT_EQ(matmul->kind, DeclarationKind::function);
  EXPECT_EQ(matmul->line_begin, 33);
  EXPECT_EQ(matmul->line_end, 39) << "to the closing ';'";
  EXPECT_NE(matmul->text.find("int m, int n, int k);"), std::string::npos);

  const Declaration* set = named(all, "miniblasMatmulDescSetAttribute");
  ASSERT_NE(set, nullptr) << "return type on the line before";
  EXPECT_EQ(set->line_begin, 41);
  EXPECT_EQ(set->line_end, 43);

  const Declaration* relu = named(all, "MINIBLAS_EPILOGUE_RELU_BIAS");
  ASSERT_NE(relu, nullptr);
  EXPECT_EQ(relu->kind, DeclarationKind::enumerator);
  EXPECT_EQ(relu->line_begin, 21);

  ASSERT_NE(named(all, "MINIBLAS_STATUS_INVALID_VALUE"), nullptr);
  const Declaration* status = named(all, "miniblasStatus_t");
  ASSERT_NE(status, nullptr);
  EXPECT_EQ(status->kind, DeclarationKind::type);
  EXPECT_EQ(status->line_begin, 12);
  EXPECT_EQ(status->line_end, 16);
  ASSERT_NE(named(all, "miniblasHandle_t"), nullptr);
  ASSERT_NE(named(all, "miniblasHeuristicResult_t"), nullptr);
  ASSERT_NE(named(all, "miniblasEpilogue"), nullptr);

  const Declaration* check = named(all, "MINIBLAS_CHECK");
  ASSERT_NE(check, nullptr);
  EXPECT_EQ(check->kind, DeclarationKind::macro);
  EXPECT_EQ(check->line_end, 8) << "continuation lines";

  ASSERT_NE(named(all, "miniblasHelper"), nullptr);
  int creates = 0;
  for (const Declaration& d : all)
    creates += d.name == "miniblasCreate";
  EXPECT_EQ(creates, 1) << "the call inside miniblasHelper's body is no declaration";
}

}  // namespace
}  // namespace stitch::rag
