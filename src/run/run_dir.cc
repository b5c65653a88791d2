#include "run/run_dir.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "util/fs.h"

namespace stitch::run {

std::string_view run_status_name(RunStatus status) {
  switch (status) {
    case RunStatus::running: return "running";
    case RunStatus::complete: return "complete";
    case RunStatus::failed: return "failed";
  }
  return "unknown";
}

std::string task_name_from_path(const fs::path& task_file) {
  std::string name = task_file.stem().string();
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  return name.empty() ? "task" : name;
}

std::string format_timestamp(std::chrono::system_clock::time_point time) {
  std::time_t seconds = std::chrono::system_clock::to_time_t(time);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y%m%d-%H%M%S", &utc);
  return text;
}

Result<RunDir> RunDir::create(const fs::path& runs_root, std::string_view task_name,
                              WallClock clock) {
  STITCH_TRY(make_dirs(runs_root));
  std::string base = fmt::format("{}-{}", task_name, format_timestamp(clock()));
  // mkdir(2) fails when the name exists, which makes taking a name atomic between processes.
  for (int suffix = 1; suffix < 10000; ++suffix) {
    fs::path root = runs_root / (suffix == 1 ? base : fmt::format("{}-{}", base, suffix));
    if (::mkdir(root.c_str(), 0755) == 0) {
      STITCH_ASSIGN_OR_RETURN(auto lock, RunLock::acquire(root));
      STITCH_ASSIGN_OR_RETURN(auto events, EventLog::open(root / "events.jsonl"));
      RunDir dir(root, std::move(lock), std::move(events));
      STITCH_TRY(dir.set_status(RunStatus::running, {{"task", std::string(task_name)}}));
      return dir;
    }
    if (errno != EEXIST)
      return make_error("{}: cannot create run directory: {}", root.string(), std::strerror(errno));
  }
  return make_error("{}: too many runs named {}", runs_root.string(), base);
}

Result<RunDir> RunDir::open(const fs::path& root) {
  if (!fs::is_directory(root)) return make_error("{}: not a run directory", root.string());
  if (!fs::exists(root / "summary.json"))
    return make_error("{}: not a run directory (no summary.json)", root.string());
  STITCH_ASSIGN_OR_RETURN(auto lock, RunLock::acquire(root));
  STITCH_ASSIGN_OR_RETURN(auto events, EventLog::open(root / "events.jsonl"));
  return RunDir(root, std::move(lock), std::move(events));
}

Result<RunDir> RunDir::open_or_adopt(const fs::path& root) {
  if (fs::is_directory(root) && !fs::exists(root / "summary.json") &&
      fs::exists(root / "graph.json")) {
    STITCH_ASSIGN_OR_RETURN(auto lock, RunLock::acquire(root));
    STITCH_ASSIGN_OR_RETURN(auto events, EventLog::open(root / "events.jsonl"));
    RunDir dir(root, std::move(lock), std::move(events));
    std::string task = root.filename().string();
    if (task.empty()) task = root.parent_path().filename().string();
    STITCH_TRY(dir.set_status(RunStatus::running, {{"task", task}, {"adopted_capture", true}}));
    return dir;
  }
  return open(root);
}

Result<fs::path> RunDir::new_attempt_dir() {
  fs::path attempts = root_ / "attempts";
  STITCH_TRY(make_dirs(attempts));
  int highest = 0;
  for (const auto& entry : fs::directory_iterator(attempts)) {
    const std::string name = entry.path().filename().string();
    if (!name.empty() && name.find_first_not_of("0123456789") == std::string::npos)
      highest = std::max(highest, std::stoi(name));
  }
  for (int number = highest + 1;; ++number) {
    fs::path dir = attempts / fmt::format("{:02}", number);
    if (::mkdir(dir.c_str(), 0755) == 0) return dir;
    if (errno != EEXIST)
      return make_error("{}: cannot create attempt directory: {}", dir.string(), std::strerror(errno));
  }
}

Status RunDir::write_json(std::string_view relative, const nlohmann::json& value) {
  return write_file_atomic(root_ / relative, value.dump(2) + "\n");
}

Status RunDir::write_text(std::string_view relative, std::string_view text) {
  return write_file_atomic(root_ / relative, text);
}

Result<nlohmann::json> RunDir::read_json(std::string_view relative) const {
  STITCH_ASSIGN_OR_RETURN(auto text, read_file(root_ / relative));
  auto parsed = nlohmann::json::parse(text, nullptr, false);
  if (parsed.is_discarded()) return make_error("{}: not valid JSON", (root_ / relative).string());
  return parsed;
}

std::string RunDir::task_name() const {
  std::string task = root_.filename().string();
  if (auto summary = read_json("summary.json"); summary.ok() && summary->is_object()) {
    auto found = summary->find("task");
    if (found != summary->end() && found->is_string()) task = found->get<std::string>();
  }
  return task;
}

Status RunDir::set_status(RunStatus status, const nlohmann::json& fields) {
  nlohmann::json summary = nlohmann::json::object();
  if (fs::exists(root_ / "summary.json")) {
    auto existing = read_json("summary.json");
    if (existing.ok() && existing->is_object()) summary = *existing;
  }
  if (fields.is_object()) summary.update(fields);
  summary["status"] = std::string(run_status_name(status));
  return write_json("summary.json", summary);
}

}  // namespace stitch::run
