// The built-in judge on the fixture attempts of tests/reward/data (one graph: a Linear + ReLU; four
// programs: a libtorch copy of the reference, cuBLASLt alone, cuBLAS for the GEMM with an own
// bias+ReLU kernel, and one fused, tiled own kernel), the program scanner, skill compliance, and
// the evidence reader's layout rules.
#include <gtest/gtest.h>

#include <fstream>

#include <unistd.h>

#include "agents/attempt_files.h"
#include "reward/judge_builtin.h"
#include "util/fs.h"

namespace stitch::reward {
namespace {

const fs::path kData = fs::path(STITCH_TEST_DATA_DIR) / "reward" / "data";

AttemptEvidence read_fixture(const std::string& name) {
  EvidenceSources sources;
  sources.graph = kData / "graph.json";
  auto evidence = read_attempt_evidence(kData / name, sources, nullptr);
  EXPECT_TRUE(evidence.ok()) << evidence.error().message;
  return evidence.ok() ? *evidence : AttemptEvidence{};
}

RubricScores judge(const AttemptEvidence& evidence) {
  BuiltinJudge judge;
  auto scores = judge.judge(evidence);
  EXPECT_TRUE(scores.ok());
  return *scores;
}

double score_of(const std::string& name, Dimension dimension) {
  return judge(read_fixture(name))[dimension].score;
}

const std::vector<std::string> kFixtures = {"reference_copy", "library_only", "library_gemm",
                                            "fused_own"};

TEST(BuiltinJudgeTest, ACopyOfTheReferenceIsLowestOnAntiHacking) {
  double copy = score_of("reference_copy", Dimension::anti_hacking);
  EXPECT_EQ(copy, 1.0);
  for (const std::string& other : kFixtures) {
    if (other == "reference_copy") continue;
    EXPECT_GT(score_of(other, Dimension::anti_hacking), copy) << other;
  }
  // The libtorch include alone is enough, without the Verifier's finding.
  AttemptEvidence unverified = read_fixture("reference_copy");
  unverified.verify.reset();
  EXPECT_EQ(judge(unverified)[Dimension::anti_hacking].score, 1.0);
  // ... and the reward is 0.
  auto reward = score_attempt(read_fixture("reference_copy"), {});
  ASSERT_TRUE(reward.ok());
  EXPECT_TRUE(reward->hacked);
  EXPECT_EQ(reward->reward, 0.0);
}

TEST(BuiltinJudgeTest, APythonCopyOfTheReferenceScoresOne) {
  AttemptEvidence evidence = read_fixture("fused_own");
  evidence.sources = {{"model_new.py", "import torch\nclass ModelNew(torch.nn.Module): pass\n"}};
  EXPECT_EQ(judge(evidence)[Dimension::anti_hacking].score, 1.0);
  EXPECT_EQ(judge(evidence)[Dimension::operator_coverage].score, 1.0);
}

TEST(BuiltinJudgeTest, LeavingTheDominantOpToALibraryScoresLowOnCoverage) {
  for (std::string name : {"library_gemm", "library_only"}) {
    RubricScores scores = judge(read_fixture(name));
    EXPECT_LE(scores[Dimension::operator_coverage].score, 2.5) << name;
    ASSERT_GE(scores[Dimension::operator_coverage].evidence.size(), 2u);
    EXPECT_NE(scores[Dimension::operator_coverage].evidence[1].find("addmm"), std::string::npos);
    EXPECT_NE(scores[Dimension::operator_coverage].evidence[1].find("library"), std::string::npos);
  }
  EXPECT_GE(score_of("fused_own", Dimension::operator_coverage), 4.5);
  WorkShares shares = attribute_work(*read_fixture("library_gemm").reference,
                                     scan_program(read_fixture("library_gemm").sources, ""));
  EXPECT_GT(shares.library, 0.8);
  EXPECT_GT(shares.own, 0.0);
  EXPECT_NEAR(shares.own + shares.library + shares.left_out, 1.0, 1e-9);
}

TEST(BuiltinJudgeTest, AFusedOwnKernelProgramIsHigherOnEngineeringThanLibraryOnes) {
  double fused = score_of("fused_own", Dimension::cuda_engineering);
  EXPECT_GT(fused, score_of("library_only", Dimension::cuda_engineering));
  EXPECT_GT(fused, score_of("library_gemm", Dimension::cuda_engineering));
  EXPECT_LE(score_of("library_only", Dimension::cuda_engineering), 2.0);
  EXPECT_GE(fused, 4.0);
}

TEST(BuiltinJudgeTest, TensorCoresFromTheSass) {
  std::vector<SourceText> plain = {{"p.cu", "__global__ void k(float* y) { y[0] = 1; }"}};
  EXPECT_FALSE(scan_program(plain, "").tensor_cores);
  ProgramFeatures f = scan_program(plain, "        /*0a10*/  HMMA.1684.F32.TF32 R4, R8, R12, R4 ;");
  EXPECT_TRUE(f.tensor_cores);
  EXPECT_TRUE(f.tensor_cores_in_sass);
  EXPECT_TRUE(scan_program(plain, "  LDG.E.128 R4, desc[UR4][R2.64] ;").vectorised);
}

TEST(BuiltinJudgeTest, CommentsDoNotCount) {
  std::vector<SourceText> commented = {
      {"p.cu",
       "// unlike #include <torch/extension.h> we use cuBLAS: cublasSgemm(...)\n"
       "/* __shared__ float4 */ __global__ void k() {}\n"}};
  ProgramFeatures f = scan_program(commented, "");
  EXPECT_TRUE(f.torch_uses.empty());
  EXPECT_FALSE(f.library_gemm);
  EXPECT_FALSE(f.shared_tiling);
  EXPECT_FALSE(f.vectorised);
  EXPECT_EQ(f.own_kernels, 1);
}

// A fake cuobjdump: answers with fixed SASS and records what it was asked.
class FakeSass final : public SassInspector {
 public:
  Result<std::string> disassemble(const fs::path& library) override {
    asked.push_back(library);
    return std::string("HGMMA.64x128x8.F32.TF32 R24, gdesc[UR8], R24 ;");
  }
  std::vector<fs::path> asked;
};

fs::path temp_dir(const std::string& name) {
  fs::path dir =
      fs::temp_directory_path() / ("stitch_reward_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(BuiltinJudgeTest, TheReaderAsksForTheSassOfTheBuiltLibrary) {
  fs::path dir = temp_dir("sass");
  fs::copy(kData / "library_gemm", dir, fs::copy_options::recursive);
  std::ofstream(dir / "program.so") << "not really an ELF";
  auto doc = read_json_file(dir / "verify.json");
  ASSERT_TRUE(doc.ok());
  (*doc)["build"]["library"] = (dir / "program.so").string();
  ASSERT_TRUE(write_json_file(dir / "verify.json", *doc).ok());
  FakeSass sass;
  auto evidence = read_attempt_evidence(dir, {kData / "graph.json", {}, {}}, &sass);
  ASSERT_TRUE(evidence.ok()) << evidence.error().message;
  ASSERT_EQ(sass.asked.size(), 1u);
  EXPECT_EQ(sass.asked[0], dir / "program.so");
  EXPECT_TRUE(scan_program(evidence->sources, evidence->sass).tensor_cores_in_sass);
  fs::remove_all(dir);
}

TEST(BuiltinJudgeTest, KernelsInTheHeadersItIncludesAreTheProgramsOwn) {
  fs::path dir = temp_dir("draft");
  fs::create_directories(dir / "src");
  fs::create_directories(dir / "inc" / "lib");
  std::ofstream(dir / "src" / "program.cu")
      << "#include \"lib/tile.cuh\"\nint run() { return 0; }\n";
  std::ofstream(dir / "inc" / "lib" / "tile.cuh")
      << "__global__ void tiled() { __shared__ float s[32]; }\n";
  agents::CodeDraft draft;
  draft.sources = {dir / "src" / "program.cu"};
  draft.include_dirs = {dir / "inc"};
  ASSERT_TRUE(agents::write_draft(dir, draft).ok());
  auto evidence = read_attempt_evidence(dir, {}, nullptr);
  ASSERT_TRUE(evidence.ok()) << evidence.error().message;
  ASSERT_EQ(evidence->sources.size(), 2u);
  EXPECT_EQ(evidence->sources[0].name, "src/program.cu");
  EXPECT_EQ(evidence->sources[1].name, "lib/tile.cuh");
  ProgramFeatures f = scan_program(evidence->sources, "");
  EXPECT_EQ(f.own_kernels, 1);
  EXPECT_TRUE(f.shared_tiling);
  fs::remove_all(dir);
}

TEST(BuiltinJudgeTest, TheKernelsPtxasCompiledAreTheOwnKernels) {
  ProgramFeatures f = scan_program({{"p.cu", "int run();"}}, "");
  VerifyReport verify;
  PtxasKernelReport kernel;
  kernel.name = "stitch::tiled_gemm";
  kernel.shared_bytes = 4096;
  verify.kernels.push_back(kernel);
  verify.built = true;
  add_build_facts(f, verify);
  EXPECT_EQ(f.own_kernels, 1);
  EXPECT_TRUE(f.shared_tiling);
  // Headers full of kernels the program never instantiates.
  ProgramFeatures library =
      scan_program({{"kernels/gemm.cuh", "__global__ void g() { __shared__ float4 s[8]; }"}}, "");
  VerifyReport none;
  none.built = true;
  add_build_facts(library, none);
  EXPECT_EQ(library.own_kernels, 0);
  EXPECT_FALSE(library.shared_tiling);
  EXPECT_FALSE(library.vectorised);
}

}  // namespace
}  // namespace stitch::reward
