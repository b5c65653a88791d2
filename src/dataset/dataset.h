// Single-turn training samples from the loop's run directories (docs/dataset.md): skill 1 (the task
// and its plan → a program) and skill 2 (a program and its feedback.json → an improved program),
// one record per sample in the columns verl reads (data_source, prompt as chat messages, ability,
// reward_model {style, ground_truth = the task id}, extra_info), deduplicated by prompt and split
// by task so that no task is in both splits.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/result.h"

namespace stitch::dataset {

// generate: skill 1 (task + plan → code); improve: skill 2 (code + feedback → improved code).
enum class Skill : uint8_t { generate, improve };
std::string_view skill_name(Skill skill);

struct Sample {
  Skill skill = Skill::generate;
  std::string task_id;    // the reward's ground truth: the task a candidate is verified against
  std::string task_path;  // the run's captured task.py
  std::string run_dir;
  int attempt = 0;  // the attempt that answered this prompt in the run
  std::string system;
  std::string user;
  std::optional<std::string> reference_outcome;  // that attempt's verdict (result.json)
};

// Every sample of one run directory: for each subtask or integration attempt (in number order),
// skill 2 when an earlier attempt of the same scope (plan version, kind, subtask) left a program
// and a feedback.json — the prompt is the latest such program and its feedback — else skill 1.
// Refine candidates are left out (each changes the best program, not the attempt before it).
Result<std::vector<Sample>> samples_from_run(const std::filesystem::path& run_dir);

// SHA-256 (hex) over the skill and the prompt's messages.
std::string prompt_hash(const Sample& sample);
// The first sample of each prompt hash, in order; `removed` counts the rest.
std::vector<Sample> deduplicate(std::vector<Sample> samples, int* removed = nullptr);
// Whether `task_id` belongs to the validation split: the first 32 bits of its SHA-256 as a
// fraction of 2^32, below `val_fraction`. The same task always lands in the same split.
bool in_validation(std::string_view task_id, double val_fraction);

// One JSONL record in verl's columns.
nlohmann::json sample_to_record(const Sample& sample);

}  // namespace stitch::dataset
