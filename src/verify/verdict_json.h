// The JSON forms of verdict.h's records (timing stats, output checks, diagnostics, hack findings),
// written and read back alike by verify.json (verify_report.h), feedback.json (feedback.h) and the
// build cache (build/compiler.h), so the files spell a record the same way. Readers return an Error
// naming the field on a mistyped or unknown value; absent optional fields keep their defaults.
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include "util/json_fields.h"
#include "util/result.h"
#include "verify/verdict.h"

namespace stitch {

// {median_ms, p10_ms, p90_ms, min_ms, iterations}, or null for nullopt. Non-finite values are
// written as null and read back as +infinity.
nlohmann::json timing_stats_to_json(const std::optional<TimingStats>& stats);
Result<std::optional<TimingStats>> timing_stats_from_json(const nlohmann::json& doc);

// {output_index, max_abs_error, max_abs_error_index, relative_error_norm, mismatches,
//  first_mismatch_index, nan_or_inf}; `passed` is the caller's (feedback lists failures only).
nlohmann::json output_check_to_json(const OutputCheck& check);
Result<OutputCheck> output_check_from_json(const nlohmann::json& doc);

// A record holding an OutputCheck `check` whose fields share the record's JSON object (verify.json's
// outputs, feedback.json's wrong outputs): the check's fields, then the record's own (`fields`,
// a util/json_fields.h table).
template <class Record, class Fields>
nlohmann::json checked_record_to_json(const Record& record, const Fields& fields) {
  nlohmann::json doc = output_check_to_json(record.check);
  doc.update(fields_to_json(record, fields));
  return doc;
}
template <class Record, class Fields>
Result<Record> checked_record_from_json(const nlohmann::json& doc, const Fields& fields) {
  Record record;
  STITCH_ASSIGN_OR_RETURN(record.check, output_check_from_json(doc));
  STITCH_TRY(read_fields(doc, record, fields));
  return record;
}

// {file, line, severity, message, snippet}; feedback.json drops severity (errors only).
nlohmann::json diagnostic_to_json(const Diagnostic& diagnostic);
Result<Diagnostic> diagnostic_from_json(const nlohmann::json& doc);

// {kind (HackKind name), detail, fatal}
nlohmann::json hack_finding_to_json(const HackFinding& finding);
Result<HackFinding> hack_finding_from_json(const nlohmann::json& doc);

}  // namespace stitch
