// The files of a bench directory that say which tasks it holds and which are taken or done
// (bench.h describes the whole layout): tasks.json (the task list, fixed when the bench is
// created), claims/ (one file per task a worker has taken) and runs/<level>/ (a run per task).
#pragma once

#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "util/result.h"

namespace stitch::app {

struct BenchTask {
  std::string level;  // the directory the task came from
  std::string task;   // its name (run::task_name_from_path)
  std::string file;   // the task file, as given
  std::string key() const { return level + "/" + task; }
  // Its file name under claims/ and prepare/.
  std::string claim_name() const { return level + "__" + task; }
  bool operator==(const BenchTask&) const = default;
};

// The task files (.py) of `dirs` whose name contains `pattern`, by name within each directory, at
// most `limit` (0: all). A directory's name is its tasks' level. bad_input when a path is not a
// directory or no task is found.
Result<std::vector<BenchTask>> collect_tasks(const std::vector<std::string>& dirs,
                                             const std::string& pattern, int limit);

// tasks.json: the task list and the precision track the bench runs on (a resumed bench keeps it).
struct BenchTaskFile {
  std::vector<BenchTask> tasks;
  std::string track = "fp32";  // a bench written before tracks were recorded ran fp32
};
Status write_tasks(const std::filesystem::path& bench_dir, const std::vector<BenchTask>& tasks,
                   const std::string& track);
Result<BenchTaskFile> read_task_file(const std::filesystem::path& bench_dir);
// read_task_file's task list alone.
Result<std::vector<BenchTask>> read_tasks(const std::filesystem::path& bench_dir);

// The newest run directory of `task` under runs/<level>/, if any.
std::optional<std::filesystem::path> existing_run(const std::filesystem::path& bench_dir,
                                                  const BenchTask& task);
// Whether that run holds a capture (graph.json).
bool has_capture(const std::filesystem::path& bench_dir, const BenchTask& task);

// level/task of every task results.jsonl has a record of.
std::set<std::string> recorded_keys(const std::filesystem::path& bench_dir);

// Takes `task` for `who` (claims/ with O_EXCL): false when another worker has it or it is done.
bool claim_task(const std::filesystem::path& bench_dir, const BenchTask& task,
                const std::string& who);
// Frees the claims of tasks without a record (interrupted), so that a resumed bench runs them.
void free_interrupted_claims(const std::filesystem::path& bench_dir);

// "2026-12-01T02:09:20Z": records and reports say when in ISO 8601, UTC.
std::string utc_now_iso();

}  // namespace stitch::app
