// The kernel headers through the real nvcc, no GPU needed (label cpu): every kernels/*.cuh alone in
// a translation unit (self-contained: it brings its own includes), and instantiate_all.cu, which
// instantiates every template with sample functors, for sm_80 and sm_90 (gemm_tf32x3.cuh for sm_100
// too), C++17 as generated
// programs are built, warnings as errors; and the tiny hand-written program on host_program.cuh
// (tiny_program.cu) linked into a shared library against the CUDA runtime alone.
#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "util/fs.h"
#include "util/process.h"

namespace stitch {
namespace {

const fs::path kRoot = STITCH_SOURCE_DIR;

class HeadersCompile : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "stitch_kernels_XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  // nvcc for sm_80 and sm_90 (or `targets`) with `extra` ("-c", or the flags that link a shared
  // library); the result, with nvcc's output on failure.
  ::testing::AssertionResult compile(const fs::path& source,
                                     std::vector<std::string> extra = {"-c"},
                                     const std::string& output_suffix = ".o",
                                     std::vector<std::string> targets = {
                                         "-gencode=arch=compute_80,code=sm_80",
                                         "-gencode=arch=compute_90,code=sm_90"}) {
    ProcessSpec spec;
    spec.argv = {STITCH_NVCC, "-std=c++17"};
    spec.argv.insert(spec.argv.end(), extra.begin(), extra.end());
    spec.argv.insert(spec.argv.end(), targets.begin(), targets.end());
    spec.argv.insert(spec.argv.end(),
                     {// As generated programs are built (NvccCompiler::include_dirs): the repo
                      // root and include/ (program_support.cuh uses the ABI header).
                      "-I" + kRoot.string(), "-I" + (kRoot / "include").string(),
                      "--Werror=all-warnings", "-Xcompiler=-Wall,-Wextra,-Werror", "-o",
                      (dir_ / (source.stem().string() + output_suffix)).string(),
                      source.string()});
    spec.timeout_s = 300;
    auto result = runner_.run(spec);
    if (!result.ok()) return ::testing::AssertionFailure() << result.error().message;
    if (!result->succeeded())
      return ::testing::AssertionFailure()
             << source.filename().string() << ": " << result->describe() << "\n"
             << result->stderr_text << result->stdout_text;
    return ::testing::AssertionSuccess();
  }

  fs::path dir_;
  SystemProcessRunner runner_;
};

TEST_F(HeadersCompile, EveryHeaderAlone) {
  std::set<std::string> headers;
  for (const auto& entry : fs::directory_iterator(kRoot / "kernels"))
    if (entry.path().extension() == ".cuh") headers.insert(entry.path().filename().string());
  for (const char* expected :
       {"runtime.cuh", "elementwise.cuh", "reduction.cuh", "row.cuh", "matmul.cuh",
        "matmul_tf32x3.cuh", "program_support.cuh", "host_program.cuh", "conv.cuh",
        "conv_depthwise.cuh", "pooling.cuh", "attention.cuh", "attention_mma.cuh", "scan.cuh",
        "rnn.cuh"})
    EXPECT_EQ(headers.count(expected), 1u) << expected;
  for (const std::string& header : headers) {
    const fs::path source = dir_ / (fs::path(header).stem().string() + "_alone.cu");
    ASSERT_TRUE(write_file_atomic(source, "#include \"kernels/" + header + "\"\n").ok());
    EXPECT_TRUE(compile(source));
  }
}

TEST_F(HeadersCompile, EveryTemplateInstantiated) {
  EXPECT_TRUE(compile(kRoot / "tests/kernels/instantiate_all.cu"));
}

// The mma.sync 3xTF32 GEMM (cp.async, mma m16n8k8) builds for a B200 as well: every generated
// program must (issue 13, item 9). sm_80 and sm_90 are EveryHeaderAlone's.
TEST_F(HeadersCompile, GemmTf32x3BuildsForSm100) {
  const fs::path source = dir_ / "gemm_tf32x3_sm100.cu";
  ASSERT_TRUE(write_file_atomic(source, "#include \"kernels/gemm_tf32x3.cuh\"\n"
                                        "void launch(const float* a, float* d, std::string& e) {\n"
                                        "  stitch::kernels::GemmTf32x3 g;\n"
                                        "  g.run(a, a, nullptr, d, nullptr, 1.0f, 0.0f, nullptr, e);\n"
                                        "}\n")
                  .ok());
  EXPECT_TRUE(compile(source, {"-c"}, ".o", {"-gencode=arch=compute_100,code=sm_100"}));
}

// A program without GEMMs must not need cuBLASLt: the skeleton's cuBLASLt calls are compiled only
// for kUsesMatmul programs (--no-undefined fails the link on any unresolved symbol).
TEST_F(HeadersCompile, TinyProgramLinksWithTheRuntimeAlone) {
  EXPECT_TRUE(compile(kRoot / "tests/kernels/tiny_program.cu",
                      {"-shared", "-Xcompiler=-fPIC", "-cudart=shared",
                       "-L" + std::string(STITCH_CUDA_LIBRARY_DIR), "-Xlinker=--no-undefined"},
                      ".so"));
  EXPECT_TRUE(fs::is_regular_file(dir_ / "tiny_program.so"));
}

}  // namespace
}  // namespace stitch
