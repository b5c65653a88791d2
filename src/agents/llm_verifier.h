// The Verifier's LLM analysis (--verifier llm): after the hardened Verifier judged an attempt that
// failed, or passed slower than a PyTorch baseline, a model reads the program, the feedback and
// the profile and answers with the verifier_analysis prompt's typed analysis (llm/answers.h:
// bottleneck type, metric evidence, one optimisation, what to change, next step), asked for as
// JSON and re-asked once on a parse error. The analysis lands in the attempt directory
// (analysis.json, read back by read_verifier_analysis) with the exchange's record
// (llm_verifier.json) and transcript (llm/); the LLM Coder's skill-2 prompt quotes it beside the
// built-in feedback. The verdict itself is never the model's: it is the wrapped Verifier's.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "agents/doc_context.h"
#include "agents/llm_coder.h"
#include "agents/roles.h"
#include "llm/answers.h"
#include "llm/config.h"

namespace stitch::agents {

inline constexpr std::string_view kAnalysisFile = "analysis.json";
inline constexpr std::string_view kLlmVerifierRecord = "llm_verifier.json";

struct LlmVerifierOptions {
  llm::RoleConfig role;  // the Verifier's endpoint, model and sampling
  llm::PriceTable prices;
  const GpuPeakRow* gpu = nullptr;  // nullptr: the H200's facts
  std::string arch;
  Track track = Track::fp32;
  // The documentation index (doc_context.h): the passages a compile error names join the
  // feedback the analysis reads. (No tool here: the analysis asks for a JSON schema, which some
  // servers refuse alongside tools.) Empty: no index.
  DocSearch search_docs;
};

// Whether an attempt gets an analysis: verified and failed, or passed slower than a baseline.
bool wants_analysis(const AttemptResult& result);

class LlmAnalysingVerifier final : public CandidateVerifier {
 public:
  LlmAnalysingVerifier(CandidateVerifier& verifier, LlmVerifierOptions options,
                       ChatClientFactory make_client)
      : verifier_(verifier), options_(std::move(options)), make_client_(std::move(make_client)) {}
  // The wrapped Verifier's result, unchanged; the analysis is added to the attempt directory.
  // A model or server that fails leaves llm_verifier_error.txt there instead.
  Result<AttemptResult> verify(const VerifyJob& job) override;

 private:
  Status analyse(const VerifyJob& job);

  CandidateVerifier& verifier_;
  LlmVerifierOptions options_;
  ChatClientFactory make_client_;
};

// analysis.json beside feedback.json: the model's validated answer.
Status write_verifier_analysis(const std::filesystem::path& path, const nlohmann::json& answer);
Result<llm::VerifierAnalysis> read_verifier_analysis(const std::filesystem::path& path);

// The analysis as the Coder's prompt shows it (a Markdown section).
std::string describe_analysis(const llm::VerifierAnalysis& analysis);

}  // namespace stitch::agents
