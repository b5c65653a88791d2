// `stitchcuda dataset`: samples of many run directories written as train/val JSONL, then converted
// to Parquet by the harness's writer (python -m stitch_harness dataset-parquet, pyarrow).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "util/process.h"
#include "util/python_module.h"
#include "util/result.h"

namespace stitch::dataset {

struct ExportOptions {
  std::vector<std::filesystem::path> run_dirs;
  std::filesystem::path out_dir;
  double val_fraction = 0.1;
  bool parquet = true;  // false: the JSONL only (no Python)
};

struct ExportSummary {
  int runs = 0;
  int samples = 0;  // after deduplication
  int duplicates = 0;
  int train = 0;
  int val = 0;
  int train_tasks = 0;
  int val_tasks = 0;
  int skill_generate = 0;
  int skill_improve = 0;
};

// Writes out_dir/{train,val}.jsonl and, with `parquet`, out_dir/{train,val}.parquet.
Result<ExportSummary> export_dataset(const ExportOptions& options, ProcessRunner& runner,
                                     const PythonLocation& python);

}  // namespace stitch::dataset
