// Parser tests on real nvcc 13 output captured in tests/verify/data/*.log (capture_fixtures.sh
// regenerates them), plus small inline cases for shapes the fixtures do not show.
#include "verify/build/diagnostics.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "util/fs.h"

namespace stitch {
namespace {

const std::filesystem::path kData = std::filesystem::path(STITCH_TEST_DATA_DIR) / "verify" / "data";

std::string fixture(const std::string& name) {
  auto text = read_file(kData / name);
  EXPECT_TRUE(text.ok()) << name;
  return text.ok() ? *text : "";
}

int count_severity(const std::vector<Diagnostic>& diagnostics, const std::string& severity) {
  return static_cast<int>(
      std::count_if(diagnostics.begin(), diagnostics.end(),
                    [&](const Diagnostic& d) { return d.severity == severity; }));
}

const PtxasKernelReport* find_kernel(const std::vector<PtxasKernelReport>& kernels,
                                     const std::string& name_part, const std::string& arch) {
  for (const auto& k : kernels)
    if (k.name.find(name_part) != std::string::npos && k.arch == arch) return &k;
  return nullptr;
}

TEST(Diagnostics, FrontEndErrorsHaveFileLineAndSnippet) {
  auto diagnostics = parse_diagnostics(fixture("broken_program.log"), kData);
  ASSERT_EQ(diagnostics.size(), 2u);
  const Diagnostic& first = diagnostics[0];
  EXPECT_EQ(first.file, "broken_program.cu");
  EXPECT_EQ(first.line, 7);
  EXPECT_EQ(first.severity, "error");
  EXPECT_EQ(first.message, "identifier \"undefined_scale\" is undefined");
  // ±2 lines, the reported one marked.
  EXPECT_NE(first.snippet.find(">7 |   if (i < n) data[i] += undefined_scale;"), std::string::npos)
      << first.snippet;
  EXPECT_NE(first.snippet.find(" 5 |"), std::string::npos) << first.snippet;
  EXPECT_NE(first.snippet.find(" 9 |"), std::string::npos) << first.snippet;
  EXPECT_EQ(first.snippet.find(" 4 |"), std::string::npos) << first.snippet;
  EXPECT_EQ(first.snippet.find("10 |"), std::string::npos) << first.snippet;
  EXPECT_EQ(diagnostics[1].line, 11);
  EXPECT_NE(diagnostics[1].message.find("cannot be used to initialize"), std::string::npos);
  EXPECT_NE(diagnostics[1].snippet.find("float* wrong = n;"), std::string::npos);
}

TEST(Diagnostics, WarningsAreDeduplicatedAndNotErrors) {
  auto diagnostics = parse_diagnostics(fixture("warnings_only.log"), kData);
  EXPECT_EQ(count_severity(diagnostics, "error"), 0);
  // gcc prints the #warning once per compilation pass; it is one diagnostic.
  ASSERT_EQ(count_severity(diagnostics, "warning"), 3);
  EXPECT_EQ(diagnostics[0].line, 5);
  EXPECT_NE(diagnostics[0].message.find("this program is a fixture"), std::string::npos);
  EXPECT_EQ(diagnostics[1].line, 8);
  EXPECT_NE(diagnostics[1].message.find("unused_value"), std::string::npos);
  EXPECT_EQ(diagnostics[2].line, 13);
}

TEST(Diagnostics, HostCompilerMessages) {
  auto diagnostics = parse_diagnostics(fixture("host_error.log"), kData);
  ASSERT_EQ(diagnostics.size(), 2u);
  EXPECT_EQ(diagnostics[0].severity, "warning");
  EXPECT_EQ(diagnostics[0].line, 9);
  EXPECT_EQ(diagnostics[1].severity, "error");
  EXPECT_EQ(diagnostics[1].file, "host_error.cu");
  EXPECT_EQ(diagnostics[1].line, 10);
  EXPECT_NE(diagnostics[1].message.find("forbidden_helper"), std::string::npos);
  EXPECT_NE(diagnostics[1].snippet.find(">10 |"), std::string::npos) << diagnostics[1].snippet;
}

TEST(Diagnostics, PtxasError) {
  std::string log = fixture("shared_overflow.log");
  auto diagnostics = parse_diagnostics(log, kData);
  ASSERT_EQ(diagnostics.size(), 1u);
  EXPECT_EQ(diagnostics[0].severity, "error");
  EXPECT_EQ(diagnostics[0].file, "");
  EXPECT_NE(diagnostics[0].message.find("ptxas: Entry function '_Z15too_much_sharedPf' uses too "
                                        "much shared data"),
            std::string::npos)
      << diagnostics[0].message;
  auto kernels = parse_ptxas_report(log);
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(kernels[0].shared_bytes, 262144);
  EXPECT_EQ(kernels[0].name, "too_much_shared(float*)");
}

TEST(Diagnostics, LinkerErrors) {
  auto missing_library = parse_diagnostics(fixture("missing_library.log"), kData);
  // ld's line is the error; collect2's summary adds nothing.
  ASSERT_EQ(missing_library.size(), 1u);
  EXPECT_EQ(missing_library[0].message,
            "ld: cannot find -lstitch_no_such_library: No such file or directory");

  auto nvlink = parse_diagnostics(fixture("missing_symbol_device.log"), kData);
  ASSERT_EQ(nvlink.size(), 1u);
  EXPECT_EQ(nvlink[0].severity, "error");
  EXPECT_NE(nvlink[0].message.find("nvlink: Undefined reference to '_Z23undefined_device_helperf'"),
            std::string::npos);

  auto arch = parse_diagnostics(fixture("bad_arch.log"), kData);
  ASSERT_EQ(arch.size(), 1u);
  EXPECT_EQ(arch[0].message, "nvcc: Unsupported gpu architecture 'sm_1'");
}

TEST(Diagnostics, SuccessfulBuildHasNoDiagnostics) {
  EXPECT_TRUE(parse_diagnostics(fixture("spilling_kernel.log"), kData).empty());
}

TEST(PtxasReport, KernelsWithSpillsSharedMemoryAndTemplates) {
  auto kernels = parse_ptxas_report(fixture("spilling_kernel.log"));
  ASSERT_EQ(kernels.size(), 4u);
  const auto* spilling = find_kernel(kernels, "many_live_values", "sm_90");
  ASSERT_NE(spilling, nullptr);
  EXPECT_EQ(spilling->mangled_name, "_Z16many_live_valuesPKfPfi");
  EXPECT_EQ(spilling->name, "many_live_values(float const*, float*, int)");
  EXPECT_EQ(spilling->registers, 32);
  EXPECT_EQ(spilling->stack_frame_bytes, 1544);
  EXPECT_EQ(spilling->spill_store_bytes, 1888);
  EXPECT_EQ(spilling->spill_load_bytes, 3020);
  EXPECT_EQ(spilling->barriers, 0);
  EXPECT_GT(spilling->ptxas_ms, 1.0);

  const auto* tile = find_kernel(kernels, "tile_transpose", "sm_90");
  ASSERT_NE(tile, nullptr);
  EXPECT_EQ(tile->shared_bytes, 4224);
  EXPECT_EQ(tile->barriers, 1);
  EXPECT_EQ(tile->registers, 12);
  EXPECT_EQ(tile->spill_store_bytes, 0);

  const auto* templated = find_kernel(kernels, "scaled_copy", "sm_90");
  ASSERT_NE(templated, nullptr);
  EXPECT_EQ(templated->name, "void scaled_copy<float, 4>(float const*, float*, float)");
}

TEST(PtxasReport, OneReportPerKernelAndTarget) {
  auto kernels = parse_ptxas_report(fixture("two_archs.log"));
  ASSERT_EQ(kernels.size(), 8u);
  const auto* hopper = find_kernel(kernels, "many_live_values", "sm_90a");
  const auto* ampere = find_kernel(kernels, "many_live_values", "sm_80");
  ASSERT_NE(hopper, nullptr);
  ASSERT_NE(ampere, nullptr);
  EXPECT_EQ(hopper->spill_store_bytes, 1888);
  EXPECT_EQ(ampere->spill_store_bytes, 1900);
  EXPECT_EQ(hopper->constant_bytes, 0);
  EXPECT_EQ(ampere->constant_bytes, 372);
  const auto* tile = find_kernel(kernels, "tile_transpose", "sm_80");
  ASSERT_NE(tile, nullptr);
  EXPECT_EQ(tile->registers, 14);
  EXPECT_EQ(tile->shared_bytes, 4224);
  EXPECT_EQ(tile->constant_bytes, 372);
}

TEST(PtxasReport, NonEntryFunctionsDoNotOverwriteTheKernel) {
  std::string log =
      "ptxas info    : Compiling entry function '_Z1kPf' for 'sm_90'\n"
      "ptxas info    : Function properties for _Z6helperf\n"
      "    64 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads\n"
      "ptxas info    : Function properties for _Z1kPf\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 20 registers, used 0 barriers, 16 bytes smem, 8 bytes cmem[0], "
      "4 bytes cmem[2]\n";
  auto kernels = parse_ptxas_report(log);
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(kernels[0].name, "k(float*)");
  EXPECT_EQ(kernels[0].stack_frame_bytes, 0);
  EXPECT_EQ(kernels[0].spill_store_bytes, 0);
  EXPECT_EQ(kernels[0].registers, 20);
  EXPECT_EQ(kernels[0].shared_bytes, 16);
  EXPECT_EQ(kernels[0].constant_bytes, 12);
}

TEST(Diagnostics, NotesTemplateContextAndUndefinedReferences) {
  std::string log =
      "a.cu:3:5: error: no matching function for call to 'f(int)'\n"
      "a.cu:1:6: note: candidate: 'void f(float*)'\n"
      "b.cu(12): error: no instance of overloaded function matches\n"
      "      g(1);\n"
      "      ^\n"
      "          detected during instantiation of \"void h<T>() [with T=int]\" at line 20\n"
      "\n"
      "/usr/bin/ld: /tmp/x.o: in function `main':\n"
      "tmpxft_0001_cudafe1.cpp:(.text+0x1d): undefined reference to `helper(float)'\n"
      "collect2: error: ld returned 1 exit status\n";
  auto diagnostics = parse_diagnostics(log);
  ASSERT_EQ(diagnostics.size(), 3u);
  EXPECT_EQ(diagnostics[0].message,
            "no matching function for call to 'f(int)'; note: candidate: 'void f(float*)'");
  EXPECT_EQ(diagnostics[0].line, 3);
  EXPECT_EQ(diagnostics[0].snippet, "");  // a.cu does not exist
  EXPECT_NE(diagnostics[1].message.find("detected during instantiation of"), std::string::npos);
  EXPECT_EQ(diagnostics[2].message, "ld: undefined reference to `helper(float)'");
}

TEST(Diagnostics, CollectTwoStandsInWhenNothingElseSaysWhy) {
  auto diagnostics = parse_diagnostics("collect2: error: ld returned 1 exit status\n");
  ASSERT_EQ(diagnostics.size(), 1u);
  EXPECT_EQ(diagnostics[0].severity, "error");
}

TEST(Snippet, EdgesOfTheFile) {
  std::filesystem::path file = kData / "broken_program.cu";
  std::string first = read_snippet(file, 1);
  EXPECT_EQ(first.rfind(">1 |", 0), 0u) << first;
  EXPECT_NE(first.find(" 3 |"), std::string::npos);
  EXPECT_EQ(read_snippet(file, 1000), "");
  EXPECT_EQ(read_snippet(kData / "no_such_file.cu", 3), "");
  EXPECT_EQ(read_snippet(file, 0), "");
}

// A host file quoted into diagnostics (issue 15 item 5): only location and severity remain, for a
// file outside the quotable folders (a host file, a toolkit header, a link out of the sources);
// the program's own files keep their text and snippet.
TEST(WithholdForeignText, DiagnosticsOutsideTheSourcesKeepOnlyTheirLocation) {
  const auto dir = std::filesystem::temp_directory_path() / "withhold-diagnostics-test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "src");
  { std::ofstream(dir / "secret.txt") << "SECRET-LINE-ONE\nSECRET-LINE-TWO\n"; }
  { std::ofstream(dir / "src" / "prog.cu") << "int main() {\n  broken\n}\n"; }
  std::filesystem::create_symlink(dir / "secret.txt", dir / "src" / "link.h");
  const std::string secret = (dir / "secret.txt").string();
  const std::string log = secret +
                          "(1): error: identifier \"SECRET\" is undefined\n"
                          "  SECRET-LINE-ONE\n  ^\n\n"
                          "prog.cu(2): error: identifier \"broken\" is undefined\n"
                          "    broken\n    ^\n\n"
                          "link.h:2:1: error: 'SECRET' does not name a type\n"
                          "    2 | SECRET-LINE-TWO\n      | ^~~~~~\n"
                          "/usr/local/cuda/include/cuda_fp16.hpp(10): warning: toolkit text here\n";
  auto diagnostics = parse_diagnostics(log, dir / "src");
  ASSERT_EQ(diagnostics.size(), 4u);
  EXPECT_NE(diagnostics[0].snippet.find("SECRET-LINE-ONE"), std::string::npos) << "read first";
  withhold_foreign_text(diagnostics, dir / "src", {dir / "src"});
  for (const Diagnostic& d : diagnostics)
    if (d.file != "prog.cu") {
      EXPECT_EQ(d.message.find("SECRET"), std::string::npos) << d.message;
      EXPECT_EQ(d.message.find("toolkit text"), std::string::npos) << d.message;
      EXPECT_NE(d.message.find("withheld"), std::string::npos);
      EXPECT_EQ(d.snippet, "");
      EXPECT_GT(d.line, 0);
      EXPECT_FALSE(d.severity.empty());
    }
  EXPECT_EQ(diagnostics[1].message, "identifier \"broken\" is undefined");
  EXPECT_NE(diagnostics[1].snippet.find("broken"), std::string::npos);
  EXPECT_EQ(diagnostics[2].file, "link.h");

  const std::string kept = withhold_foreign_log_text(log, dir / "src", {dir / "src"});
  EXPECT_EQ(kept.find("SECRET"), std::string::npos) << kept;
  EXPECT_EQ(kept.find("toolkit text"), std::string::npos) << kept;
  EXPECT_NE(kept.find(secret + ":1: error"), std::string::npos) << kept;
  EXPECT_NE(kept.find("prog.cu(2): error: identifier \"broken\" is undefined\n    broken"),
            std::string::npos)
      << kept;
  std::filesystem::remove_all(dir);
}

TEST(Demangle, PassesThroughWhatIsNotMangled) {
  EXPECT_EQ(demangle_symbol("_Z6kernelPf"), "kernel(float*)");
  EXPECT_EQ(demangle_symbol("plain_c_kernel"), "plain_c_kernel");
}

}  // namespace
}  // namespace stitch
