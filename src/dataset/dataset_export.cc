#include "dataset/dataset_export.h"

#include <set>

#include <fmt/format.h>

#include "dataset/dataset.h"
#include "util/fs.h"

namespace stitch::dataset {

namespace fs = std::filesystem;

namespace {

Status write_jsonl(const fs::path& path, const std::vector<Sample>& samples) {
  std::string text;
  for (const Sample& sample : samples)
    text += sample_to_record(sample).dump() + "\n";
  return write_file_atomic(path, text);
}

// The last non-empty line of a child's stderr (a Python traceback's exception line).
std::string last_line(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
    text.remove_suffix(1);
  const size_t start = text.rfind('\n');
  return std::string(start == std::string_view::npos ? text : text.substr(start + 1));
}

Status write_parquet(const fs::path& jsonl, ProcessRunner& runner, const PythonLocation& python) {
  fs::path parquet = jsonl;
  parquet.replace_extension(".parquet");
  ProcessSpec spec = python_module_spec(python, "stitch_harness",
                                        {"dataset-parquet", jsonl.string(), parquet.string()});
  STITCH_ASSIGN_OR_RETURN(ProcessResult process, runner.run(spec));
  if (!process.succeeded())
    return make_error(ErrorKind::machine, "the Parquet writer failed on {} (exit {}): {}",
                      jsonl.string(), process.exit_code, last_line(process.stderr_text));
  return {};
}

int count_tasks(const std::vector<Sample>& samples) {
  std::set<std::string> tasks;
  for (const Sample& sample : samples)
    tasks.insert(sample.task_id);
  return static_cast<int>(tasks.size());
}

}  // namespace

Result<ExportSummary> export_dataset(const ExportOptions& options, ProcessRunner& runner,
                                     const PythonLocation& python) {
  if (options.val_fraction < 0 || options.val_fraction > 1)
    return make_error(ErrorKind::bad_input, "--val-fraction must be within [0, 1]");
  ExportSummary summary;
  std::vector<Sample> all;
  for (const fs::path& run_dir : options.run_dirs) {
    STITCH_ASSIGN_OR_RETURN(std::vector<Sample> samples, samples_from_run(run_dir));
    all.insert(all.end(), std::make_move_iterator(samples.begin()),
               std::make_move_iterator(samples.end()));
    ++summary.runs;
  }
  all = deduplicate(std::move(all), &summary.duplicates);
  std::vector<Sample> train, val;
  for (Sample& sample : all) {
    (sample.skill == Skill::generate ? summary.skill_generate : summary.skill_improve)++;
    (in_validation(sample.task_id, options.val_fraction) ? val : train)
        .push_back(std::move(sample));
  }
  summary.samples = static_cast<int>(train.size() + val.size());
  summary.train = static_cast<int>(train.size());
  summary.val = static_cast<int>(val.size());
  summary.train_tasks = count_tasks(train);
  summary.val_tasks = count_tasks(val);
  std::error_code ec;
  fs::create_directories(options.out_dir, ec);
  if (ec) return make_error(ErrorKind::machine, "{}: {}", options.out_dir.string(), ec.message());
  for (const auto& [name, samples] : {std::pair{"train", &train}, std::pair{"val", &val}}) {
    const fs::path jsonl = options.out_dir / (std::string(name) + ".jsonl");
    STITCH_TRY(write_jsonl(jsonl, *samples));
    if (options.parquet) STITCH_TRY(write_parquet(jsonl, runner, python));
  }
  return summary;
}

}  // namespace stitch::dataset
