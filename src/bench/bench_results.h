// results.jsonl of `stitchcuda bench`: one BenchRecord a line, one line per finished task. Appends
// are one write(2) + fsync each (as events.jsonl), so a crash loses at most the line being written;
// readers skip torn and corrupt lines, and a resumed bench appends a newer record for a task it
// re-ran, which wins over the older one. Everything the table and the HTML report show comes from
// these records, so a report can be rebuilt from the file without re-running anything.
//
// One line (keys sorted; absent numbers are null):
//   {"task", "level", "task_file", "run_dir", "outcome", "reason", "track", "gpu",
//    "ours_ms", "ours_p10_ms", "ours_p90_ms", "baselines": [{"mode", "ms"}], "attempts", "wall_s",
//    "top_kernels": [{"name", "ms"}], "refine_before_ms", "floor_ms", "finished_at",
//    "insecure_sandbox": [layer names] (absent: none)}
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/bench_outcome.h"
#include "util/result.h"

namespace stitch::bench {

struct BaselineTime {
  std::string mode;  // "eager", "compile", "reduce-overhead"
  double ms = 0;
  bool operator==(const BaselineTime&) const = default;
};

struct KernelTime {
  std::string name;  // one of our program's kernels
  double ms = 0;     // its time per forward
  bool operator==(const KernelTime&) const = default;
};

struct BenchRecord {
  std::string task;       // "12_Gemm_Multiply_LeakyReLU"
  std::string level;      // the directory the task came from: "level2"
  std::string task_file;  // path as given
  std::string run_dir;
  BenchOutcome outcome = BenchOutcome::infrastructure_error;  // until the task says otherwise
  std::string reason;                                         // one line
  std::string track = "fp32";
  std::string gpu;                                          // "NVIDIA H200"
  std::optional<double> ours_ms, ours_p10_ms, ours_p90_ms;  // median and spread of our program
  std::vector<BaselineTime> baselines;                      // measured in the same run
  int attempts = 0;
  double wall_s = 0;
  std::vector<KernelTime> top_kernels;     // slowest first, may be empty
  std::optional<double> refine_before_ms;  // the first passing program's median, before refine
  std::optional<double> floor_ms;          // the plan's roofline floor (cost model), when planned
  std::string finished_at;                 // UTC ISO-8601
  // Sandbox layers its passing verification ran without (--insecure-sandbox; verify.json's
  // insecure_sandbox); empty when every layer held. The report marks such a row.
  std::vector<std::string> insecure_sandbox;

  bool passed() const { return outcome == BenchOutcome::passed; }
  // level + "/" + task: the identity of a task within a bench.
  std::string key() const { return level + "/" + task; }
  // The first baseline timed in `mode`; nullopt when not measured (or not a finite time).
  std::optional<double> baseline_ms(std::string_view mode) const;
  // baseline / ours; nullopt unless passed and both times are known and positive.
  std::optional<double> speedup(std::string_view mode) const;
  // floor / ours ("% of roofline floor", as a fraction); nullopt unless passed and both known.
  std::optional<double> floor_fraction() const;

  bool operator==(const BenchRecord&) const = default;
};

// Non-finite times are written as null (optional fields) or left out (a baseline or kernel with no
// time is no measurement), so every line is plain JSON that reads back.
nlohmann::json record_to_json(const BenchRecord& record);
// task, level and outcome (a bench_outcome_name) are required; the rest default when absent or
// null. The error names the field.
Result<BenchRecord> record_from_json(const nlohmann::json& doc);

// Appends one line to results.jsonl (created if needed). A torn tail left by a crash is ended
// first so the new record starts on its own line. Appends from threads of one process are
// serialised; separate processes appending to one file rely on O_APPEND.
Status append_record(const std::filesystem::path& results_jsonl, const BenchRecord& record);

// Every complete line that parses as a record, in first-appearance order of its task; when a task
// appears more than once the last record wins (a resumed bench re-runs unfinished tasks). Torn
// and corrupt lines are skipped and counted in `skipped` when it is not null.
Result<std::vector<BenchRecord>> read_results(const std::filesystem::path& results_jsonl,
                                              int* skipped = nullptr);

}  // namespace stitch::bench
