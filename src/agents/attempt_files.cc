// attempt.json, draft.json and result.json: writers and typed readers (attempt_files.h).
#include "agents/attempt_files.h"

#include "util/fs.h"
#include "util/json_fields.h"
#include "verify/build/build_cache.h"  // sha256_hex

namespace stitch::agents {
namespace {

using nlohmann::json;

json paths_json(const std::vector<fs::path>& paths, const fs::path& base) {
  json out = json::array();
  for (const auto& path : paths) {
    fs::path relative = path.lexically_relative(base);
    const bool inside = !relative.empty() && *relative.begin() != "..";
    out.push_back(inside ? relative.string() : path.string());
  }
  return out;
}

Result<std::vector<fs::path>> paths_from_json(const json& doc, const char* key,
                                              const fs::path& base) {
  std::vector<std::string> names;
  STITCH_TRY(read_field(doc, key, names));
  std::vector<fs::path> out;
  for (const auto& name : names) {
    fs::path path = name;
    out.push_back(path.is_absolute() ? path : base / path);
  }
  return out;
}

}  // namespace

json attempt_intent_to_json(const AttemptRecord& record) {
  return {{"format", "stitchcuda.attempt"},
          {"number", record.number},
          {"kind", attempt_kind_name(record.kind)},
          {"plan_version", record.plan_version},
          {"subtask", record.subtask},
          {"variant", record.variant},
          {"label", record.label}};
}

Result<AttemptRecord> attempt_intent_from_json(const json& doc) {
  if (!doc.is_object() || doc.value("format", "") != "stitchcuda.attempt")
    return make_error(ErrorKind::bad_input, "not an attempt.json (format \"stitchcuda.attempt\")");
  AttemptRecord record;
  STITCH_TRY(read_field(doc, "number", record.number));
  STITCH_ASSIGN_OR_RETURN(record.kind, read_enum<AttemptKind>(doc, "kind", attempt_kind_from_name));
  STITCH_TRY(read_field(doc, "plan_version", record.plan_version));
  STITCH_TRY(read_field(doc, "subtask", record.subtask));
  if (auto found = doc.find("variant"); found != doc.end() && found->is_object())
    record.variant = *found;
  STITCH_TRY(read_field(doc, "label", record.label));
  record.status = AttemptStatus::interrupted;
  if (record.number <= 0) return make_error(ErrorKind::bad_input, "attempt.json: no number");
  return record;
}

json draft_to_json(const CodeDraft& draft, const fs::path& attempt_dir) {
  return {{"sources", paths_json(draft.sources, attempt_dir)},
          {"headers", paths_json(draft.headers, attempt_dir)},
          {"include_dirs", paths_json(draft.include_dirs, attempt_dir)},
          {"libraries", draft.libraries},
          {"variant", draft.variant},
          {"label", draft.label},
          {"tokens", draft.tokens}};
}

Result<CodeDraft> draft_from_json(const json& doc, const fs::path& attempt_dir) {
  if (!doc.is_object()) return make_error(ErrorKind::bad_input, "draft.json: not an object");
  CodeDraft draft;
  STITCH_ASSIGN_OR_RETURN(draft.sources, paths_from_json(doc, "sources", attempt_dir));
  STITCH_ASSIGN_OR_RETURN(draft.headers, paths_from_json(doc, "headers", attempt_dir));
  STITCH_ASSIGN_OR_RETURN(draft.include_dirs, paths_from_json(doc, "include_dirs", attempt_dir));
  STITCH_TRY(read_field(doc, "libraries", draft.libraries));
  if (auto found = doc.find("variant"); found != doc.end() && found->is_object())
    draft.variant = *found;
  STITCH_TRY(read_field(doc, "label", draft.label));
  STITCH_TRY(read_field(doc, "tokens", draft.tokens));
  if (draft.sources.empty()) return make_error(ErrorKind::bad_input, "draft.json lists no sources");
  return draft;
}

Status write_draft(const fs::path& attempt_dir, const CodeDraft& draft) {
  return write_json_file(attempt_dir / "draft.json", draft_to_json(draft, attempt_dir));
}

Result<CodeDraft> read_draft(const fs::path& attempt_dir) {
  STITCH_ASSIGN_OR_RETURN(json doc, read_json_file(attempt_dir / "draft.json"));
  auto draft = draft_from_json(doc, attempt_dir);
  if (!draft.ok()) return draft.error().with_context(attempt_dir.string());
  return draft;
}

Result<std::string> program_digest(const CodeDraft& draft) {
  std::string material;
  auto add = [&material](std::string_view part) {
    material += part;
    material += '\0';  // separates parts, so no two different lists concatenate alike
  };
  for (const auto* files : {&draft.sources, &draft.headers})
    for (const auto& file : *files) {
      STITCH_ASSIGN_OR_RETURN(std::string text, read_file(file));
      add(file.filename().string());
      add(text);
    }
  for (const auto& library : draft.libraries)
    add(library);
  return sha256_hex(material);
}

json finished_attempt_to_json(const FinishedAttempt& finished) {
  return {{"format", "stitchcuda.attempt_result"},
          {"result", attempt_result_to_json(finished.result)},
          {"seconds", finished.seconds}};
}

Result<FinishedAttempt> finished_attempt_from_json(const json& doc) {
  if (!doc.is_object() || doc.value("format", "") != "stitchcuda.attempt_result")
    return make_error(ErrorKind::bad_input,
                      "not a result.json (format \"stitchcuda.attempt_result\")");
  FinishedAttempt finished;
  STITCH_ASSIGN_OR_RETURN(finished.result, attempt_result_from_json(doc.value("result", json())));
  STITCH_TRY(read_field(doc, "seconds", finished.seconds));
  return finished;
}

}  // namespace stitch::agents
