// The library audit: ELF parsing on hand-built ELF32/ELF64 images (hash and GNU hash, no section
// headers), robustness on truncated, mutated and random files, the classification of libraries,
// imports and exports, and the adversarial suite built with the real nvcc (label cpu: nvcc needs no
// GPU; skipped without nvcc). The programs that do not build are covered by static_checks_test.
#include <elf.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstring>
#include <random>

#include "adversarial_manifest.h"
#include "util/fs.h"
#include "util/process.h"
#include "verify/build/compiler.h"
#include "verify/checks/elf_reader.h"
#include "verify/checks/library_audit.h"

namespace stitch {
namespace {

// ---- A minimal ELF writer ------------------------------------------------------------------

struct ElfSpec {
  bool is64 = true;
  bool gnu_hash = false;  // else DT_HASH
  std::vector<std::string> needed;
  std::vector<std::string> imports;
  std::vector<std::string> exports;
};

template <typename Ehdr, typename Phdr, typename Dyn, typename Sym, typename BloomWord>
std::string write_elf(const ElfSpec& spec, unsigned char elf_class) {
  constexpr uint64_t kBase = 0x400000;
  std::string strtab(1, '\0');
  auto add_string = [&](const std::string& s) {
    const uint64_t at = strtab.size();
    strtab += s;
    strtab.push_back('\0');
    return at;
  };
  std::vector<uint64_t> needed_names;
  for (const auto& n : spec.needed)
    needed_names.push_back(add_string(n));
  std::vector<Sym> syms(1);
  std::memset(&syms[0], 0, sizeof(Sym));
  auto add_sym = [&](const std::string& name, bool defined) {
    Sym s;
    std::memset(&s, 0, sizeof(s));
    s.st_name = static_cast<decltype(s.st_name)>(add_string(name));
    s.st_info = static_cast<unsigned char>((STB_GLOBAL << 4) | STT_FUNC);
    s.st_other = STV_DEFAULT;
    s.st_shndx = defined ? 1 : SHN_UNDEF;
    syms.push_back(s);
  };
  for (const auto& n : spec.imports)
    add_sym(n, false);
  for (const auto& n : spec.exports)
    add_sym(n, true);

  std::string hash;
  auto put32 = [&](uint32_t v) { hash.append(reinterpret_cast<const char*>(&v), 4); };
  if (spec.gnu_hash) {
    const uint32_t symoffset = static_cast<uint32_t>(1 + spec.imports.size());
    put32(1);          // nbuckets
    put32(symoffset);  // first hashed symbol
    put32(1);          // bloom words
    put32(0);          // bloom shift
    BloomWord bloom = ~BloomWord{0};
    hash.append(reinterpret_cast<const char*>(&bloom), sizeof(bloom));
    put32(spec.exports.empty() ? 0 : symoffset);  // bucket 0
    for (size_t i = 0; i < spec.exports.size(); ++i)
      put32(i + 1 == spec.exports.size() ? 1u : 0u);
  } else {
    put32(1);                                   // nbucket
    put32(static_cast<uint32_t>(syms.size()));  // nchain = number of symbols
    put32(0);
    for (size_t i = 0; i < syms.size(); ++i)
      put32(0);
  }

  const uint64_t phoff = sizeof(Ehdr);
  const uint64_t str_off = phoff + 2 * sizeof(Phdr);
  const uint64_t sym_off = (str_off + strtab.size() + 7) & ~uint64_t{7};
  const uint64_t hash_off = sym_off + syms.size() * sizeof(Sym);
  const uint64_t dyn_off = (hash_off + hash.size() + 7) & ~uint64_t{7};
  std::vector<Dyn> dyns;
  auto add_dyn = [&](int64_t tag, uint64_t value) {
    Dyn d;
    std::memset(&d, 0, sizeof(d));
    d.d_tag = static_cast<decltype(d.d_tag)>(tag);
    d.d_un.d_val = static_cast<decltype(d.d_un.d_val)>(value);
    dyns.push_back(d);
  };
  for (uint64_t n : needed_names)
    add_dyn(DT_NEEDED, n);
  add_dyn(DT_STRTAB, kBase + str_off);
  add_dyn(DT_STRSZ, strtab.size());
  add_dyn(DT_SYMTAB, kBase + sym_off);
  add_dyn(DT_SYMENT, sizeof(Sym));
  add_dyn(spec.gnu_hash ? DT_GNU_HASH : DT_HASH, kBase + hash_off);
  add_dyn(DT_NULL, 0);
  const uint64_t total = dyn_off + dyns.size() * sizeof(Dyn);

  std::string out(total, '\0');
  Ehdr eh;
  std::memset(&eh, 0, sizeof(eh));
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = elf_class;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_DYN;
  eh.e_version = EV_CURRENT;
  eh.e_phoff = phoff;
  eh.e_ehsize = sizeof(Ehdr);
  eh.e_phentsize = sizeof(Phdr);
  eh.e_phnum = 2;
  std::memcpy(out.data(), &eh, sizeof(eh));
  Phdr ph[2];
  std::memset(ph, 0, sizeof(ph));
  ph[0].p_type = PT_LOAD;
  ph[0].p_offset = 0;
  ph[0].p_vaddr = kBase;
  ph[0].p_filesz = ph[0].p_memsz = total;
  ph[1].p_type = PT_DYNAMIC;
  ph[1].p_offset = dyn_off;
  ph[1].p_vaddr = kBase + dyn_off;
  ph[1].p_filesz = ph[1].p_memsz = dyns.size() * sizeof(Dyn);
  std::memcpy(out.data() + phoff, ph, sizeof(ph));
  std::memcpy(out.data() + str_off, strtab.data(), strtab.size());
  std::memcpy(out.data() + sym_off, syms.data(), syms.size() * sizeof(Sym));
  std::memcpy(out.data() + hash_off, hash.data(), hash.size());
  std::memcpy(out.data() + dyn_off, dyns.data(), dyns.size() * sizeof(Dyn));
  return out;
}

std::string write_elf(const ElfSpec& spec) {
  return spec.is64
             ? write_elf<Elf64_Ehdr, Elf64_Phdr, Elf64_Dyn, Elf64_Sym, uint64_t>(spec, ELFCLASS64)
             : write_elf<Elf32_Ehdr, Elf32_Phdr, Elf32_Dyn, Elf32_Sym, uint32_t>(spec, ELFCLASS32);
}

const ElfSpec kSample{true,
                      false,
                      {"libcudart.so.13", "libc.so.6"},
                      {"cudaMalloc", "pthread_create"},
                      {"stitch_init", "stitch_forward"}};

// ---- Parsing -------------------------------------------------------------------------------

TEST(ElfReader, ReadsHandBuiltLibrariesOfBothClassesAndHashKinds) {
  for (bool is64 : {true, false}) {
    for (bool gnu : {false, true}) {
      SCOPED_TRACE(std::string(is64 ? "ELF64" : "ELF32") + (gnu ? " GNU hash" : " SysV hash"));
      ElfSpec spec = kSample;
      spec.is64 = is64;
      spec.gnu_hash = gnu;
      auto info = parse_elf_dynamic(write_elf(spec));
      ASSERT_TRUE(info.ok()) << info.error().message;
      EXPECT_EQ(info->is_64_bit, is64);
      EXPECT_EQ(info->needed, spec.needed);
      EXPECT_EQ(info->imported_symbols, (std::vector<std::string>{"cudaMalloc", "pthread_create"}));
      EXPECT_EQ(info->exported_symbols,
                (std::vector<std::string>{"stitch_forward", "stitch_init"}));
    }
  }
}

TEST(ElfReader, ReadsThisTestBinary) {
  auto info = read_elf_dynamic("/proc/self/exe");
  ASSERT_TRUE(info.ok()) << info.error().message;
  bool libc = false;
  for (const auto& n : info->needed)
    libc = libc || n.rfind("libc.so", 0) == 0;
  EXPECT_TRUE(libc);
  EXPECT_FALSE(info->imported_symbols.empty());
}

TEST(ElfReader, RejectsWhatIsNotAnElfLibrary) {
  EXPECT_FALSE(parse_elf_dynamic("").ok());
  EXPECT_FALSE(parse_elf_dynamic("\x7f").ok());
  EXPECT_FALSE(parse_elf_dynamic(std::string("\x7f"
                                             "ELF",
                                             4))
                   .ok());
  EXPECT_FALSE(parse_elf_dynamic(std::string(64, 'x')).ok());
  std::string elf = write_elf(kSample);
  std::string big_endian = elf;
  big_endian[EI_DATA] = ELFDATA2MSB;
  EXPECT_FALSE(parse_elf_dynamic(big_endian).ok());
  std::string no_class = elf;
  no_class[EI_CLASS] = ELFCLASSNONE;
  EXPECT_FALSE(parse_elf_dynamic(no_class).ok());
  EXPECT_FALSE(read_elf_dynamic("/nonexistent/program.so").ok());
  EXPECT_FALSE(audit_library("/nonexistent/program.so").ok());
  EXPECT_FALSE(
      audit_library(std::filesystem::path(STITCH_TEST_DATA_DIR) / "adversarial" / "manifest.json")
          .ok());
}

TEST(ElfReader, TruncationsNeverCrash) {
  const std::string elf = write_elf(kSample);
  for (size_t n = 0; n < elf.size(); ++n) {
    auto info = parse_elf_dynamic(std::string_view(elf).substr(0, n));
    (void)info;  // ok or Error; it must only return
  }
  auto self = read_file("/proc/self/exe");
  ASSERT_TRUE(self.ok());
  const std::string& bytes = *self;
  for (size_t n = 0; n < bytes.size(); n += 1 + bytes.size() / 400)
    (void)parse_elf_dynamic(std::string_view(bytes).substr(0, n));
  EXPECT_TRUE(parse_elf_dynamic(bytes).ok());
}

TEST(ElfReader, MutationsAndRandomBytesNeverCrash) {
  std::mt19937_64 rng(42);
  for (bool is64 : {true, false}) {
    ElfSpec spec = kSample;
    spec.is64 = is64;
    for (bool gnu : {false, true}) {
      spec.gnu_hash = gnu;
      const std::string elf = write_elf(spec);
      for (int round = 0; round < 20000; ++round) {
        std::string mutated = elf;
        const int flips = 1 + static_cast<int>(rng() % 4);
        for (int f = 0; f < flips; ++f) {
          const size_t at = rng() % mutated.size();
          // Mostly small/boundary values: they reach deeper than uniform noise.
          const uint64_t choice = rng() % 4;
          mutated[at] = choice == 0   ? static_cast<char>(0xff)
                        : choice == 1 ? 0
                                      : static_cast<char>(rng());
        }
        (void)parse_elf_dynamic(mutated);
      }
    }
  }
  auto self = read_file("/proc/self/exe");
  ASSERT_TRUE(self.ok());
  for (int round = 0; round < 300; ++round) {
    std::string mutated = *self;
    for (int f = 0; f < 8; ++f)
      mutated[rng() % std::min<size_t>(mutated.size(), 1 << 16)] = static_cast<char>(rng());
    (void)parse_elf_dynamic(mutated);
  }
  for (int round = 0; round < 5000; ++round) {
    std::string random(64 + rng() % 2048, '\0');
    for (char& c : random)
      c = static_cast<char>(rng());
    std::memcpy(random.data(), ELFMAG, SELFMAG);
    random[EI_CLASS] = round % 2 ? ELFCLASS64 : ELFCLASS32;
    random[EI_DATA] = ELFDATA2LSB;
    (void)parse_elf_dynamic(random);
  }
}

TEST(ElfReader, HostileCountsAreBounded) {
  // A DT_STRSZ larger than the file and a symbol count far past its end.
  ElfSpec spec = kSample;
  std::string elf = write_elf(spec);
  auto patch_dyn = [&](int64_t tag, uint64_t value) {
    for (size_t off = 0; off + sizeof(Elf64_Dyn) <= elf.size(); off += 8) {
      Elf64_Dyn d;
      std::memcpy(&d, elf.data() + off, sizeof(d));
      if (d.d_tag == tag && (tag != DT_STRSZ || d.d_un.d_val < 4096)) {
        d.d_un.d_val = value;
        std::memcpy(elf.data() + off, &d, sizeof(d));
        return;
      }
    }
  };
  patch_dyn(DT_STRSZ, uint64_t{1} << 62);
  auto info = parse_elf_dynamic(elf);
  ASSERT_TRUE(info.ok()) << info.error().message;
  EXPECT_EQ(info->needed, spec.needed);
}

// ---- Classification ------------------------------------------------------------------------

struct ClassifyCase {
  ElfDynamicInfo info;
  std::set<std::string> fatal;
  std::set<std::string> notes;
};

TEST(LibraryAudit, ClassifiesLibrariesImportsAndExports) {
  const ClassifyCase cases[] = {
      {{true,
        {"libcudart.so.13", "libcublasLt.so.13", "libcudnn_ops.so.9", "libstdc++.so.6", "libm.so.6",
         "libgcc_s.so.1", "libc.so.6", "ld-linux-x86-64.so.2", "libcuda.so.1"},
        {"cudaMalloc", "cublasLtMatmul", "malloc", "_ZNSt6vectorIfSaIfEE17_M_realloc_insertEv",
         "__cxa_atexit"},
        {"_ZN4dim3C1Ejjj", "stitch_abi_version", "stitch_destroy", "stitch_forward", "stitch_init",
         "stitch_last_error"}},
       {},
       {}},
      {{true, {}, {}, {"stitch_forward", "stitch_init"}},
       {},
       {"tampers_judge"}},  // part of the ABI: the runner cannot call the rest
      {{true, {"libtorch_cuda.so"}, {}, {}}, {"calls_torch"}, {}},
      {{true, {"/opt/x/libc10.so"}, {}, {}}, {"calls_torch"}, {}},
      {{true, {"libpython3.11.so.1.0"}, {}, {}}, {"calls_torch"}, {}},
      {{true, {"libnvrtc.so.13"}, {}, {}}, {"hidden_work"}, {}},
      {{true, {"libgomp.so.1"}, {}, {}}, {"hidden_work"}, {}},
      {{true, {}, {"_ZN3c1015GetCPUAllocatorEv"}, {}}, {"calls_torch"}, {}},
      {{true, {}, {"PyObject_Call"}, {}}, {"calls_torch"}, {}},
      {{true, {}, {"pthread_create"}, {}}, {"host_thread"}, {}},
      {{true,
        {},
        {"_ZNSt6thread15_M_start_threadESt10unique_ptrINS_6_StateESt14default_deleteIS1_EEPFvvE"},
        {}},
       {"host_thread"},
       {}},
      {{true, {}, {"fork", "execve", "system", "dlopen", "cudaIpcOpenMemHandle"}, {}},
       {"hidden_work"},
       {}},
      {{true, {}, {"getenv"}, {}}, {"reads_answer"}, {}},
      {{true, {}, {"fopen64"}, {}}, {"reads_answer"}, {}},
      {{true, {}, {"_ZNSt14basic_ifstreamIcSt11char_traitsIcEEC1EPKcSt13_Ios_Openmode"}, {}},
       {"reads_answer"},
       {}},
      {{true, {}, {"exit", "setenv"}, {}}, {"tampers_judge"}, {}},
      {{true, {}, {"cudaCtxResetPersistingL2Cache", "cudaStreamSetAttribute"}, {}},
       {"l2_persistence"},
       {"l2_persistence"}},
      {{true, {}, {"cudaStreamCreateWithFlags"}, {}}, {}, {"side_stream"}},
      {{true, {}, {"cublasSetMathMode", "cudnnSetConvolutionMathType"}, {}},
       {},
       {"precision_downgrade"}},
      {{true, {}, {"cudaLaunchHostFunc"}, {}}, {}, {"hidden_work"}},
      {{true, {}, {}, {"cudaEventElapsedTime"}}, {"tampers_judge"}, {}},
      {{true, {}, {}, {"clock_gettime"}}, {"tampers_judge"}, {}},
      // Near-misses: names that merely start like a rule.
      {{true, {}, {"openlog_not_really", "systemd_x", "exit_group_x", "forkpty_x"}, {}}, {}, {}},
  };
  for (const ClassifyCase& c : cases) {
    std::string label;
    for (const auto& s : c.info.needed)
      label += s + " ";
    for (const auto& s : c.info.imported_symbols)
      label += "U:" + s + " ";
    for (const auto& s : c.info.exported_symbols)
      label += "T:" + s + " ";
    SCOPED_TRACE(label);
    const auto findings = classify_library(c.info);
    const test::Expectation found = test::kinds_of(findings);
    EXPECT_EQ(found.fatal, c.fatal) << test::describe(findings);
    EXPECT_EQ(found.notes, c.notes) << test::describe(findings);
  }
}

TEST(LibraryAudit, HandBuiltLibraryEndToEnd) {
  const std::filesystem::path dir = ::testing::TempDir();
  const std::filesystem::path so = dir / "stitch_audit_sample.so";
  ASSERT_TRUE(write_file_atomic(so, write_elf(kSample)).ok());
  auto findings = audit_library(so);
  ASSERT_TRUE(findings.ok()) << findings.error().message;
  EXPECT_EQ(test::kinds_of(*findings).fatal, std::set<std::string>{"host_thread"})
      << test::describe(*findings);
  std::filesystem::remove(so);
}

// ---- Built programs ------------------------------------------------------------------------

// Builds one program with the same flags the orchestrator uses, into a fresh temporary directory.
class BuiltProgram {
 public:
  Result<std::filesystem::path> build(const std::vector<std::filesystem::path>& sources,
                                      const std::vector<std::string>& libraries,
                                      const std::vector<std::string>& extra_flags) {
    STITCH_ASSIGN_OR_RETURN(auto nvcc, locate_nvcc());
    std::string pattern = (std::filesystem::temp_directory_path() / "stitch_audit_XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) return make_error("mkdtemp failed");
    dir_ = pattern;
    NvccCompiler compiler(runner_,
                          NvccOptions{nvcc, std::filesystem::path(STITCH_SOURCE_DIR) / "include"});
    BuildRequest request;
    request.sources = sources;
    request.arch = "sm_90";
    request.libraries = libraries;
    request.extra_flags = extra_flags;
    request.output_path = dir_ / "program.so";
    request.timeout_s = 240;
    STITCH_ASSIGN_OR_RETURN(BuildResult result, compiler.build(request));
    if (!result.ok) return make_error("build failed: {}", result.log);
    return result.library_path;
  }
  ~BuiltProgram() {
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }

 private:
  SystemProcessRunner runner_;
  std::filesystem::path dir_;
};

std::filesystem::path torch_lib_dir() {
  const auto venv_lib = std::filesystem::path(STITCH_SOURCE_DIR) / ".venv" / "lib";
  std::error_code ec;
  if (std::filesystem::exists(venv_lib, ec))
    for (const auto& python : std::filesystem::directory_iterator(venv_lib, ec)) {
      const auto dir = python.path() / "site-packages" / "torch" / "lib";
      if (std::filesystem::exists(dir / "libc10.so", ec)) return dir;
    }
  return {};
}

class AdversarialLibrary : public ::testing::TestWithParam<test::AdversarialProgram> {};

TEST_P(AdversarialLibrary, AuditFindsExactlyTheExpectedKinds) {
  const test::AdversarialProgram& p = GetParam();
  if (!locate_nvcc().ok()) GTEST_SKIP() << "no nvcc";
  std::vector<std::string> flags;
  if (p.link_torch) {
    const auto dir = torch_lib_dir();
    if (dir.empty()) GTEST_SKIP() << "no torch installation in .venv to link against";
    flags.push_back("-L" + dir.string());
  }
  BuiltProgram built;
  auto so = built.build({test::kAdversarialDir / p.file}, p.libraries, flags);
  ASSERT_TRUE(so.ok()) << so.error().message;
  auto findings = audit_library(*so);
  ASSERT_TRUE(findings.ok()) << findings.error().message;
  const test::Expectation found = test::kinds_of(*findings);
  EXPECT_EQ(found.fatal, p.library_expect.fatal) << p.why << "\n" << test::describe(*findings);
  EXPECT_EQ(found.notes, p.library_expect.notes) << p.why << "\n" << test::describe(*findings);
}

// One build per program that builds: the track only matters to the static checks, and the
// programs that do not build (torch includes) are static_checks_test's.
std::vector<test::AdversarialProgram> programs_once() {
  std::vector<test::AdversarialProgram> out;
  std::set<std::string> seen;
  for (auto& p : test::load_adversarial_manifest())
    if (p.compiles && seen.insert(p.file).second) out.push_back(p);
  return out;
}

INSTANTIATE_TEST_SUITE_P(Manifest, AdversarialLibrary, ::testing::ValuesIn(programs_once()),
                         [](const auto& info) { return test::program_case_name(info.param); });

TEST(LibraryAudit, HonestTestProgramsHaveNoFatalFinding) {
  if (!locate_nvcc().ok()) GTEST_SKIP() << "no nvcc";
  const std::filesystem::path dir = std::filesystem::path(STITCH_TEST_DATA_DIR) / "programs";
  const std::pair<const char*, std::vector<std::string>> programs[] = {
      {"scale_shift_relu.cu", {}}, {"mlp.cu", {"cublasLt"}}, {"conv_bn_relu.cu", {"cudnn"}}};
  for (const auto& [file, libraries] : programs) {
    SCOPED_TRACE(file);
    if (!std::filesystem::exists(dir / file)) continue;
    BuiltProgram built;
    auto so = built.build({dir / file}, libraries, {});
    ASSERT_TRUE(so.ok()) << so.error().message;
    auto findings = audit_library(*so);
    ASSERT_TRUE(findings.ok()) << findings.error().message;
    EXPECT_TRUE(test::kinds_of(*findings).fatal.empty()) << test::describe(*findings);
  }
}

TEST(LibraryAudit, StaticCudartIsAnErrorNotAnAudit) {
  auto nvcc = locate_nvcc();
  if (!nvcc.ok()) GTEST_SKIP() << "no nvcc";
  std::string pattern = (std::filesystem::temp_directory_path() / "stitch_audit_XXXXXX").string();
  ASSERT_NE(mkdtemp(pattern.data()), nullptr);
  const std::filesystem::path dir = pattern;
  SystemProcessRunner runner;
  ProcessSpec spec;
  spec.argv = {nvcc->string(),
               "-shared",
               "-Xcompiler",
               "-fPIC",
               "-cudart",
               "static",
               "-arch=sm_90",
               "-I" + (std::filesystem::path(STITCH_SOURCE_DIR) / "include").string(),
               (test::kAdversarialDir / "n00_honest.cu").string(),
               "-o",
               (dir / "static.so").string()};
  spec.timeout_s = 240;
  auto result = runner.run(spec);
  ASSERT_TRUE(result.ok() && result->succeeded())
      << (result.ok() ? result->stderr_text : result.error().message);
  auto findings = audit_library(dir / "static.so");
  EXPECT_FALSE(findings.ok());
  if (!findings.ok()) {
    EXPECT_NE(findings.error().message.find("statically"), std::string::npos);
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace
}  // namespace stitch
