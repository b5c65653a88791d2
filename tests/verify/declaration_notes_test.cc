// Which identifiers an nvcc error is about, and how declarations join the feedback
// (verify/declaration_notes.h), with a fake DeclarationSource.
#include <gtest/gtest.h>

#include <map>

#include "verify/declaration_notes.h"

namespace stitch {
namespace {

Diagnostic error(std::string message, std::string snippet = "") {
  return Diagnostic{"p.cu", 4, "error", std::move(message), std::move(snippet)};
}

using Ids = std::vector<ErrorIdentifier>;

TEST(ErrorIdentifiers, NamesComeFromTheMessageOrTheFailingLine) {
  EXPECT_EQ(error_identifiers(error(R"(identifier "cublasLtMatmulX" is undefined)")),
            (Ids{{"cublasLtMatmulX", true}}));
  EXPECT_EQ(error_identifiers(error(
                R"(no instance of overloaded function "cute::gemm" matches the argument list)")),
            (Ids{{"gemm", false}}));
  EXPECT_EQ(error_identifiers(error(R"(namespace "cub" has no member "BlockReduceX")")),
            (Ids{{"BlockReduceX", true}, {"cub", false}}));
  const std::string snippet =
      "  3 | int x;\n> 4 |   CHECK(cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F));\n  5 | }\n";
  EXPECT_EQ(error_identifiers(error("too few arguments in function call", snippet)),
            (Ids{{"cublasLtMatmulDescCreate", false}, {"CHECK", false}}))
      << "innermost call first";
  EXPECT_EQ(error_identifiers(
                error(R"(argument of type "int" is incompatible with parameter of type "float *")",
                      "> 9 |   if (scale(x, 2)) return;\n")),
            (Ids{{"scale", false}}));
  EXPECT_TRUE(error_identifiers(error("expected a \";\"")).empty());
}

class FakeDeclarations : public DeclarationSource {
 public:
  std::optional<DeclarationNote> find(std::string_view identifier, bool fuzzy) override {
    asked.emplace_back(identifier);
    std::string name(identifier);
    if (fuzzy && name == "cublasLtMatmulX") name = "cublasLtMatmul";
    auto it = known.find(name);
    if (it == known.end()) return std::nullopt;
    return DeclarationNote{
        std::string(identifier), name, "/cuda/include/cublasLt.h", it->second, it->second + 2,
        name + "(...);\n"};
  }
  std::map<std::string, int> known = {{"cublasLtMatmul", 100}, {"cublasLtMatmulDescCreate", 50}};
  std::vector<std::string> asked;
};

TEST(AttachDeclarations, EachErrorGetsItsFirstFoundDeclarationAndTheSuggestionNamesIt) {
  Feedback feedback;
  feedback.suggestion = {SuggestionRule::fix_compile_error, "Fix the first compiler error."};
  feedback.compile_errors = {
      error(R"(identifier "cublasLtMatmulX" is undefined)"),
      error("too few arguments in function call",
            "> 5 |   cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F);\n"),
      error(R"(identifier "cublasLtMatmulX" is undefined)"),  // the same name again: kept once
  };
  FakeDeclarations source;
  attach_declarations(feedback, source);
  ASSERT_EQ(feedback.declarations.size(), 2u);
  EXPECT_EQ(feedback.declarations[0].identifier, "cublasLtMatmulX");
  EXPECT_EQ(feedback.declarations[0].name, "cublasLtMatmul");
  EXPECT_EQ(feedback.declarations[1].name, "cublasLtMatmulDescCreate");
  EXPECT_NE(feedback.suggestion.text.find(
                "did you mean `cublasLtMatmul` (/cuda/include/cublasLt.h:100-102)"),
            std::string::npos)
      << feedback.suggestion.text;

  auto round_trip = feedback_from_json(feedback_to_json(feedback));
  ASSERT_TRUE(round_trip.ok()) << round_trip.error().message;
  ASSERT_EQ(round_trip->declarations.size(), 2u);
  EXPECT_EQ(round_trip->declarations[0].line_end, 102);
}

TEST(AttachDeclarations, NoErrorsNoLookupsAndAnOldFeedbackJsonReadsWithoutDeclarations) {
  Feedback feedback;
  FakeDeclarations source;
  attach_declarations(feedback, source);
  EXPECT_TRUE(source.asked.empty());
  nlohmann::json doc = feedback_to_json(feedback);
  doc.erase("declarations");
  auto read = feedback_from_json(doc);
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_TRUE(read->declarations.empty());
}

}  // namespace
}  // namespace stitch
