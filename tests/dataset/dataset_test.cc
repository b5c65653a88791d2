// Samples of the fixture run directories (data/): skill 1 for the first attempt of a scope, skill 2
// from the previous attempt's program and feedback, refine candidates left out; deduplication by
// prompt; a split by task; the records in verl's columns; the JSONL export.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>

#include "dataset/dataset.h"
#include "dataset/dataset_export.h"
#include "util/fs.h"

namespace stitch::dataset {
namespace {

namespace fs = std::filesystem;
const fs::path kData = fs::path(STITCH_TEST_DATA_DIR) / "dataset" / "data";

TEST(DatasetTest, SkillsFollowTheAttempts) {
  auto samples = samples_from_run(kData / "run_relu");
  ASSERT_TRUE(samples.ok()) << samples.error().message;
  ASSERT_EQ(samples->size(), 2u);  // attempt 3 is a refine candidate
  const Sample& first = (*samples)[0];
  EXPECT_EQ(first.skill, Skill::generate);
  EXPECT_EQ(first.task_id, "relu");
  EXPECT_EQ(first.attempt, 1);
  EXPECT_EQ(first.reference_outcome, "wrong");
  EXPECT_NE(first.user.find("torch.relu(x)"), std::string::npos);  // the task
  EXPECT_NE(first.user.find("s01_relu"), std::string::npos);       // the plan
  const Sample& second = (*samples)[1];
  EXPECT_EQ(second.skill, Skill::improve);
  EXPECT_EQ(second.attempt, 2);
  EXPECT_EQ(second.reference_outcome, "passed");
  EXPECT_NE(second.user.find("y[0] = x[0]"), std::string::npos);         // attempt 1's program
  EXPECT_NE(second.user.find("not just the first"), std::string::npos);  // its feedback
  EXPECT_EQ(second.user.find("fmaxf"), std::string::npos);               // not its own answer
}

TEST(DatasetTest, AnAttemptWithoutProgramStillGetsTheFeedbackPrompt) {
  auto samples = samples_from_run(kData / "run_gemm");
  ASSERT_TRUE(samples.ok()) << samples.error().message;
  ASSERT_EQ(samples->size(), 2u);
  EXPECT_EQ((*samples)[0].skill, Skill::generate);
  EXPECT_NE((*samples)[0].user.find("subtask 0"), std::string::npos);
  EXPECT_EQ((*samples)[1].skill, Skill::improve);
  EXPECT_NE((*samples)[1].user.find("undeclared"), std::string::npos);
  EXPECT_FALSE((*samples)[1].reference_outcome.has_value());  // no result.json
}

TEST(DatasetTest, NotARunDirectoryIsBadInput) {
  auto samples = samples_from_run(kData / "none");
  ASSERT_FALSE(samples.ok());
  EXPECT_EQ(samples.error().kind, ErrorKind::bad_input);
  EXPECT_NE(samples.error().message.find("task.py"), std::string::npos);
}

TEST(DatasetTest, DeduplicatesByPrompt) {
  auto a = samples_from_run(kData / "run_relu");
  ASSERT_TRUE(a.ok());
  std::vector<Sample> twice = *a;
  for (Sample sample : *a) {
    sample.run_dir = "/elsewhere";  // the same prompt from another run
    twice.push_back(sample);
  }
  int removed = 0;
  std::vector<Sample> kept = deduplicate(twice, &removed);
  EXPECT_EQ(removed, 2);
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_NE(kept[0].run_dir, "/elsewhere");  // the first is kept
  EXPECT_NE(prompt_hash(kept[0]), prompt_hash(kept[1]));
}

TEST(DatasetTest, SplitIsByTaskAndDeterministic) {
  EXPECT_FALSE(in_validation("relu", 0.0));
  EXPECT_TRUE(in_validation("relu", 1.0));
  int val = 0;
  for (int i = 0; i < 1000; ++i) {
    const std::string task = "task_" + std::to_string(i);
    EXPECT_EQ(in_validation(task, 0.1), in_validation(task, 0.1));
    val += in_validation(task, 0.1);
    if (in_validation(task, 0.1)) {
      EXPECT_TRUE(in_validation(task, 0.5));  // monotone in fraction
    }
  }
  EXPECT_GT(val, 60);
  EXPECT_LT(val, 140);
}

TEST(DatasetTest, RecordHasVerlColumns) {
  auto samples = samples_from_run(kData / "run_relu");
  ASSERT_TRUE(samples.ok());
  const nlohmann::json record = sample_to_record((*samples)[1]);
  EXPECT_EQ(record["data_source"], "stitchcuda/improve");
  EXPECT_EQ(record["ability"], "cuda");
  ASSERT_EQ(record["prompt"].size(), 2u);
  EXPECT_EQ(record["prompt"][0]["role"], "system");
  EXPECT_EQ(record["prompt"][1]["role"], "user");
  EXPECT_EQ(record["reward_model"]["style"], "rule");
  EXPECT_EQ(record["reward_model"]["ground_truth"], "relu");
  EXPECT_EQ(record["extra_info"]["task_id"], "relu");
  EXPECT_EQ(record["extra_info"]["skill"], "improve");
  EXPECT_EQ(record["extra_info"]["attempt"], 2);
  EXPECT_EQ(record["extra_info"]["reference_outcome"], "passed");
  EXPECT_TRUE(record["extra_info"]["task_path"].get<std::string>().ends_with("run_relu/task.py"));
}

TEST(DatasetTest, ExportWritesSplitsWithNoTaskInBoth) {
  const fs::path out = fs::path(testing::TempDir()) / "dataset_export_test";
  fs::remove_all(out);
  ExportOptions options;
  options.run_dirs = {kData / "run_relu", kData / "run_gemm", kData / "run_relu"};
  options.out_dir = out;
  options.val_fraction = in_validation("relu", 0.5) == in_validation("gemm", 0.5) ? 1.0 : 0.5;
  options.parquet = false;
  SystemProcessRunner runner;  // not started without parquet
  auto summary = export_dataset(options, runner, PythonLocation{});
  ASSERT_TRUE(summary.ok()) << summary.error().message;
  EXPECT_EQ(summary->runs, 3);
  EXPECT_EQ(summary->duplicates, 2);
  EXPECT_EQ(summary->samples, 4);
  EXPECT_EQ(summary->skill_generate, 2);
  EXPECT_EQ(summary->skill_improve, 2);
  EXPECT_EQ(summary->train + summary->val, 4);
  std::map<std::string, std::set<std::string>> tasks;
  for (const char* split : {"train", "val"}) {
    std::ifstream in(out / (std::string(split) + ".jsonl"));
    ASSERT_TRUE(in) << split;
    for (std::string line; std::getline(in, line);)
      tasks[split].insert(nlohmann::json::parse(line)["reward_model"]["ground_truth"]);
  }
  for (const std::string& task : tasks["train"])
    EXPECT_FALSE(tasks["val"].contains(task)) << task;
  EXPECT_EQ(tasks["train"].size() + tasks["val"].size(), 2u);
  options.val_fraction = 1.5;
  EXPECT_FALSE(export_dataset(options, runner, PythonLocation{}).ok());
}

}  // namespace
}  // namespace stitch::dataset
