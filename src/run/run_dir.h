// The run directory (DESIGN.md §5): runs/<task>-<timestamp>/ with task.py, graph.json, weights,
// reference/, plan.json, attempts/NN/, best/, events.jsonl and summary.json. Every file is written
// atomically; summary.json says "running" until the run really is complete. Creating or opening
// one takes its exclusive lock (run_lock.h) for as long as the RunDir lives.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "run/events.h"
#include "run/run_lock.h"
#include "util/result.h"

namespace stitch::run {

namespace fs = std::filesystem;
using WallClock = std::function<std::chrono::system_clock::time_point()>;

enum class RunStatus { running, complete, failed };
std::string_view run_status_name(RunStatus status);

class RunDir {
 public:
  // Creates runs_root/<task>-<YYYYmmdd-HHMMSS>, adding -2, -3, ... when that name is taken, so a task
  // started twice gets two directories. Writes summary.json {"status": "running"} and opens the log.
  static Result<RunDir> create(const fs::path& runs_root, std::string_view task_name,
                               WallClock clock = std::chrono::system_clock::now);
  // Opens an existing run directory (to resume or to add to it). Refuses (bad_input, naming the
  // holder) a directory another live process has open.
  static Result<RunDir> open(const fs::path& root);
  // Opens `root` as a run directory, first making one of a bare capture directory (graph.json
  // without summary.json, as `capture --all` and `capture-batch` leave them): summary.json is
  // written and the log opened; nothing already there is touched.
  static Result<RunDir> open_or_adopt(const fs::path& root);

  const fs::path& root() const { return root_; }
  fs::path path(std::string_view relative) const { return root_ / relative; }
  EventLog& events() { return events_; }

  // attempts/NN with NN one above the highest existing number (01, 02, ...), created.
  Result<fs::path> new_attempt_dir();

  Status write_json(std::string_view relative, const nlohmann::json& value);
  Status write_text(std::string_view relative, std::string_view text);
  Result<nlohmann::json> read_json(std::string_view relative) const;

  // The task summary.json names (written by create and open_or_adopt), else the directory's name.
  std::string task_name() const;

  // Rewrites summary.json with `fields` merged in and the given status.
  Status set_status(RunStatus status, const nlohmann::json& fields = nlohmann::json::object());

 private:
  RunDir(fs::path root, std::shared_ptr<RunLock> lock, EventLog events)
      : root_(std::move(root)), lock_(std::move(lock)), events_(std::move(events)) {}

  fs::path root_;
  std::shared_ptr<RunLock> lock_;
  EventLog events_;
};

// "19_ReLU" from ".../19_ReLU.py": the stem, with characters outside [A-Za-z0-9._-] replaced by '_'.
std::string task_name_from_path(const fs::path& task_file);

// "20261130-021500" in UTC.
std::string format_timestamp(std::chrono::system_clock::time_point time);

}  // namespace stitch::run
