// Building a candidate program: the BuildRequest / BuildResult records, the Compiler interface, the
// nvcc implementation (run through util/process.h so it gets a timeout and its own process group),
// and a FakeCompiler for tests (STYLE.md item 10). A compile error is a BuildResult with ok =
// false, not an Error: expected failures are data (STYLE.md item 9).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/process.h"
#include "sandbox/layers.h"
#include "util/result.h"
#include "verify/build/diagnostics.h"
#include "verify/checks/include_policy.h"
#include "verify/verdict.h"

namespace stitch {

enum class OutputKind : uint8_t {
  shared_library,  // a program (include/stitch/program.h), loaded by stitch-runner
  executable,      // a standalone main (deployment adapter, fixtures)
};
std::string_view output_kind_name(OutputKind kind);

struct BuildRequest {
  std::vector<std::filesystem::path> sources;       // .cu / .cc files compiled and linked together
  std::string arch = "sm_90";                       // "sm_90", "sm_90a", "sm_100a", ...
  std::vector<std::string> extra_flags;             // appended after the standard flags
  std::vector<std::string> libraries;               // "cublas", "cublasLt", "cudnn" → -l<name>
  std::vector<std::filesystem::path> include_dirs;  // besides the one holding stitch/program.h
  OutputKind output_kind = OutputKind::shared_library;
  std::filesystem::path output_path;  // where the library goes (BuildCache chooses it)
  double timeout_s = 300;
  // Compile even when a layer of the nvcc sandbox is missing (--insecure-sandbox compiler); the
  // layers are recorded either way (BuildResult::sandbox_layers). Not part of the cache key.
  bool allow_incomplete_sandbox = false;
};

struct BuildResult {
  bool ok = false;
  std::filesystem::path library_path;      // the built .so (or executable); empty when !ok
  std::vector<Diagnostic> diagnostics;     // errors and warnings, with snippets
  std::string log;                         // everything the compiler printed
  std::vector<PtxasKernelReport> kernels;  // per kernel and target, from -Xptxas -v
  double seconds = 0;                      // wall time of the compile (of the original, on a hit)
  bool cache_hit = false;
  bool timed_out = false;
  // False when the build ended for a reason outside its inputs (timeout, signal): such a result
  // says nothing about the source and is never cached.
  bool reproducible = true;
  std::string failure;               // one line when !ok: "nvcc: exit code 2"
  // The build was refused before the compiler ran: a directive names a file the program may not
  // read (include_policy.h); `diagnostics` says which, at which line.
  bool refused = false;
  std::vector<std::string> command;  // argv that ran
  // The nvcc sandbox's layers (compiler_sandbox.h); empty for an unsandboxed compile or a hit.
  std::vector<sandbox::LayerReport> sandbox_layers;
};

// {name, mangled_name, arch, registers, barriers, spill_store_bytes, spill_load_bytes,
//  stack_frame_bytes, shared_bytes, constant_bytes, ptxas_ms}: the build cache keeps all of it,
// verify.json all but mangled_name, constant_bytes and ptxas_ms.
nlohmann::json ptxas_kernel_to_json(const PtxasKernelReport& kernel);
Result<PtxasKernelReport> ptxas_kernel_from_json(const nlohmann::json& doc);

nlohmann::json build_result_to_json(const BuildResult& result);
Result<BuildResult> build_result_from_json(const nlohmann::json& json);

class Compiler {
 public:
  virtual ~Compiler() = default;
  // An Error only when the compiler cannot be run at all (not installed, bad request); a source
  // that does not compile gives a BuildResult with ok = false and its diagnostics.
  virtual Result<BuildResult> build(const BuildRequest& request) = 0;
  // Text that changes whenever the compiler's output could (version, standard flags): part of the
  // build cache key.
  virtual Result<std::string> identity() = 0;
  // Directories the compiler searches for quoted includes besides each source's own; the build
  // cache hashes the local headers it finds there.
  virtual std::vector<std::filesystem::path> include_dirs() const = 0;
  // The project's own headers among those (stitch/program.h, kernels/*.cuh): a program's includes
  // found there are neither copied into its attempt nor statically checked as its code.
  virtual std::vector<std::filesystem::path> project_header_dirs() const { return include_dirs(); }
};

// The folders a build of `sources` with `include_dirs` may make the compiler read
// (verify/checks/include_policy.h): the sources' folders and `include_dirs` (the program's), the
// compiler's project headers, the toolkit's and the system's header folders.
IncludeRoots build_include_roots(const Compiler& compiler,
                                 const std::vector<std::filesystem::path>& sources,
                                 const std::vector<std::filesystem::path>& include_dirs);

// The folders whose files a diagnostic may quote: the program's and the project's headers.
std::vector<std::filesystem::path> quotable_dirs(const Compiler& compiler,
                                                 const BuildRequest& request);

// nvcc, in order: $NVCC, $CUDA_HOME/bin/nvcc, /usr/local/cuda/bin/nvcc, PATH.
Result<std::filesystem::path> locate_nvcc();

// The directory holding stitch/program.h: $STITCH_HOME/include when set, else the checkout this
// binary was built from.
std::filesystem::path default_stitch_include_dir();

// nvcc's target flags: "-gencode arch=compute_90a,code=sm_90a" for architecture-specific targets
// (an 'a' or 'f' suffix, whose features exist only in SASS for that chip), else "-arch=sm_90".
Result<std::vector<std::string>> nvcc_arch_flags(const std::string& arch);

struct NvccOptions {
  std::filesystem::path nvcc;                // empty: locate_nvcc() on first use
  std::filesystem::path stitch_include_dir;  // empty: default_stitch_include_dir()
  // Compile in the sandbox of compiler_sandbox.h. A required layer that cannot be set up makes
  // build() an Error ("sandbox_incomplete: compiler: ...") unless the request allows it.
  bool sandbox = true;
};

class NvccCompiler final : public Compiler {
 public:
  explicit NvccCompiler(ProcessRunner& runner, NvccOptions options = {});

