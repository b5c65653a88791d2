// One nvcc build of an emitted program for the codegen tests (goldens, the op table's program, its
// GPU mode): program.cu written into a fresh temporary directory, built by NvccCompiler into
// program.so there. The directory is removed with the BuiltProgram.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

#include "codegen/program_emitter.h"
#include "util/fs.h"
#include "util/process.h"
#include "verify/build/compiler.h"

namespace stitch::codegen::testing {

struct BuiltProgram {
  std::filesystem::path dir;
  std::filesystem::path library;  // dir / program.so
  BuildResult build;
  BuiltProgram() = default;
  BuiltProgram(BuiltProgram&& other) noexcept
      : dir(std::exchange(other.dir, {})), library(other.library), build(std::move(other.build)) {}
  BuiltProgram(const BuiltProgram&) = delete;
  ~BuiltProgram() {
    std::error_code ignored;
    if (!dir.empty()) std::filesystem::remove_all(dir, ignored);
  }
  // "" when it built; else the failure with the start of the compiler's log.
  std::string failure() const {
    if (build.ok) return "";
    std::string text = build.failure + "\n";
    for (const auto& d : build.diagnostics) text += d.message + "\n";
    return text + build.log.substr(0, 4000);
  }
};

// `arch`: the nvcc target (the H200's sm_90a, as the Verifier builds there; sm_80 and sm_100a for
// the portability test).
inline Result<BuiltProgram> build_program(const EmittedProgram& program,
                                          const std::string& arch = "sm_90a") {
  std::string pattern =
      (std::filesystem::temp_directory_path() / "stitch_codegen_XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) return make_error("mkdtemp {} failed", pattern);
  BuiltProgram built;
  built.dir = pattern;
  built.library = built.dir / "program.so";
  STITCH_TRY(write_file_atomic(built.dir / "program.cu", program.source));
  SystemProcessRunner runner;
  NvccCompiler compiler(runner);
  BuildRequest request;
  request.sources = {built.dir / "program.cu"};
  request.libraries = program.libraries;
  request.arch = arch;
  request.output_path = built.library;
  STITCH_ASSIGN_OR_RETURN(built.build, compiler.build(request));
  return built;
}

}  // namespace stitch::codegen::testing
