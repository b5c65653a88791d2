// `stitchcuda dataset RUN_DIRS... --out DIR [--val-fraction F] [--jsonl-only]`: single-turn RL
// samples of run directories as train/val Parquet in verl's columns (docs/dataset.md) — options
// and printing only; the work is src/dataset's.
#include <fmt/format.h>

#include "cli/commands.h"
#include "dataset/dataset_export.h"
#include "harness/harness.h"
#include "util/process.h"

namespace stitch::cli {

CommandAction setup_dataset(CLI::App& app) {
  auto o = std::make_shared<dataset::ExportOptions>();
  auto run_dirs = std::make_shared<std::vector<std::string>>();
  auto jsonl_only = std::make_shared<bool>(false);
  app.add_option("run_dirs", *run_dirs, "Run directories of `stitchcuda run` or `bench`")
      ->required();
  app.add_option("--out", o->out_dir, "Where train/val .parquet (and .jsonl) go")->required();
  app.add_option("--val-fraction", o->val_fraction,
                 "Share of tasks (by a hash of the task id) in the validation split (default 0.1)");
  app.add_flag("--jsonl-only", *jsonl_only, "Write the JSONL records only, no Parquet (no Python)");
  return [o, run_dirs, jsonl_only]() -> Result<CommandEnd> {
    o->run_dirs.assign(run_dirs->begin(), run_dirs->end());
    o->parquet = !*jsonl_only;
    PythonLocation python;
    if (o->parquet) {
      STITCH_ASSIGN_OR_RETURN(harness::HarnessLocation location, harness::locate_harness());
      python = {location.python, location.python_dir};
    }
    SystemProcessRunner runner;
    STITCH_ASSIGN_OR_RETURN(dataset::ExportSummary s, dataset::export_dataset(*o, runner, python));
    fmt::print(
        "{} runs → {} samples ({} skill 1 generate, {} skill 2 improve; {} duplicates "
        "dropped)\n",
        s.runs, s.samples, s.skill_generate, s.skill_improve, s.duplicates);
    fmt::print("train {} samples / {} tasks, val {} samples / {} tasks → {}\n", s.train,
               s.train_tasks, s.val, s.val_tasks, o->out_dir.string());
    return CommandEnd::succeeded;
  };
}

}  // namespace stitch::cli
