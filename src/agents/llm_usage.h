// What the LLM roles of one run spent: the exchange records they left in the run directory —
// plans/plan.vN.llm.json (Planner), attempts/NN/llm_coder.json (Coder),
// attempts/NN/llm_verifier.json (Verifier) — summed per role and model into a usage ledger
// (llm/usage_ledger.h), which the loop writes as usage.json and quotes in summary.json.
#pragma once

#include <filesystem>

#include "llm/usage_ledger.h"
#include "util/result.h"

namespace stitch::agents {

// Adds every exchange record under `run_dir` to `ledger` (each record counts as one request);
// an Error names a record that does not read.
Status add_run_llm_usage(const std::filesystem::path& run_dir, llm::UsageLedger& ledger);

}  // namespace stitch::agents
