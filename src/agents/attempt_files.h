// The loop's own files in an attempt directory, each written and read back here (STYLE.md item 17):
//   attempt.json  what the attempt is, written before any work: {format "stitchcuda.attempt",
//                 number, kind, plan_version, subtask, variant, label}
//   draft.json    what the Coder wrote: {sources, headers, include_dirs (relative to the attempt
//                 directory when inside it), libraries, variant, label, tokens}
//   result.json   the attempt's commit record, written once, last: {format
//                 "stitchcuda.attempt_result", result (attempt_result_to_json), seconds}
// verify.json and feedback.json are the Verifier's (verify/verify_report.h, verify/feedback.h).
#pragma once

#include <filesystem>

#include <nlohmann/json.hpp>

#include "agents/roles.h"
#include "agents/run_state.h"
#include "util/result.h"

namespace stitch::agents {

// attempt.json: the record's identity (number, kind, plan version, subtask, variant, label).
nlohmann::json attempt_intent_to_json(const AttemptRecord& record);
// The record attempt.json describes, status `interrupted` (it was found without its state entry);
// its dir is the caller's.
Result<AttemptRecord> attempt_intent_from_json(const nlohmann::json& doc);

// draft.json; paths inside `attempt_dir` are written relative to it and read back absolute.
nlohmann::json draft_to_json(const CodeDraft& draft, const std::filesystem::path& attempt_dir);
Result<CodeDraft> draft_from_json(const nlohmann::json& doc,
                                  const std::filesystem::path& attempt_dir);
Status write_draft(const std::filesystem::path& attempt_dir, const CodeDraft& draft);
Result<CodeDraft> read_draft(const std::filesystem::path& attempt_dir);
// SHA-256 (hex) over what makes the draft's program: each source's and header's file name and
// contents, in order, and the libraries it links. Not its directory, so the same program written
// into two attempts has one digest (routing.h: a repeated deterministic failure).
Result<std::string> program_digest(const CodeDraft& draft);

// result.json.
struct FinishedAttempt {
  AttemptResult result;
  double seconds = 0;
};
nlohmann::json finished_attempt_to_json(const FinishedAttempt& finished);
Result<FinishedAttempt> finished_attempt_from_json(const nlohmann::json& doc);

}  // namespace stitch::agents
