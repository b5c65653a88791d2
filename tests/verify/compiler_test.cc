// NvccCompiler against a scripted ProcessRunner (command line, result mapping, version caching),
// target flags, nvcc lookup, BuildResult JSON, FakeCompiler, and the GPU query's fallbacks.
#include "verify/build/compiler.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "util/fs.h"
#include "verify/build/gpu_info.h"

namespace stitch {
namespace {

const std::filesystem::path kData = std::filesystem::path(STITCH_TEST_DATA_DIR) / "verify" / "data";

// Answers each run with `next`, records the specs, and writes the output file nvcc would write.
class ScriptedRunner final : public ProcessRunner {
 public:
  ProcessResult next;
  bool write_output = false;
  std::vector<ProcessSpec> specs;

  Result<ProcessResult> run(const ProcessSpec& spec) override {
    specs.push_back(spec);
    if (write_output) {
      auto o = std::find(spec.argv.begin(), spec.argv.end(), "-o");
      if (o != spec.argv.end() && o + 1 != spec.argv.end()) std::ofstream(*(o + 1)) << "ELF";
    }
    return next;
  }
};

class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "stitch_compiler_XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

bool contains(const std::vector<std::string>& argv, const std::string& item) {
  return std::find(argv.begin(), argv.end(), item) != argv.end();
}

TEST(NvccArchFlags, PlainAndArchitectureSpecificTargets) {
  EXPECT_EQ(*nvcc_arch_flags("sm_90"), std::vector<std::string>{"-arch=sm_90"});
  EXPECT_EQ(*nvcc_arch_flags("sm_80"), std::vector<std::string>{"-arch=sm_80"});
  EXPECT_EQ(*nvcc_arch_flags("sm_90a"),
            (std::vector<std::string>{"-gencode", "arch=compute_90a,code=sm_90a"}));
  EXPECT_EQ(*nvcc_arch_flags("sm_100f"),
            (std::vector<std::string>{"-gencode", "arch=compute_100f,code=sm_100f"}));
  EXPECT_FALSE(nvcc_arch_flags("compute_90").ok());
  EXPECT_FALSE(nvcc_arch_flags("sm_90; rm -rf /").ok());
  EXPECT_FALSE(nvcc_arch_flags("").ok());
}

TEST(NvccCompiler, CommandLine) {
  ScriptedRunner runner;
  NvccCompiler compiler(runner, {"/opt/cuda/bin/nvcc", "/checkout/include"});
  BuildRequest request;
  request.sources = {"/work/attempt/program.cu"};
  request.arch = "sm_90a";
  request.libraries = {"cublasLt", "cudnn"};
  request.extra_flags = {"-DTILE=64"};
  request.output_path = "/work/attempt/build/program.so";
  auto argv = compiler.command_for(request);
  ASSERT_TRUE(argv.ok()) << argv.error().message;
  EXPECT_EQ(argv->front(), "/opt/cuda/bin/nvcc");
  for (const char* flag :
       {"-shared", "-Xcompiler", "-fPIC", "-O3", "-std=c++17", "-lineinfo", "-Xptxas", "-v",
        "--expt-relaxed-constexpr", "-gencode", "arch=compute_90a,code=sm_90a",
        "-I/checkout/include", "-DTILE=64", "/work/attempt/program.cu", "-lcublasLt", "-lcudnn"})
    EXPECT_TRUE(contains(*argv, flag)) << flag;
  auto o = std::find(argv->begin(), argv->end(), "-o");
  ASSERT_NE(o, argv->end());
  EXPECT_EQ(*(o + 1), "/work/attempt/build/program.so");
  // Libraries after the sources, so the linker resolves the sources' references against them.
  EXPECT_GT(std::find(argv->begin(), argv->end(), "-lcudnn"),
            std::find(argv->begin(), argv->end(), "/work/attempt/program.cu"));

  request.output_kind = OutputKind::executable;
  request.arch = "sm_90";
  argv = compiler.command_for(request);
  ASSERT_TRUE(argv.ok());
  EXPECT_FALSE(contains(*argv, "-shared"));
  EXPECT_TRUE(contains(*argv, "-arch=sm_90"));

  request.sources.clear();
  EXPECT_FALSE(compiler.command_for(request).ok());
}

TEST(NvccCompiler, CompileErrorIsDataWithDiagnostics) {
  TempDir dir;
  std::filesystem::copy_file(kData / "broken_program.cu", dir.path() / "broken_program.cu");
  ScriptedRunner runner;
  auto log = read_file(kData / "broken_program.log");
  ASSERT_TRUE(log.ok());
  // nvcc was given an absolute path, so it reports one.
  std::string absolute_log = *log;
  std::string absolute_name = (dir.path() / "broken_program.cu").string();
  for (size_t at = 0; (at = absolute_log.find("broken_program.cu(", at)) != std::string::npos;
       at += absolute_name.size())
    absolute_log.replace(at, std::string("broken_program.cu").size(), absolute_name);
  runner.next.exit_code = 2;
  runner.next.stderr_text = absolute_log;
  runner.next.wall_s = 1.25;
  NvccCompiler compiler(runner, {"/opt/cuda/bin/nvcc", "/checkout/include"});
  BuildRequest request;
  request.sources = {dir.path() / "broken_program.cu"};
  request.output_path = dir.path() / "out" / "program.so";
  request.timeout_s = 42;
  auto result = compiler.build(request);
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_FALSE(result->ok);
  EXPECT_TRUE(result->reproducible);
  EXPECT_EQ(result->failure, "nvcc: exit code 2");
  EXPECT_DOUBLE_EQ(result->seconds, 1.25);
  ASSERT_EQ(result->diagnostics.size(), 2u);
  EXPECT_EQ(result->diagnostics[0].file, absolute_name);
  EXPECT_NE(result->diagnostics[0].snippet.find("undefined_scale"), std::string::npos);
  ASSERT_EQ(runner.specs.size(), 1u);
  EXPECT_DOUBLE_EQ(runner.specs[0].timeout_s, 42);
  EXPECT_EQ(runner.specs[0].cwd, dir.path() / "out");
}

TEST(NvccCompiler, SuccessCarriesTheKernelReport) {
  TempDir dir;
  ScriptedRunner runner;
  runner.write_output = true;
  runner.next.exit_code = 0;
  runner.next.stdout_text = *read_file(kData / "spilling_kernel.log");
  NvccCompiler compiler(runner, {"/opt/cuda/bin/nvcc", "/checkout/include"});
  BuildRequest request;
  request.sources = {dir.path() / "k.cu"};
  request.output_path = dir.path() / "program.so";
  auto result = compiler.build(request);
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(result->ok);
  EXPECT_EQ(result->library_path, dir.path() / "program.so");
  EXPECT_EQ(result->kernels.size(), 4u);
  EXPECT_TRUE(result->diagnostics.empty());
}

TEST(NvccCompiler, TimeoutIsNotReproducibleAndSaysWhy) {
  TempDir dir;
  ScriptedRunner runner;
  runner.next.timed_out = true;
  runner.next.wall_s = 300;
  NvccCompiler compiler(runner, {"/opt/cuda/bin/nvcc", "/checkout/include"});
  BuildRequest request;
  request.sources = {dir.path() / "k.cu"};
  request.output_path = dir.path() / "program.so";
  auto result = compiler.build(request);
  ASSERT_TRUE(result.ok());
  EXPECT_FALSE(result->ok);
  EXPECT_TRUE(result->timed_out);
  EXPECT_FALSE(result->reproducible);
  ASSERT_EQ(result->diagnostics.size(), 1u);
  EXPECT_NE(result->diagnostics[0].message.find("timed out"), std::string::npos);
}

TEST(NvccCompiler, VersionIsAskedOncePerProcess) {
  ScriptedRunner runner;
  runner.next.exit_code = 0;
  runner.next.stdout_text = "Cuda compilation tools, release 13.0, V13.0.88\n";
  NvccCompiler compiler(runner, {"/opt/version-test/nvcc", "/checkout/include"});
  auto first = compiler.identity();
  auto second = compiler.identity();
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(*first, *second);
  EXPECT_NE(first->find("V13.0.88"), std::string::npos);
  EXPECT_NE(first->find("-lineinfo"), std::string::npos);  // standard flags are part of it
  ASSERT_EQ(runner.specs.size(), 1u);
  EXPECT_EQ(runner.specs[0].argv,
            (std::vector<std::string>{"/opt/version-test/nvcc", "--version"}));
}

TEST(LocateNvcc, EnvironmentVariableWins) {
  TempDir dir;
  std::filesystem::path fake = dir.path() / "nvcc";
  std::ofstream(fake) << "#!/bin/sh\n";
  chmod(fake.c_str(), 0755);
  const char* saved = std::getenv("NVCC");
  std::string saved_value = saved ? saved : "";
  setenv("NVCC", fake.c_str(), 1);
  auto found = locate_nvcc();
  setenv("NVCC", (dir.path() / "missing").c_str(), 1);
  auto missing = locate_nvcc();
  if (saved)
    setenv("NVCC", saved_value.c_str(), 1);
  else
    unsetenv("NVCC");
  ASSERT_TRUE(found.ok());
  EXPECT_EQ(*found, fake);
  EXPECT_FALSE(missing.ok());
}

TEST(BuildResultJson, RoundTrip) {
  BuildResult result;
  result.ok = true;
  result.library_path = "/cache/entries/abc/program.so";
  result.diagnostics = {Diagnostic{"a.cu", 3, "warning", "unused", ">3 | int x;\n"}};
  result.log = "ptxas info ...";
  PtxasKernelReport kernel;
  kernel.name = "k(float*)";
  kernel.mangled_name = "_Z1kPf";
  kernel.arch = "sm_90";
  kernel.registers = 40;
  kernel.spill_store_bytes = 8;
  kernel.constant_bytes = 372;
  result.kernels = {kernel};
  result.seconds = 2.5;
  result.failure = "";
  result.command = {"nvcc", "-O3"};
  auto back = build_result_from_json(build_result_to_json(result));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->library_path, result.library_path);
  ASSERT_EQ(back->diagnostics.size(), 1u);
  EXPECT_EQ(back->diagnostics[0].snippet, ">3 | int x;\n");
  ASSERT_EQ(back->kernels.size(), 1u);
  EXPECT_EQ(back->kernels[0].registers, 40);
  EXPECT_EQ(back->kernels[0].spill_store_bytes, 8);
  EXPECT_EQ(back->kernels[0].constant_bytes, 372);
  EXPECT_EQ(back->command, result.command);
  EXPECT_FALSE(build_result_from_json(nlohmann::json{{"ok", true}}).ok());
}

TEST(FakeCompiler, WritesOutputAndParsesItsLog) {
  TempDir dir;
  FakeCompiler compiler;
  compiler.script.log = *read_file(kData / "spilling_kernel.log");
  BuildRequest request;
  request.sources = {dir.path() / "k.cu"};
  request.output_path = dir.path() / "program.so";
  auto result = compiler.build(request);
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(result->ok);
  EXPECT_EQ(*read_file(request.output_path), "fake shared library");
  EXPECT_EQ(result->kernels.size(), 4u);
  EXPECT_EQ(compiler.requests.size(), 1u);
  compiler.script.cannot_start = true;
  EXPECT_FALSE(compiler.build(request).ok());
}

TEST(GpuInfo, ArchFromComputeCapability) {
  EXPECT_EQ(arch_for_compute_capability(9, 0), "sm_90a");  // wgmma (gemm_tf32x3_wgmma.cuh)
  EXPECT_EQ(arch_for_compute_capability(8, 6), "sm_86");
  EXPECT_EQ(arch_for_compute_capability(10, 0), "sm_100");
}

TEST(GpuInfo, DetectsTheGpuOrFallsBack) {
  auto gpu = query_gpu(0);
  if (gpu) {
    std::cout << "GPU 0: " << gpu->name << ", " << gpu->arch() << ", " << gpu->sm_count << " SMs, "
              << gpu->l2_bytes << " bytes L2, " << gpu->memory_bytes << " bytes\n";
    EXPECT_GE(gpu->compute_major, 5);
    EXPECT_GT(gpu->sm_count, 0);
    EXPECT_GT(gpu->memory_bytes, 0);
    EXPECT_FALSE(gpu->name.empty());
    EXPECT_EQ(detect_arch(0), gpu->arch());
  } else {
    std::cout << "no CUDA device: detect_arch falls back to " << kDefaultArch << "\n";
    EXPECT_EQ(detect_arch(0), "sm_90a");
  }
  EXPECT_FALSE(query_gpu(4096).has_value());  // no machine has that many devices
  EXPECT_FALSE(query_gpu(-1).has_value());
}

}  // namespace
}  // namespace stitch
