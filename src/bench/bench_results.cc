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

namespace stitch::bench {
namespace {

using nlohmann::json;

json finite_or_null(const std::optional<double>& value) {
  return value && std::isfinite(*value) ? json(*value) : json(nullptr);
}

// Field readers: each names the field in its error so a bad line says what is wrong with it.
Status read_string(const json& doc, const char* field, bool required, std::string& out) {
  auto it = doc.find(field);
  if (it == doc.end() || it->is_null()) {
    if (required) return make_error("field '{}' is missing", field);
    return {};
  }
  if (!it->is_string())
    return make_error("field '{}' must be a string, got {}", field, it->type_name());
  out = it->get<std::string>();
  return {};
}

Status read_number(const json& doc, const std::string& field, std::optional<double>& out) {
  auto it = doc.find(field);
  if (it == doc.end() || it->is_null()) return {};
  if (!it->is_number())
    return make_error("field '{}' must be a number or null, got {}", field, it->type_name());
  out = it->get<double>();
  return {};
}

// [{<name_field>: string, "ms": number}] -> pairs; `what` is the field name for errors.
template <typename Item>
Status read_timed_list(const json& doc, const char* what, const char* name_field,
                       std::vector<Item>& out) {
  auto it = doc.find(what);
  if (it == doc.end() || it->is_null()) return {};
  if (!it->is_array())
    return make_error("field '{}' must be an array, got {}", what, it->type_name());
  for (size_t i = 0; i < it->size(); ++i) {
    const json& entry = (*it)[i];
    std::string where = fmt::format("{}[{}]", what, i);
    if (!entry.is_object()) return make_error("field '{}' must be an object", where);
    std::string name;
    if (Status s = read_string(entry, name_field, true, name); !s.ok())
      return s.error().with_context(where);
    auto ms = entry.find("ms");
    if (ms == entry.end() || !ms->is_number())
      return make_error("{}: field 'ms' must be a number", where);
    out.push_back(Item{std::move(name), ms->get<double>()});
  }
  return {};
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

bool is_known_outcome(std::string_view outcome) {
  return std::find(std::begin(kOutcomes), std::end(kOutcomes), outcome) != std::end(kOutcomes);
}

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
  json baselines = json::array();
  for (const auto& b : r.baselines)
    if (std::isfinite(b.ms)) baselines.push_back({{"mode", b.mode}, {"ms", b.ms}});
  json kernels = json::array();
  for (const auto& k : r.top_kernels)
    if (std::isfinite(k.ms)) kernels.push_back({{"name", k.name}, {"ms", k.ms}});
  return {{"task", r.task},
          {"level", r.level},
          {"task_file", r.task_file},
          {"run_dir", r.run_dir},
          {"outcome", r.outcome},
          {"reason", r.reason},
          {"track", r.track},
          {"gpu", r.gpu},
          {"ours_ms", finite_or_null(r.ours_ms)},
          {"ours_p10_ms", finite_or_null(r.ours_p10_ms)},
          {"ours_p90_ms", finite_or_null(r.ours_p90_ms)},
          {"baselines", std::move(baselines)},
          {"attempts", r.attempts},
          {"wall_s", std::isfinite(r.wall_s) ? r.wall_s : 0.0},
          {"top_kernels", std::move(kernels)},
          {"refine_before_ms", finite_or_null(r.refine_before_ms)},
          {"floor_ms", finite_or_null(r.floor_ms)},
          {"finished_at", r.finished_at}};
}

Result<BenchRecord> record_from_json(const json& doc) {
  if (!doc.is_object())
    return make_error("results record must be a JSON object, got {}", doc.type_name());
  BenchRecord r;
  Status status = [&]() -> Status {
    STITCH_TRY(read_string(doc, "task", true, r.task));
    STITCH_TRY(read_string(doc, "level", true, r.level));
    STITCH_TRY(read_string(doc, "outcome", true, r.outcome));
    if (!is_known_outcome(r.outcome))
      return make_error("field 'outcome' has unknown value '{}'", r.outcome);
    STITCH_TRY(read_string(doc, "task_file", false, r.task_file));
    STITCH_TRY(read_string(doc, "run_dir", false, r.run_dir));
    STITCH_TRY(read_string(doc, "reason", false, r.reason));
    STITCH_TRY(read_string(doc, "track", false, r.track));
    STITCH_TRY(read_string(doc, "gpu", false, r.gpu));
    STITCH_TRY(read_string(doc, "finished_at", false, r.finished_at));
    STITCH_TRY(read_number(doc, "ours_ms", r.ours_ms));
    STITCH_TRY(read_number(doc, "ours_p10_ms", r.ours_p10_ms));
    STITCH_TRY(read_number(doc, "ours_p90_ms", r.ours_p90_ms));
    STITCH_TRY(read_number(doc, "refine_before_ms", r.refine_before_ms));
    STITCH_TRY(read_number(doc, "floor_ms", r.floor_ms));
    std::optional<double> wall_s;
    STITCH_TRY(read_number(doc, "wall_s", wall_s));
    r.wall_s = wall_s.value_or(0);
    if (auto it = doc.find("attempts"); it != doc.end() && !it->is_null()) {
      if (!it->is_number_integer())
        return make_error("field 'attempts' must be an integer, got {}", it->type_name());
      r.attempts = it->get<int>();
    }
    STITCH_TRY(read_timed_list(doc, "baselines", "mode", r.baselines));
    STITCH_TRY(read_timed_list(doc, "top_kernels", "name", r.top_kernels));
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
