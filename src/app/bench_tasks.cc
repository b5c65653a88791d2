// The task list, claims and runs of a bench directory (bench_tasks.h).
#include "app/bench_tasks.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/bench_results.h"
#include "run/run_dir.h"
#include "util/fs.h"
#include "util/json_fields.h"

namespace stitch::app {

namespace fs = std::filesystem;
using nlohmann::json;

Result<std::vector<BenchTask>> collect_tasks(const std::vector<std::string>& dirs,
                                             const std::string& pattern, int limit) {
  std::vector<BenchTask> tasks;
  for (const auto& dir_text : dirs) {
    // Paths stay as given (relative ones relative to where bench runs), so a bench directory
    // moved to another machine with the checkout resumes there.
    const fs::path dir = fs::path(dir_text).lexically_normal();
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
      return make_error(ErrorKind::bad_input, "{}: not a directory", dir_text);
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir, ec))
      if (entry.path().extension() == ".py" &&
          (pattern.empty() || entry.path().filename().string().find(pattern) != std::string::npos))
        files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    fs::path named = fs::absolute(dir).lexically_normal();
    if (named.filename().empty()) named = named.parent_path();  // "level2/" → "level2"
    const std::string level = named.filename().string();
    for (const auto& file : files)
      tasks.push_back({level, run::task_name_from_path(file), file.string()});
  }
  if (limit > 0 && static_cast<int>(tasks.size()) > limit) tasks.resize(limit);
  if (tasks.empty()) return make_error(ErrorKind::bad_input, "no task files (.py) found");
  return tasks;
}

Status write_tasks(const fs::path& bench_dir, const std::vector<BenchTask>& tasks,
                   const std::string& track) {
  json list = json::array();
  for (const auto& task : tasks)
    list.push_back({{"level", task.level}, {"task", task.task}, {"file", task.file}});
  return write_file_atomic(bench_dir / "tasks.json",
                           json{{"tasks", list}, {"track", track}}.dump(2) + "\n");
}

Result<BenchTaskFile> read_task_file(const fs::path& bench_dir) {
  STITCH_ASSIGN_OR_RETURN(std::string text, read_file(bench_dir / "tasks.json"));
  json doc = json::parse(text, nullptr, false);
  if (!doc.is_object()) return make_error("{}/tasks.json: not valid JSON", bench_dir.string());
  BenchTaskFile file;
  if (const std::string track = string_or(doc, "track"); !track.empty()) file.track = track;
  auto list = doc.find("tasks");
  if (list == doc.end()) return file;
  if (!list->is_array())
    return make_error("{}/tasks.json: 'tasks' is not a list", bench_dir.string());
  for (const auto& item : *list)  // string_or: a mistyped field reads as empty, never throws
    file.tasks.push_back(
        {string_or(item, "level"), string_or(item, "task"), string_or(item, "file")});
  return file;
}

Result<std::vector<BenchTask>> read_tasks(const fs::path& bench_dir) {
  STITCH_ASSIGN_OR_RETURN(BenchTaskFile file, read_task_file(bench_dir));
  return std::move(file.tasks);
}

std::optional<fs::path> existing_run(const fs::path& bench_dir, const BenchTask& task) {
  std::error_code ec;
  const fs::path level_dir = bench_dir / "runs" / task.level;
  std::optional<fs::path> newest;
  for (const auto& entry : fs::directory_iterator(level_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(task.task + "-", 0) == 0 && (!newest || name > newest->filename().string()))
      newest = entry.path();
  }
  return newest;
}

bool has_capture(const fs::path& bench_dir, const BenchTask& task) {
  auto run = existing_run(bench_dir, task);
  return run && fs::exists(*run / "graph.json");
}

std::set<std::string> recorded_keys(const fs::path& bench_dir) {
  std::set<std::string> keys;
  if (auto records = bench::read_results(bench_dir / "results.jsonl"); records.ok())
    for (const auto& record : *records)
      keys.insert(record.key());
  return keys;
}

bool claim_task(const fs::path& bench_dir, const BenchTask& task, const std::string& who) {
  const fs::path claim = bench_dir / "claims" / task.claim_name();
  const int fd = ::open(claim.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0) return false;
  (void)!::write(fd, who.data(), who.size());
  ::close(fd);
  return true;
}

void free_interrupted_claims(const fs::path& bench_dir) {
  std::set<std::string> done;
  if (auto records = bench::read_results(bench_dir / "results.jsonl"); records.ok())
    for (const auto& record : *records)
      done.insert(BenchTask{record.level, record.task, ""}.claim_name());
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(bench_dir / "claims", ec))
    if (!done.count(entry.path().filename().string())) fs::remove(entry.path(), ec);
}

std::string utc_now_iso() {
  return fmt::format(
      "{:%Y-%m-%dT%H:%M:%SZ}",
      fmt::gmtime(std::chrono::system_clock::to_time_t(std::chrono::system_clock::now())));
}

}  // namespace stitch::app
