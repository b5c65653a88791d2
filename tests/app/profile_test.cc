// `profile` over fake profilers and the fake compiler: a program is built through the build cache
// and profiled into a new attempt (its timeline kept, the sandboxes dropped, the source copied); a
// failed profile leaves no attempt and settles only a run it made; a built .so is profiled as it
// is; the reference is profiled without a capture; bad input is bad_input before anything is made.
#include "app/profile.h"

#include <gtest/gtest.h>

#include "expect_error.h"
#include "run/events.h"
#include "temp_dir.h"
#include "util/fs.h"

namespace stitch::app {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::TempDir;

const fs::path kGraph = fs::path(STITCH_TEST_DATA_DIR) / "plan/data/plan_gemm_bias_relu.graph.json";

// Plays stitch-runner (a timeline and a sandbox in the work directory) and torch.profiler.
class FakeProfilers final : public Profilers {
 public:
  bool fails = false;
  std::vector<ProfileRequest> programs;
  std::vector<ReferenceProfileRequest> references;

  static ProfileReport sample(std::string source) {
    ProfileReport report;
    report.source = std::move(source);
    report.forward_ns = 2e6;
    ProfileKernel kernel;
    kernel.name = "s00_matmul_kernel";
    kernel.launches = 1;
    kernel.total_ns = 1.5e6;
    report.kernels.push_back(kernel);
    return report;
  }
  Result<ProfileReport> program(const ProfileRequest& request) override {
    programs.push_back(request);
    STITCH_TRY(write_file_atomic(request.work_dir / "timeline.json", "{}"));
    STITCH_TRY(write_file_atomic(request.work_dir / "sandbox" / "scratch.bin", "x"));
    if (fails) return make_error("the program failed to init: CUDA error 700");
    return sample("cupti");
  }
  Status reference(const ReferenceProfileRequest& request) override {
    references.push_back(request);
    if (fails) return make_error("profile_reference exit code 1: no CUDA");
    return write_file_atomic(request.out, profile_to_json(sample("torch.profiler")).dump());
  }
};

class Profile : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(write_file_atomic(dir_.path() / "t.py", "class Model: pass\n").ok());
    ASSERT_TRUE(write_file_atomic(dir_.path() / "prog.cu", "// a program\n").ok());
    options_.target = (dir_.path() / "t.py").string();
    options_.program = (dir_.path() / "prog.cu").string();
    options_.runs_dir = (dir_.path() / "runs").string();
    options_.build_cache = (dir_.path() / "cache").string();
  }
  ProfileTools tools() {
    TaskCapture capture = [this](const fs::path&) -> Result<run::RunDir> {
      ++captures_;
      STITCH_ASSIGN_OR_RETURN(run::RunDir run, run::RunDir::create(options_.runs_dir, "t"));
      STITCH_ASSIGN_OR_RETURN(std::string graph, read_file(kGraph));
      STITCH_TRY(run.write_text("graph.json", graph));
      STITCH_TRY(run.write_text("task.py", "class Model: pass\n"));
      return run;
    };
    return {capture, compiler_, profilers_, "/stitch-runner", "sm_90"};
  }
  // The run directory of a profile (written: <run>/attempts/NN/profile.json).
  static fs::path run_of(const Profiled& profiled) {
    return profiled.written.parent_path().parent_path().parent_path();
  }
  static std::vector<std::string> event_names(const fs::path& run_dir) {
    const std::vector<json> events = run::read_events(run_dir / "events.jsonl").value();
    std::vector<std::string> names;
    for (const auto& event : events)
      names.push_back(event["event"]);
    return names;
  }
  static json summary(const fs::path& run_dir) {
    return json::parse(read_file(run_dir / "summary.json").value());
  }

  TempDir dir_{"profile"};
  ProfileOptions options_;
  FakeCompiler compiler_;
  FakeProfilers profilers_;
  int captures_ = 0;
};

TEST_F(Profile, AProgramIsBuiltAndProfiledIntoANewAttempt) {
  auto profiled = profile_target(options_, tools());
  ASSERT_TRUE(profiled.ok()) << profiled.error().message;
  const fs::path attempt = profiled->written.parent_path();
  EXPECT_EQ(profiled->written, attempt / "profile.json");
  EXPECT_EQ(attempt.filename(), "01");
  EXPECT_EQ(captures_, 1);

  ASSERT_EQ(compiler_.requests.size(), 1u);
  EXPECT_EQ(compiler_.requests[0].arch, "sm_90") << "the GPU's, without --arch";
  ASSERT_EQ(profilers_.programs.size(), 1u);
  const ProfileRequest& request = profilers_.programs[0];
  EXPECT_EQ(request.runner, "/stitch-runner");
  // The library the build cache made.
  EXPECT_EQ(request.program.parent_path().parent_path(),
            fs::path(options_.build_cache) / "entries");
  EXPECT_TRUE(fs::exists(request.program));
  EXPECT_TRUE(request.use_ncu);
  EXPECT_EQ(request.top_kernels, 3);

  auto written = profile_from_json(json::parse(read_file(profiled->written).value()));
  ASSERT_TRUE(written.ok()) << written.error().message;
  EXPECT_EQ(written->program, fs::absolute(options_.program).string());
  EXPECT_TRUE(fs::exists(attempt / "profile" / "timeline.json"));
  EXPECT_TRUE(fs::exists(attempt / "profile" / "slots.json"));
  EXPECT_FALSE(fs::exists(attempt / "profile" / "sandbox"));
  EXPECT_EQ(read_file(attempt / "src" / "prog.cu").value(), "// a program\n");
  const fs::path run_dir = run_of(*profiled);
  for (const auto& entry : fs::directory_iterator(run_dir))
    EXPECT_NE(entry.path().filename().string().rfind(".profile-", 0), 0u) << "scratch left";
  EXPECT_EQ(event_names(run_dir).back(), "profile.done");
  EXPECT_EQ(summary(run_dir)["status"], "complete");
}

