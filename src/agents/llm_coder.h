// The LLM Coder in whole-program mode: skill 1 (coder_generate.md: write the program from the
// task and the plan) on a scope's first attempt, skill 2 (coder_revise.md: revise the last program
// from its feedback.json) on a retry. The reply goes through llm/extract.h — the program found
// wherever it is and checked against the ABI before any build — with one re-ask carrying the
// reason when it holds no usable program; a reply that still has none ends the attempt as
// no_usable_output (kept, with its transcript), and the next step's prompt says what was wrong.
// A retry after a verified attempt quotes its feedback, and the Verifier's LLM analysis when one
// was made (llm_verifier.h). The program lands in request.out_dir/program.cu; the client saves its
// transcript in the attempt directory, and llm_coder.json there records the exchange
// (llm/program_reply.h: skill, model, outcome, tokens, cost). With --samples K the K requests of a
// step go out at once (one thread each, seeds 0..K-1 so a replay gets the same answers), each into
// its own attempt directory.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "agents/doc_context.h"
#include "agents/roles.h"
#include "llm/chat.h"
#include "llm/config.h"
#include "util/enum_names.h"
#include "util/gpu_peaks.h"
#include "verify/track.h"

namespace stitch::agents {

// Makes the client that sends a role's requests to `endpoint`, saving every request and reply in
// `transcript_dir` (the attempt directory). The loop passes the HTTP client's factory; tests a
// scripted one.
using ChatClientFactory = std::function<Result<std::unique_ptr<llm::ChatClient>>(
    const llm::Endpoint& endpoint, const std::filesystem::path& transcript_dir)>;

enum class CoderSkill : uint8_t { generate, revise };
inline constexpr std::array<std::string_view, 2> kCoderSkillNames = {"generate", "revise"};
constexpr const auto& enum_names(CoderSkill) {
  return kCoderSkillNames;
}
static_assert(names_every_enumerator(CoderSkill::revise));

struct LlmCoderOptions {
  llm::RoleConfig role;             // the Coder's endpoint, model and sampling
  llm::PriceTable prices;           // for llm_coder.json's cost
  const GpuPeakRow* gpu = nullptr;  // nullptr: the H200's facts
  std::string arch;
  Track track = Track::fp32;
  std::vector<std::filesystem::path> include_dirs;  // for the libraries the program's headers need
  // The documentation index (doc_context.h): offered as the search_cuda_docs tool, and searched
  // for what a revised attempt's compile errors name. Empty: no index.
  DocSearch search_docs;
};

class LlmCoder final : public Coder {
 public:
  LlmCoder(LlmCoderOptions options, ChatClientFactory make_client)
      : options_(std::move(options)), make_client_(std::move(make_client)) {}
  CoderGranularity granularity() const override { return CoderGranularity::whole_program; }
  Result<CodeOutcome> write(const CodeRequest& request) override;
  int samples_per_step() const override { return std::max(1, options_.role.samples); }
  std::vector<Result<CodeOutcome>> write_samples(const std::vector<CodeRequest>& requests) override;

 private:
  Result<CodeOutcome> write_sample(const CodeRequest& request, int sample);

  LlmCoderOptions options_;
  ChatClientFactory make_client_;
};

// The file the LLM Coder records its exchange in, inside the attempt directory.
inline constexpr std::string_view kLlmCoderRecord = "llm_coder.json";

}  // namespace stitch::agents
