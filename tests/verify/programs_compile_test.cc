// The real nvcc on the hand-written programs (tests/programs/*.cu), a broken program and one that
// spills, through the build cache in a temporary directory. Needs nvcc, not a GPU (label cpu).
#include <gtest/gtest.h>
#include <unistd.h>

#include <memory>

#include "util/fs.h"
#include "util/process.h"
#include "verify/build/build_cache.h"
#include "verify/build/compiler.h"

namespace stitch {
namespace {

const std::filesystem::path kTests = STITCH_TEST_DATA_DIR;

struct ProgramCase {
  std::string name;
  std::vector<std::string> libraries;
  std::vector<std::string> kernels;  // names (substrings) that ptxas must report
};

const std::vector<ProgramCase>& program_cases() {
  static const std::vector<ProgramCase> cases = {
      {"scale_shift_relu", {}, {"scale_shift_relu_vec4", "scale_shift_relu_scalar"}},
      // All of its device code is cuBLASLt's: ptxas has no kernel of its own to report.
      {"mlp", {"cublasLt"}, {}},
      {"conv_bn_relu",
       {"cudnn"},
       {"channel_partial_sums", "channel_affine_from_sums", "normalize_relu"}},
  };
  return cases;
}

// A fresh cache in a temporary directory per test: ctest runs each test in its own process, so
// the programs are compiled by the one test that checks them, once per run.
class ProgramsCompile : public ::testing::Test {
 protected:
  void SetUp() override {
    auto nvcc = locate_nvcc();
    if (!nvcc.ok()) GTEST_SKIP() << "no nvcc: " << nvcc.error().message;
    std::string pattern =
        (std::filesystem::temp_directory_path() / "stitch_programs_XXXXXX").string();
    cache_dir_ = mkdtemp(pattern.data());
    compiler_ = std::make_unique<NvccCompiler>(
        runner_, NvccOptions{*nvcc, kTests.parent_path() / "include"});
    auto cache = BuildCache::open(cache_dir_, "test-worker", *compiler_);
    ASSERT_TRUE(cache.ok()) << cache.error().message;
    cache_ = std::make_unique<BuildCache>(std::move(cache).value());
  }

  void TearDown() override {
    std::error_code ec;
    if (!cache_dir_.empty()) std::filesystem::remove_all(cache_dir_, ec);
  }

  static BuildRequest request_for(const ProgramCase& program) {
    BuildRequest request;
    request.sources = {kTests / "programs" / (program.name + ".cu")};
    request.arch = "sm_90";
    request.libraries = program.libraries;
    request.timeout_s = 240;
    return request;
  }

  std::filesystem::path cache_dir_;
  SystemProcessRunner runner_;
  std::unique_ptr<NvccCompiler> compiler_;
  std::unique_ptr<BuildCache> cache_;
};

TEST_F(ProgramsCompile, EveryProgramBuildsWithAKernelReport) {
  for (const ProgramCase& program : program_cases()) {
    SCOPED_TRACE(program.name);
    Result<BuildResult> result = cache_->build(request_for(program));
    ASSERT_TRUE(result.ok()) << result.error().message;
    ASSERT_TRUE(result->ok) << result->log;
    EXPECT_FALSE(result->cache_hit);
    // nvcc ran in its sandbox (verify/build/compiler_sandbox.h), every required layer set up.
    EXPECT_TRUE(sandbox::find_layer_gaps(result->sandbox_layers, sandbox::kRequiredCompilerLayers,
                                         {})
                    .missing.empty())
        << "compiled outside its sandbox (" << result->sandbox_layers.size() << " layers)";
    EXPECT_TRUE(std::filesystem::is_regular_file(result->library_path));
    EXPECT_NE(result->log.find("ptxas info"), std::string::npos) << "-Xptxas -v missing";
    for (const Diagnostic& d : result->diagnostics)
      EXPECT_NE(d.severity, "error") << d.file << ":" << d.line << ": " << d.message;
    ASSERT_EQ(result->kernels.size(), program.kernels.size()) << result->log;
    for (const std::string& expected : program.kernels) {
      bool found = false;
      for (const PtxasKernelReport& kernel : result->kernels) {
        if (kernel.name.find(expected) == std::string::npos) continue;
        found = true;
        EXPECT_EQ(kernel.arch, "sm_90");
        EXPECT_GT(kernel.registers, 0);
        EXPECT_EQ(kernel.spill_store_bytes, 0) << kernel.name;
        // Demangled: the anonymous namespace shows, the mangling does not.
        EXPECT_EQ(kernel.name.find("_ZN"), std::string::npos) << kernel.name;
      }
      EXPECT_TRUE(found) << expected;
    }
    std::cout << program.name << ": " << result->seconds << " s, " << result->kernels.size()
              << " kernels\n";

    auto again = cache_->build(request_for(program));
    ASSERT_TRUE(again.ok());
    EXPECT_TRUE(again->cache_hit);
    EXPECT_EQ(again->library_path, result->library_path);
  }
}

TEST_F(ProgramsCompile, BrokenProgramGivesLocatedErrors) {
  BuildRequest request;
  request.sources = {kTests / "verify" / "data" / "broken_program.cu"};
  request.arch = "sm_90";
  auto result = cache_->build(request);
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_FALSE(result->ok);
  EXPECT_TRUE(result->library_path.empty());
  ASSERT_EQ(result->diagnostics.size(), 2u) << result->log;
  for (const Diagnostic& d : result->diagnostics) {
    EXPECT_EQ(d.severity, "error");
    EXPECT_EQ(std::filesystem::path(d.file).filename(), "broken_program.cu");
    EXPECT_FALSE(d.snippet.empty());
  }
  EXPECT_EQ(result->diagnostics[0].line, 7);
  EXPECT_NE(result->diagnostics[0].snippet.find("undefined_scale"), std::string::npos);
  EXPECT_EQ(result->diagnostics[1].line, 11);
}

TEST_F(ProgramsCompile, SpillsAreReported) {
  BuildRequest request;
  request.sources = {kTests / "verify" / "data" / "spilling_kernel.cu"};
  request.arch = "sm_90";
  auto result = cache_->build(request);
  ASSERT_TRUE(result.ok()) << result.error().message;
  ASSERT_TRUE(result->ok) << result->log;
  bool spilled = false;
  for (const PtxasKernelReport& kernel : result->kernels)
    if (kernel.name.rfind("many_live_values", 0) == 0) spilled = kernel.spill_store_bytes > 0;
  EXPECT_TRUE(spilled) << result->log;
}

}  // namespace
}  // namespace stitch
