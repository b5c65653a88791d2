// What the LLM roles of one run spent (llm_usage.h).
#include "agents/llm_usage.h"

#include <algorithm>
#include <string>
#include <vector>

#include "agents/llm_coder.h"
#include "agents/llm_verifier.h"
#include "llm/program_reply.h"
#include "util/fs.h"

namespace stitch::agents {
namespace {

namespace fs = std::filesystem;

Status add_record(const fs::path& path, const std::string& role, llm::UsageLedger& ledger) {
  STITCH_ASSIGN_OR_RETURN(nlohmann::json doc, read_json_file(path));
  auto summary = llm::exchange_summary_from_json(doc);
  if (!summary.ok()) return make_error("{}: {}", path.string(), summary.error().message);
  ledger.add(role, summary->model, {summary->prompt_tokens, summary->completion_tokens, 0});
  return {};
}

// The files of `dir` (sorted) that `take` accepts.
template <class Take>
std::vector<fs::path> entries(const fs::path& dir, Take take) {
  std::vector<fs::path> found;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return found;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (take(entry.path())) found.push_back(entry.path());
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace

Status add_run_llm_usage(const fs::path& run_dir, llm::UsageLedger& ledger) {
  for (const fs::path& plan : entries(run_dir / "plans", [](const fs::path& path) {
         return path.filename().string().ends_with(".llm.json");
       }))
    STITCH_TRY(add_record(plan, "planner", ledger));
  for (const fs::path& attempt :
       entries(run_dir / "attempts", [](const fs::path& path) { return fs::is_directory(path); })) {
    std::error_code ec;
    if (fs::exists(attempt / kLlmCoderRecord, ec))
      STITCH_TRY(add_record(attempt / kLlmCoderRecord, "coder", ledger));
    if (fs::exists(attempt / kLlmVerifierRecord, ec))
      STITCH_TRY(add_record(attempt / kLlmVerifierRecord, "verifier", ledger));
  }
  return {};
}

}  // namespace stitch::agents