TEST_F(Profile, AFailedProfileLeavesNoAttemptAndSettlesOnlyARunItMade) {
  profilers_.fails = true;
  auto profiled = profile_target(options_, tools());
  ASSERT_FALSE(profiled.ok());
  EXPECT_NE(profiled.error().message.find("CUDA error 700"), std::string::npos);
  std::vector<fs::path> runs;
  for (const auto& entry : fs::directory_iterator(options_.runs_dir))
    runs.push_back(entry.path());
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_FALSE(fs::exists(runs[0] / "attempts" / "01"));
  EXPECT_EQ(event_names(runs[0]).back(), "profile.failed");
  EXPECT_EQ(summary(runs[0])["status"], "failed");

  // A run directory it was given keeps its status.
  options_.target = runs[0].string();
  ASSERT_TRUE(run::RunDir::open(runs[0])->set_status(run::RunStatus::complete).ok());
  ASSERT_FALSE(profile_target(options_, tools()).ok());
  EXPECT_EQ(summary(runs[0])["status"], "complete");
  EXPECT_EQ(captures_, 1);
}

TEST_F(Profile, ABuiltProgramIsProfiledAsItIsAndABrokenOneNotAtAll) {
  ASSERT_TRUE(write_file_atomic(dir_.path() / "prog.so", "ELF").ok());
  options_.program = (dir_.path() / "prog.so").string();
  auto profiled = profile_target(options_, tools());
  ASSERT_TRUE(profiled.ok()) << profiled.error().message;
  EXPECT_TRUE(compiler_.requests.empty());
  EXPECT_EQ(profilers_.programs.at(0).program, fs::absolute(dir_.path() / "prog.so"));
  EXPECT_FALSE(fs::exists(profiled->written.parent_path() / "src"));

  options_.program = (dir_.path() / "prog.cu").string();
  compiler_.script.ok = false;
  compiler_.script.log =
      read_file(fs::path(STITCH_TEST_DATA_DIR) / "verify/data/broken_program.log").value();
  profiled = profile_target(options_, tools());
  ASSERT_FALSE(profiled.ok());
  EXPECT_NE(profiled.error().message.find("does not build"), std::string::npos);
  EXPECT_NE(profiled.error().message.find("undefined_scale"), std::string::npos);
  EXPECT_EQ(profilers_.programs.size(), 1u);
}

TEST_F(Profile, TheReferenceIsProfiledWithoutACapture) {
  options_.reference = true;
  options_.program.clear();
  options_.track = "tf32";
  auto profiled = profile_target(options_, tools());
  ASSERT_TRUE(profiled.ok()) << profiled.error().message;
  EXPECT_EQ(captures_, 0);
  EXPECT_EQ(profiled->report.source, "torch.profiler");
  const fs::path run_dir = profiled->written.parent_path().parent_path();
  EXPECT_EQ(profiled->written, run_dir / "reference" / "profile.json");
  ASSERT_EQ(profilers_.references.size(), 1u);
  EXPECT_EQ(profilers_.references[0].task, run_dir / "task.py");
  EXPECT_EQ(profilers_.references[0].track, "tf32");
  EXPECT_EQ(read_file(run_dir / "task.py").value(), "class Model: pass\n");
  EXPECT_EQ(event_names(run_dir).back(), "profile-reference.done");
  EXPECT_EQ(summary(run_dir)["status"], "complete");
}

TEST_F(Profile, BadInputIsCheckedBeforeAnythingIsMade) {
  auto expect_bad = [&](ProfileOptions options, const std::string& part) {
    EXPECT_TRUE(testing::is_error(profile_target(options, tools()), ErrorKind::bad_input, part));
  };
  ProfileOptions options = options_;
  options.reference = true;
  expect_bad(options, "give no program");
  options = options_;
  options.program = (dir_.path() / "t.py").string();
  expect_bad(options, "not a CUDA source");
  options = options_;
  options.peak_tflops = 60;
  expect_bad(options, "go together");
  options = options_;
  options.program.clear();
  expect_bad(options, "a program (.cu) to profile is needed");
  EXPECT_EQ(captures_, 0);
  EXPECT_FALSE(fs::exists(options_.runs_dir));
}

}  // namespace
}  // namespace stitch::app
