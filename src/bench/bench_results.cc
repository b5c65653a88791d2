// BenchRecord <-> JSON, and appending to / reading results.jsonl; see bench_results.h.
#include "bench/bench_results.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "util/fs.h"
#include "util/json_fields.h"

namespace stitch::bench {
namespace {

using nlohmann::json;

json finite_or_null(const std::optional<double>& value) {
  return value && std::isfinite(*value) ? json(*value) : json(nullptr);
}

// The record's text and time fields, each named once for the writer and the reader.
constexpr std::pair<const char*, std::string BenchRecord::*> kTextFields[] = {
    {"task", &BenchRecord::task},
    {"level", &BenchRecord::level},
    {"task_file", &BenchRecord::task_file},
    {"run_dir", &BenchRecord::run_dir},
    {"reason", &BenchRecord::reason},
    {"track", &BenchRecord::track},
    {"gpu", &BenchRecord::gpu},
    {"finished_at", &BenchRecord::finished_at}};
constexpr std::pair<const char*, std::optional<double> BenchRecord::*> kTimeFields[] = {
    {"ours_ms", &BenchRecord::ours_ms},
    {"ours_p10_ms", &BenchRecord::ours_p10_ms},
    {"ours_p90_ms", &BenchRecord::ours_p90_ms},
    {"refine_before_ms", &BenchRecord::refine_before_ms},
    {"floor_ms", &BenchRecord::floor_ms}};

// Baselines and kernels: [{<name_field>: string, "ms": number}]. An entry without a finite time is
// no measurement and is left out.
template <typename Item>
json timed_list_to_json(const std::vector<Item>& items, const char* name_field,
                        std::string Item::*name) {
  json out = json::array();
  for (const auto& item : items)
    if (std::isfinite(item.ms)) out.push_back({{name_field, item.*name}, {"ms", item.ms}});
  return out;
}

template <typename Item>
Result<std::vector<Item>> read_timed_list(const json& doc, const char* what, const char* name_field,
                                          std::string Item::*name) {
  return read_array<Item>(doc, what, [=](const json& entry) -> Result<Item> {
    if (!entry.is_object()) return make_error("must be an object");
    Item item;
    if (!entry.contains(name_field) || entry[name_field].is_null())
      return make_error("{}: missing", name_field);
    STITCH_TRY(read_field(entry, name_field, item.*name));
    if (!entry.contains("ms") || !entry["ms"].is_number())
      return make_error("ms: must be a number");
    item.ms = entry["ms"].get<double>();
    return item;
  });
}

// One process-wide lock: the bench runner appends from one thread per GPU.
std::mutex& append_mutex() {
  static std::mutex mutex;
  return mutex;
}

Status write_all(int fd, const std::string& text, const std::filesystem::path& path) {
  // One write(2) for the whole line keeps concurrent O_APPEND writers from interleaving; a short
  // write (disk full) is an error, not something to finish with a second write.
  ssize_t written;
  do {
    written = ::write(fd, text.data(), text.size());
  } while (written < 0 && errno == EINTR);
  if (written != static_cast<ssize_t>(text.size()))
    return make_error("{}: append failed: {}", path.string(),
                      written < 0 ? std::strerror(errno) : "short write");
  return {};
}

}  // namespace

std::optional<double> BenchRecord::baseline_ms(std::string_view mode) const {
  for (const auto& baseline : baselines)
    if (baseline.mode == mode)
      return std::isfinite(baseline.ms) ? std::optional<double>(baseline.ms) : std::nullopt;
  return std::nullopt;
}

std::optional<double> BenchRecord::speedup(std::string_view mode) const {
  std::optional<double> base = baseline_ms(mode);
  if (!passed() || !base || !ours_ms || !std::isfinite(*ours_ms)) return std::nullopt;
  if (*base <= 0 || *ours_ms <= 0) return std::nullopt;
  return *base / *ours_ms;
}

std::optional<double> BenchRecord::floor_fraction() const {
  if (!passed() || !floor_ms || !ours_ms || !std::isfinite(*floor_ms) || !std::isfinite(*ours_ms))
    return std::nullopt;
  if (*floor_ms <= 0 || *ours_ms <= 0) return std::nullopt;
  return *floor_ms / *ours_ms;
}

json record_to_json(const BenchRecord& r) {
  json doc = {{"outcome", bench_outcome_name(r.outcome)},
              {"baselines", timed_list_to_json(r.baselines, "mode", &BaselineTime::mode)},
              {"attempts", r.attempts},
              {"wall_s", std::isfinite(r.wall_s) ? r.wall_s : 0.0},
              {"top_kernels", timed_list_to_json(r.top_kernels, "name", &KernelTime::name)}};
  for (const auto& [key, field] : kTextFields)
    doc[key] = r.*field;
  for (const auto& [key, field] : kTimeFields)
    doc[key] = finite_or_null(r.*field);
  if (!r.insecure_sandbox.empty()) doc["insecure_sandbox"] = r.insecure_sandbox;
  return doc;
}

Result<BenchRecord> record_from_json(const json& doc) {
  if (!doc.is_object())
    return make_error("results record must be a JSON object, got {}", doc.type_name());
  BenchRecord r;
  Status status = [&]() -> Status {
    for (const auto& [key, field] : kTextFields)
      STITCH_TRY(read_field(doc, key, r.*field));
    for (const char* required : {"task", "level"})
      if (!doc.contains(required) || doc[required].is_null())
        return make_error("{}: missing", required);
    STITCH_ASSIGN_OR_RETURN(r.outcome,
                            read_enum<BenchOutcome>(doc, "outcome", bench_outcome_from_name));
    for (const auto& [key, field] : kTimeFields)
      STITCH_TRY(read_field(doc, key, r.*field));
    STITCH_TRY(read_field(doc, "wall_s", r.wall_s));
    if (doc.contains("attempts") && !doc["attempts"].is_null()) {
      if (!doc["attempts"].is_number_integer())  // read_field would round 1.5 down
        return make_error("attempts: must be an integer, got {}", doc["attempts"].type_name());
      r.attempts = doc["attempts"].get<int>();
    }
    STITCH_ASSIGN_OR_RETURN(r.baselines,
                            read_timed_list(doc, "baselines", "mode", &BaselineTime::mode));
    STITCH_ASSIGN_OR_RETURN(r.top_kernels,
                            read_timed_list(doc, "top_kernels", "name", &KernelTime::name));
    STITCH_TRY(read_field(doc, "insecure_sandbox", r.insecure_sandbox));
    return {};
  }();
  if (!status.ok())
    return status.error().with_context(r.task.empty()
                                           ? std::string("results record")
                                           : fmt::format("results record for {}", r.task));
  return r;
}

Status append_record(const std::filesystem::path& results_jsonl, const BenchRecord& record) {
  std::string text = record_to_json(record).dump(-1, ' ', false, json::error_handler_t::replace);
  text += '\n';
  std::lock_guard<std::mutex> lock(append_mutex());
  if (results_jsonl.has_parent_path()) STITCH_TRY(make_dirs(results_jsonl.parent_path()));
  int fd = ::open(results_jsonl.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0)
    return make_error("{}: cannot open for append: {}", results_jsonl.string(),
                      std::strerror(errno));
  Status status = [&]() -> Status {
    // A crash mid-line left a torn tail: end it so this record is not glued onto it.
    off_t size = ::lseek(fd, 0, SEEK_END);
    char last = '\n';
    if (size > 0 && ::pread(fd, &last, 1, size - 1) == 1 && last != '\n')
      STITCH_TRY(write_all(fd, "\n", results_jsonl));
    STITCH_TRY(write_all(fd, text, results_jsonl));
    if (::fsync(fd) != 0)
      return make_error("{}: fsync failed: {}", results_jsonl.string(), std::strerror(errno));
    return {};
  }();
  ::close(fd);
  return status;
}

Result<std::vector<BenchRecord>> read_results(const std::filesystem::path& results_jsonl,
                                              int* skipped) {
  STITCH_ASSIGN_OR_RETURN(std::string text, read_file(results_jsonl));
  std::vector<BenchRecord> records;
  std::unordered_map<std::string, size_t> index_of_key;
  int bad_lines = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    bool torn = end == std::string::npos;  // no newline: the write never finished
    if (torn) end = text.size();
    std::string_view line(text.data() + start, end - start);
    start = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    if (torn) {
      ++bad_lines;
      break;
    }
    json parsed = json::parse(line.begin(), line.end(), nullptr, false);
    if (parsed.is_discarded()) {
      ++bad_lines;
      continue;
    }
    auto record = record_from_json(parsed);
    if (!record.ok()) {
      ++bad_lines;
      continue;
    }
    std::string key = record->key();
    if (auto it = index_of_key.find(key); it != index_of_key.end()) {
      records[it->second] = std::move(record).value();
    } else {
      index_of_key.emplace(std::move(key), records.size());
      records.push_back(std::move(record).value());
    }
  }
  if (skipped) *skipped = bad_lines;
  return records;
}

}  // namespace stitch::bench
