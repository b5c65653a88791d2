// The include policy (verify/checks/include_policy.h): every spelling of a directive that makes the
// compiler read a host file is refused with its line and never the file's text; the honest
// near-misses (system and project headers, the program's own headers, a comment or a string that
// mentions a directive) pass. Uses a temporary program folder and a "secret" file beside it.
#include "verify/checks/include_policy.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>

#include "util/fs.h"

namespace stitch {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kSecret = "SECRET-4f1c9e-host-file-contents";

class IncludePolicy : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string dir_template = (fs::temp_directory_path() / "include-policy-XXXXXX").string();
    ASSERT_NE(mkdtemp(dir_template.data()), nullptr);
    root_ = dir_template;
    program_ = root_ / "program";
    checkout_ = root_ / "checkout";
    fs::create_directories(program_ / "sub");
    fs::create_directories(checkout_ / "include" / "stitch");
    fs::create_directories(checkout_ / "kernels");
    fs::create_directories(checkout_ / "runs");
    write(root_ / "secret.txt", std::string(kSecret));
    write(checkout_ / "runs" / "outputs.txt", std::string(kSecret));
    write(checkout_ / "kernels" / "matmul.cuh", "#pragma once\n");
    write(checkout_ / "include" / "stitch" / "program.h", "#pragma once\n");
    write(program_ / "local.h", "#pragma once\n");
    write(program_ / "sub" / "inner.h", "#include \"../local.h\"\n");
  }
  void TearDown() override { fs::remove_all(root_); }

  static void write(const fs::path& path, const std::string& text) {
    std::ofstream(path, std::ios::binary) << text;
  }

  IncludeRoots roots() const {
    IncludeRoots r;
    r.search = {checkout_ / "include", checkout_};  // as NvccCompiler::include_dirs()
    r.program = {program_};
    r.project = {checkout_ / "include", checkout_ / "kernels"};
    r.system = system_include_dirs();
    return r;
  }

  std::vector<HackFinding> check(const std::string& code) {
    write(program_ / "prog.cu", code);
    return check_include_directives({program_ / "prog.cu"}, roots(),
                                    [](const fs::path& p) { return p.filename().string(); });
  }

  void expect_refused(const std::string& code, const std::string& shown, int line = 1) {
    auto findings = check(code);
    ASSERT_EQ(findings.size(), 1u) << code;
    EXPECT_EQ(findings[0].kind, HackKind::reads_answer);
    EXPECT_TRUE(findings[0].fatal);
    EXPECT_NE(findings[0].detail.find(fmt::format("prog.cu:{}: ", line)), std::string::npos)
        << findings[0].detail;
    EXPECT_NE(findings[0].detail.find(shown), std::string::npos) << findings[0].detail;
    EXPECT_EQ(findings[0].detail.find(kSecret), std::string::npos);
  }

  std::string secret() const { return (root_ / "secret.txt").string(); }

  fs::path root_, program_, checkout_;
};

TEST_F(IncludePolicy, AbsolutePathsInEverySpelling) {
  expect_refused("#include \"" + secret() + "\"\n", "#include \"");
  expect_refused("#include <" + secret() + ">\n", "#include <");
  expect_refused("  #  include\t\"" + secret() + "\"\n", "names an absolute path");
  expect_refused("int a;\n#inc\\\nlude \"" + secret() + "\"\n", "#include", 2);
  expect_refused("%:include \"" + secret() + "\"\n", "#include");
  expect_refused("#/* c */include \"" + secret() + "\"\n", "#include");
  expect_refused("#include_next <" + secret() + ">\n", "#include_next");
  expect_refused("#import \"" + secret() + "\"\n", "#import");
}

TEST_F(IncludePolicy, ClimbingOutOfTheAllowedFolders) {
  expect_refused("#include \"../secret.txt\"\n", "climbs");
  expect_refused("#include \"sub/../../secret.txt\"\n", "climbs");
  expect_refused("#include <../../../../../../../../../etc/hostname>\n", "climbs");
  // Found through the checkout root the compiler searches, but not one of the allowed folders.
  expect_refused("#include \"runs/outputs.txt\"\n", "outside the folders");
}

TEST_F(IncludePolicy, SymbolicLinksAndFollowedHeaders) {
  fs::create_symlink(root_ / "secret.txt", program_ / "link.h");
  expect_refused("#include \"link.h\"\n", "symbolic link");
  // A header of the program's own is scanned in turn, and named in the finding.
  write(program_ / "evil.h", "\n#include \"" + secret() + "\"\n");
  auto findings = check("#include \"evil.h\"\n");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_NE(findings[0].detail.find("evil.h:2: "), std::string::npos) << findings[0].detail;
}

TEST_F(IncludePolicy, MacrosProbesAndOtherReaders) {
  expect_refused("#define H \"" + secret() + "\"\n#include H\n", "#include H", 2);
  expect_refused("#if __has_include(\"" + secret() + "\")\n#endif\n", "__has_include(\"");
  expect_refused("#if __has_include(<" + secret() + ">)\n#endif\n", "__has_include(<");
  expect_refused("#if __has_include(H)\n#endif\n", "through a macro");
  expect_refused("const char d[] = {\n#embed \"x.bin\"\n};\n", "#embed", 2);
  expect_refused("#pragma GCC dependency \"" + secret() + "\"\n", "dependency");
  expect_refused("_Pragma(\"GCC dependency \\\"x\\\"\")\n", "dependency");
  expect_refused("asm(\".incbin \\\"" + secret() + "\\\"\");\n", ".incbin");
  expect_refused("asm(\".inc\" \"bin\\t\\\"x\\\"\");\n", ".incbin");
  expect_refused("__asm__(\".include \\\"x.s\\\"\");\n", ".include");
  expect_refused("#define S(x) #x\nasm(S(.incbin \"x\"));\n", ".incbin", 2);
}

TEST_F(IncludePolicy, HonestNearMissesPass) {
  const std::string code =
      "#include <cuda_runtime.h>\n"
      "#include <cstdio>\n"
      "#include \"local.h\"\n"
      "#include \"sub/inner.h\"\n"
      "#include \"sub/../local.h\"\n"
      "#include \"kernels/matmul.cuh\"\n"
      "#include \"stitch/program.h\"\n"
      "#if defined(__has_include)\n#if __has_include(<cuda_fp16.h>)\n#endif\n#endif\n"
      "// #include \"/etc/passwd\"\n"
      "const char* s = \"#include \\\"/etc/passwd\\\"\";\n"
      "void f() { printf(\".incbin and .include are assembler directives\\n\"); }\n";
  EXPECT_TRUE(check(code).empty());
}

TEST_F(IncludePolicy, PathInsideResolvesLinks) {
  fs::create_symlink(root_, program_ / "up");
  EXPECT_TRUE(path_inside(program_ / "local.h", {fs::canonical(program_)}));
  EXPECT_FALSE(path_inside(program_ / "up" / "secret.txt", {fs::canonical(program_)}));
  EXPECT_FALSE(path_inside(program_ / ".." / "secret.txt", {fs::canonical(program_)}));
}

}  // namespace
}  // namespace stitch