  Result<BuildResult> build(const BuildRequest& request) override;
  // "nvcc --version" output (run once per process for each nvcc) + the standard flags.
  Result<std::string> identity() override;
  std::vector<std::filesystem::path> include_dirs() const override;
  std::vector<std::filesystem::path> project_header_dirs() const override;

  // The full command line for `request` (nvcc first). Sources become absolute paths so that
  // diagnostics name files that can be read back for snippets.
  Result<std::vector<std::string>> command_for(const BuildRequest& request);

  // The flags every build gets, before the target, includes and the request's own flags.
  static const std::vector<std::string>& standard_flags();

 private:
  Result<std::filesystem::path> nvcc_path();
  // Runs the compile, in its sandbox when options_.sandbox; the layers land in `layers`.
  Result<ProcessResult> run_compile(const BuildRequest& request, ProcessSpec spec,
                                    std::vector<sandbox::LayerReport>& layers);

  ProcessRunner& runner_;
  NvccOptions options_;
};

// Runs the version query the way NvccCompiler::identity does, cached per process and nvcc path.
Result<std::string> nvcc_version(ProcessRunner& runner, const std::filesystem::path& nvcc);

// A compiler for tests: writes a small file as the "library", answers from a script, and records
// the requests it was given. Diagnostics and kernel reports come from parsing `log` with the real
// parsers, so a captured nvcc log can stand in for a compile.
class FakeCompiler final : public Compiler {
 public:
  struct Script {
    bool ok = true;
    std::string log;
    std::string library_contents = "fake shared library";
    double seconds = 0.5;
    bool timed_out = false;
    bool cannot_start = false;  // build() returns an Error
    // Called after the output has been partly written, before build() returns: a test can end the
    // process here to simulate a crash in the middle of a build.
    std::function<void(const BuildRequest&)> during_build;
  };

  Script script;
  std::string identity_text = "fake-compiler 1.0";
  std::vector<std::filesystem::path> search_dirs;
  std::vector<BuildRequest> requests;  // every build() call, in order

  Result<BuildResult> build(const BuildRequest& request) override;
  Result<std::string> identity() override { return identity_text; }
  std::vector<std::filesystem::path> include_dirs() const override { return search_dirs; }
};

}  // namespace stitch
