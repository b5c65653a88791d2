// File-system helpers: whole-file reads, atomic writes (write to a temporary, fsync, rename) so
// that no half-written file is ever presented as complete, and directory creation.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "util/result.h"

namespace stitch {

namespace fs = std::filesystem;

Result<std::string> read_file(const fs::path& path);

// read_file, then JSON: an Error naming the file when it is missing or not valid JSON.
Result<nlohmann::json> read_json_file(const fs::path& path);
// read_json_file, then `parse` (a typed reader: json → Result<T>); its Error is prefixed with the
// file's path.
template <class Parse>
auto read_json_file_as(const fs::path& path, Parse parse) -> decltype(parse(nlohmann::json())) {
  STITCH_ASSIGN_OR_RETURN(nlohmann::json doc, read_json_file(path));
  auto parsed = parse(doc);
  if (!parsed.ok()) return parsed.error().with_context(path.string());
  return parsed;
}
// `value` dumped with 2-space indent and a final newline, written atomically.
Status write_json_file(const fs::path& path, const nlohmann::json& value);

// Writes `contents` to `path` atomically: a reader sees the old file or the whole new one.
Status write_file_atomic(const fs::path& path, std::string_view contents);

Status make_dirs(const fs::path& path);

// Directory holding the running executable (resolved through /proc/self/exe).
fs::path executable_dir();

}  // namespace stitch
