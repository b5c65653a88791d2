// The static source checks: the lexer (comments and strings neither trip nor hide a check), the
// structure passes (asm/PTX, namespace-scope initialisers, 3xTF32), one case per rule with its
// near-miss, the adversarial suite of tests/adversarial/manifest.json, and the honest programs of
// tests/programs/. CPU only.
#include <gtest/gtest.h>

#include <chrono>
#include <random>

#include "adversarial_manifest.h"
#include "util/fs.h"
#include "verify/checks/source_lexer.h"
#include "verify/checks/source_structure.h"
#include "verify/checks/static_checks.h"
#include "verify/track.h"

namespace stitch {
namespace {

std::vector<HackFinding> check(const std::string& code, Track track = Track::fp32) {
  return check_sources({SourceFile{"prog.cu", code}}, track);
}

std::set<std::string> fatal_kinds(const std::vector<HackFinding>& findings) {
  return test::kinds_of(findings).fatal;
}
std::set<std::string> note_kinds(const std::vector<HackFinding>& findings) {
  return test::kinds_of(findings).notes;
}

std::vector<std::string> identifiers(const LexedSource& s) {
  std::vector<std::string> out;
  for (const Token& t : s.tokens)
    if (t.kind == TokenKind::identifier) out.emplace_back(s.text(t));
  return out;
}

bool has_ident(const LexedSource& s, std::string_view name) {
  for (const std::string& id : identifiers(s))
    if (id == name) return true;
  return false;
}

// ---- Track ---------------------------------------------------------------------------------

TEST(Track, NamesParseAndTolerances) {
  for (Track t : {Track::fp32, Track::tf32, Track::bf16})
    EXPECT_EQ(enum_from_name<Track>(enum_name(t)), t);
  EXPECT_FALSE(enum_from_name<Track>("fp16").has_value());
  EXPECT_DOUBLE_EQ(track_tolerance(Track::fp32).atol, 1e-4);
  EXPECT_DOUBLE_EQ(track_tolerance(Track::fp32).rtol, 1e-4);
  EXPECT_DOUBLE_EQ(track_tolerance(Track::tf32).atol, 1e-2);
  EXPECT_DOUBLE_EQ(track_tolerance(Track::bf16).rtol, 1e-2);
}

// ---- Lexer ---------------------------------------------------------------------------------

TEST(SourceLexer, BlanksCommentsKeepingLines) {
  const std::string text = "int a; // torch::relu\n/* at::Tensor\n c10:: */ int b;\n";
  LexedSource s = lex_source(text);
  EXPECT_EQ(s.code.size(), text.size());
  EXPECT_EQ(s.code.find("torch"), std::string::npos);
  EXPECT_EQ(s.code.find("Tensor"), std::string::npos);
  EXPECT_EQ(identifiers(s), (std::vector<std::string>{"int", "a", "int", "b"}));
  EXPECT_EQ(s.line_of(s.tokens.back().offset), 3);
}

TEST(SourceLexer, StringsAreBlankedButRecorded) {
  LexedSource s = lex_source("auto s = \"std::thread t; \\\" still\"; f(s);");
  EXPECT_EQ(s.code.find("thread"), std::string::npos);
  ASSERT_EQ(s.strings.size(), 1u);
  EXPECT_EQ(s.strings[0].value, "std::thread t; \\\" still");
  EXPECT_TRUE(has_ident(s, "f"));  // lexing resumed after the escaped quote
}

TEST(SourceLexer, RawStringsWithDelimiters) {
  LexedSource s = lex_source("auto r = R\"x(a )\" b \" c)x\"; int after;\nauto u = u8R\"(p)\";");
  ASSERT_EQ(s.strings.size(), 2u);
  EXPECT_EQ(s.strings[0].value, "a )\" b \" c");
  EXPECT_EQ(s.strings[1].value, "p");
  EXPECT_TRUE(has_ident(s, "after"));
}

TEST(SourceLexer, QuotesThatHideCodeFromNaiveScanners) {
  // Each hiding trick from tests/adversarial/a03_lexer_confusion.cu: the code must stay visible.
  for (std::string text :
       {"/* \" */ hidden_one(); /* \" */", "char q = '\"'; hidden_one(); char r = '\"';",
        "int m = 1'000'000; hidden_one(); int n = 2'000;",
        "int x = 0x1'F; hidden_one(); float e = 1e-3'0f; char c = 'a';"}) {
    SCOPED_TRACE(text);
    LexedSource s = lex_source(text);
    EXPECT_TRUE(has_ident(s, "hidden_one"));
  }
}

TEST(SourceLexer, LineSplicesJoinTokensAndComments) {
  LexedSource s = lex_source("std::thr\\\nead t;\n// comment \\\n still_comment();\nafter();\n");
  EXPECT_TRUE(has_ident(s, "thread"));
  EXPECT_FALSE(has_ident(s, "still_comment"));
  EXPECT_TRUE(has_ident(s, "after"));
  // Line numbers refer to the original text.
  for (const Token& t : s.tokens)
    if (s.text(t) == "after") {
      EXPECT_EQ(s.line_of(t.offset), 5);
    }
}

TEST(SourceLexer, IncludeHeadersAreKeptVerbatim) {
  LexedSource s = lex_source(
      "#include \"torch/extension.h\"\n#  include <ATen/ATen.h>\nconst char* x = \"y\";\n");
  std::vector<std::string> headers;
  for (const Token& t : s.tokens)
    if (t.kind == TokenKind::header_name) headers.emplace_back(s.text(t));
  EXPECT_EQ(headers, (std::vector<std::string>{"\"torch/extension.h\"", "<ATen/ATen.h>"}));
  EXPECT_EQ(s.strings.size(), 1u);
}

TEST(SourceLexer, UnterminatedConstructsDoNotRunAway) {
  LexedSource a = lex_source("const char* s = \"open\nint visible;");
  EXPECT_TRUE(has_ident(a, "visible"));  // a string ends at the end of its line
  LexedSource b = lex_source("int a; /* never closed\nint hidden;");
  EXPECT_FALSE(has_ident(b, "hidden"));
  LexedSource c = lex_source("auto r = R\"x(never closed");
  EXPECT_EQ(c.strings.size(), 1u);
  LexedSource d = lex_source("#include <unterminated\nint z;");
  EXPECT_TRUE(has_ident(d, "z"));
}

TEST(SourceLexer, RandomBytesNeverCrash) {
  std::mt19937 rng(1234);
  const std::string alphabet = "ab_(){}[]<>;:#\"'\\/*\n R8u.x-=";
  for (int round = 0; round < 3000; ++round) {
    std::string text(rng() % 200, ' ');
    for (char& c : text)
      c = round % 2 ? static_cast<char>(rng()) : alphabet[rng() % alphabet.size()];
    LexedSource s = lex_source(text);
    ASSERT_LE(s.code.size(), text.size());
    for (const Token& t : s.tokens)
      ASSERT_LE(t.offset + t.length, s.code.size());
    (void)check_sources({SourceFile{"fuzz.cu", text}}, Track::fp32);
  }
}

TEST(SourceLexer, BracketsAreMatchedPerContext) {
  LexedSource s = lex_source("f(a[1], {b});\n#define M(x) (x\nint g() { h(( ; }\n");
  auto at = [&](std::string_view text, int nth) {
    for (size_t i = 0; i < s.tokens.size(); ++i)
      if (s.text(s.tokens[i]) == text && nth-- == 0) return i;
    return static_cast<size_t>(-1);
  };
  EXPECT_EQ(s.tokens[at("(", 0)].match, at(")", 0));
  EXPECT_EQ(s.tokens[at("[", 0)].match, at("]", 0));
  EXPECT_EQ(s.tokens[at("{", 0)].match, at("}", 0));
  EXPECT_EQ(s.tokens[at("(", 2)].match, static_cast<size_t>(-1));  // the macro's unbalanced "(x"
  EXPECT_EQ(s.tokens[at("{", 1)].match, at("}", 1));               // closes over the stray "(("
}

TEST(StaticChecks, HostileInputStaysLinear) {
  // Each pattern below made an earlier draft rescan the rest of the file per occurrence.
  std::string text;
  for (int i = 0; i < 20000; ++i)
    text += "to_tf32( a = = b - c ";
  for (int i = 0; i < 20000; ++i)
    text += "x {} <<< (( ";
  for (int i = 0; i < 20000; ++i)
    text += "}";
  text +=
      "__device__ uint32_t to_tf32(float v) { asm(\"cvt.rna.tf32.f32 %0, %1;\" : \"=r\"(b) : "
      "\"f\"(v)); }";
  const auto start = std::chrono::steady_clock::now();
  (void)check_sources({SourceFile{"big.cu", text}}, Track::fp32);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 10.0);
}

// ---- Structure -----------------------------------------------------------------------------

TEST(SourceStructure, PtxClassification) {
  auto kinds = [](std::string_view ptx) {
    std::vector<ReducedPrecision> out;
    for (const PtxInstruction& i : find_reduced_precision_ptx(ptx))
      out.push_back(i.precision);
    return out;
  };
  EXPECT_EQ(kinds("cvt.rna.tf32.f32 %0, %1;"), std::vector{ReducedPrecision::tf32});
  EXPECT_EQ(kinds("@p mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0}, {%1}, {%2}, {%3};"),
            std::vector{ReducedPrecision::half});
  EXPECT_EQ(kinds("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0}, {%1}, {%2}, {%3};"),
            std::vector{ReducedPrecision::low_bits});
  EXPECT_EQ(kinds("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;"),
            std::vector{ReducedPrecision::low_bits});
  EXPECT_TRUE(
      kinds("ld.global.nc.v4.f32 {%0,%1,%2,%3}, [%4];\\n\\tfma.rn.f32 %0, %1, %2, %3;").empty());
  EXPECT_TRUE(kinds("ld.global.u8 %0, [%1]; mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0}, "
                    "{%1}, {%2}, {%3};")
                  .empty());
  EXPECT_TRUE(ptx_rounds_to_tf32("L1: cvt.rna.tf32.f32 %0, %1;"));
  EXPECT_FALSE(ptx_rounds_to_tf32(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0}, {%1}, {%2}, {%3};"));
  EXPECT_EQ(find_l2_cache_hints("ld.global.L2::evict_last.f32 %0, [%1];"),
            std::vector<std::string>{"evict_last"});
}

TEST(SourceStructure, AsmOperandsAndEnclosingFunction) {
  LexedSource s = lex_source(
      "__device__ uint32_t to_tf32(float v) {\n"
      "  uint32_t bits; asm volatile(\"cvt.rna.tf32\" \".f32 %0, %1;\" : \"=r\"(bits) : \"f\"(v - "
      "w));\n"
      "  return bits;\n}\n");
  SourceStructure st = analyse_structure(s);
  std::vector<AsmStatement> statements = find_asm_statements(s, st.functions);
  ASSERT_EQ(statements.size(), 1u);
  EXPECT_EQ(statements[0].ptx, "cvt.rna.tf32.f32 %0, %1;");  // adjacent literals concatenated
  EXPECT_EQ(statements[0].output_names, std::vector<std::string>{"bits"});
  ASSERT_EQ(statements[0].input_ranges.size(), 1u);
  EXPECT_EQ(statements[0].input_ranges[0].second - statements[0].input_ranges[0].first,
            3u);  // v - w
  EXPECT_EQ(statements[0].enclosing_function, "to_tf32");
  // Empty output section written as "::".
  LexedSource t = lex_source(
      "void g(float v) { asm(\"st.global.f32 [%0], %1;\" :: \"l\"(p), \"f\"(v) : \"memory\"); }");
  std::vector<AsmStatement> more = find_asm_statements(t, analyse_structure(t).functions);
  ASSERT_EQ(more.size(), 1u);
  EXPECT_EQ(more[0].ptx, "st.global.f32 [%0], %1;");
  EXPECT_EQ(more[0].input_ranges.size(), 2u);
  EXPECT_TRUE(more[0].output_names.empty());
}

TEST(SourceStructure, NamespaceScopeDynamicInitialisation) {
  auto names = [](const std::string& code) {
    std::vector<std::string> out;
    for (const DynamicInit& d : analyse_structure(lex_source(code)).dynamic_inits)
      out.push_back(d.name);
    return out;
  };
  EXPECT_EQ(names("int table = load_table();"), std::vector<std::string>{"table"});
  EXPECT_EQ(names("namespace { auto p = std::make_unique<int>(3); }"),
            std::vector<std::string>{"p"});
  EXPECT_EQ(names("static int x = [] { return start(); }();"), std::vector<std::string>{"x"});
  EXPECT_EQ(names("int* q = new int[4];"), std::vector<std::string>{"q"});
  EXPECT_EQ(names("struct P { P() { go(); } }; P instance;"), std::vector<std::string>{"instance"});
  EXPECT_EQ(names("class P { public: explicit P(int) {} }; namespace a { P made(3); }"),
            std::vector<std::string>{"made"});
  EXPECT_EQ(names("struct Q { Q(); } q;"), std::vector<std::string>{"q"});
  EXPECT_EQ(names("std::vector<float> v(compute_size());"), std::vector<std::string>{"v"});
  // Near-misses: nothing runs at load.
  EXPECT_TRUE(
      names("constexpr int k = f(3); constinit int c = 2; static const dim3 block(256);").empty());
  EXPECT_TRUE(
      names("static std::string error; std::vector<float> cache; int* p = nullptr; float z = 1.0f;")
          .empty());
  EXPECT_TRUE(names("int f(); int g(int a, float* b); extern int h; Foo make(void);").empty());
  EXPECT_TRUE(names("struct S { S() = default; int x = 0; }; S s; P* pointer_to_class;").empty());
  EXPECT_TRUE(names("int f() { static int x = compute(); return x; }").empty());  // function-local
  EXPECT_TRUE(names("__global__ void k(float* x) { x[0] = sqrtf(2.0f); }").empty());
  EXPECT_TRUE(names("static const float kPi = std::acos(-1.0f); static const auto kMax = "
                    "std::numeric_limits<float>::max();")
                  .empty());
  EXPECT_TRUE(names("struct P { constexpr P(int v) : v(v) {} int v; }; P p(3);").empty());
  EXPECT_TRUE(names("auto f() -> int { return g(); } enum class E : int { a = 1, b }; E e = E::a;")
                  .empty());
}

TEST(SourceStructure, SplitTf32IsRecognisedOnlyWithTheResidual) {
  auto found = [](const std::string& code) {
    LexedSource s = lex_source(code);
    SourceStructure st = analyse_structure(s);
    std::vector<std::vector<AsmStatement>> statements{find_asm_statements(s, st.functions)};
    return find_split_tf32({&s}, statements).found;
  };
  const std::string helper =
      "__device__ uint32_t to_tf32(float v) { uint32_t b; asm(\"cvt.rna.tf32.f32 %0, %1;\" : "
      "\"=r\"(b) : \"f\"(v)); return b; }\n";
  EXPECT_TRUE(found(helper + "void k(float a) { uint32_t big = to_tf32(a); uint32_t small = "
                             "to_tf32(a - __uint_as_float(big)); }"));
  EXPECT_TRUE(found(helper +
                    "void k(float* a, uint32_t* hi, uint32_t* lo) { hi[0] = to_tf32(a[0]);\n"
                    "  float r = a[0] - __uint_as_float(hi[0]); lo[0] = to_tf32(r); }"));
  EXPECT_TRUE(
      found("void k(float x) { float big = wmma::__float_to_tf32(x); float small = "
            "wmma::__float_to_tf32(x - big); }"));
  EXPECT_TRUE(found("using Op = cutlass::arch::OpMultiplyAddFastF32;"));
  // Plain TF32: rounded once, no residual.
  EXPECT_FALSE(found(
      helper +
      "void k(float a, float b) { uint32_t x = to_tf32(a); uint32_t y = to_tf32(b - 1.0f); }"));
  EXPECT_FALSE(found("void k(float x) { float big = __float_to_tf32(x); float d = x - big; }"));
}

// ---- Rules ---------------------------------------------------------------------------------

struct RuleCase {
  const char* code;
  std::set<std::string> fatal;  // exact set of fatal kinds
  Track track = Track::fp32;
};

TEST(StaticChecks, EachRuleAndItsNearMiss) {
  const RuleCase cases[] = {
      // Row 1.
      {"#include <torch/extension.h>", {"calls_torch"}},
      {"#include \"ATen/ATen.h\"", {"calls_torch"}},
      {"#include <Python.h>", {"calls_torch"}},
      {"#define HDR <torch/all.h>", {"calls_torch"}},
      {"void f() { at::Tensor t; }", {"calls_torch"}},
      {"using namespace torch;", {"calls_torch"}},
      {"namespace c10 { bool IsNUMAEnabled(); }", {"calls_torch"}},
      {"void f() { TORCH_CHECK(true); }", {"calls_torch"}},
      {"void f() { void* h = dlopen_wrapper(\"libtorch_cuda.so\"); }", {"calls_torch"}},
      {"int f(std::vector<int>& v) { return v.at(0) + at(1); }", {}},
      {"// at::Tensor and torch::relu\n/* #include <torch/extension.h> */ int x;", {}},
      {"const char* s = \"torch::relu(x)\";", {}},
      {"#error this file must not use torch::\n", {}},
      {"#define HDR \"torch/extension.h\"\n#include HDR\n", {"calls_torch"}},
      {"#define SPAWN std::thr ## ead\nvoid f() { SPAWN t(g); }", {"host_thread"}},
      {"#define DOWN(x) __float2 ## half ## _rn(x)\n", {"precision_downgrade"}},
      {"#define CAT(a, b) a ## b\nint CAT(my, value) = 3;", {}},
      // Row 3.
      {"void f() { std::thread t(g); t.join(); }", {"host_thread"}},
      {"void f() { auto r = std::async(g); }", {"host_thread"}},
      {"using namespace std; void f() { thread t(g); }", {"host_thread"}},
      {"void f() { pthread_create(&t, nullptr, g, nullptr); }", {"host_thread"}},
      {"void f() {\n#pragma omp parallel for\n for (int i = 0; i < 4; ++i) g(i); }",
       {"host_thread"}},
      {"void f() { std::sort(std::execution::par, b, e); }", {"host_thread"}},
      {"using namespace std; __global__ void k() { int thread = threadIdx.x; }", {}},
      {"unsigned n() { return std::thread::hardware_concurrency(); }", {}},
      {"void f() { std::this_thread::sleep_for(d); }", {}},
      {"#pragma unroll\nint x;", {}},
      // Row 21.
      {"void f() { if (fork() == 0) execl(\"/bin/true\", \"true\", nullptr); }", {"hidden_work"}},
      {"void f() { std::system(\"ls\"); }", {"hidden_work"}},
      {"void f() { FILE* p = popen(\"ls\", \"r\"); }", {"hidden_work"}},
      {"void f() { void* h = dlopen(\"libx.so\", 0); }", {"hidden_work"}},
      {"void f(cudaIpcMemHandle_t h) { cudaIpcOpenMemHandle(&p, h, 0); }", {"hidden_work"}},
      {"void f() { nvrtcCreateProgram(&p, src, 0, 0, 0, 0); }", {"hidden_work"}},
      {"void f() { cudaMemcpyPeerAsync(a, 1, b, 0, n, s); }", {"hidden_work"}},
      {"struct S { int system(int); }; int f(S& s) { return s.system(1) + my::fork(2); }", {}},
      // Row 8.
      {"void f() { FILE* p = std::fopen(\"ref.bin\", \"rb\"); }", {"reads_answer"}},
      {"void f() { std::ifstream in(path); }", {"reads_answer"}},
      {"void f() { const char* v = getenv(\"X\"); }", {"reads_answer"}},
      {"void f() { int fd = ::open(\"/tmp/x\", 0); }", {"reads_answer"}},
      {"void f() { int s = socket(2, 1, 0); }", {"reads_answer"}},
      {"const char* p = \"/proc/self/maps\";", {"reads_answer"}},
      {"void f(Cache& c) { c.open(3); }", {}},
      // Row 12 on fp32.
      {"void f() { cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH); }", {"precision_downgrade"}},
      {"auto c = CUBLAS_COMPUTE_32F_FAST_16BF;", {"precision_downgrade"}},
      {"auto m = CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;", {"precision_downgrade"}},
      {"__global__ void k(float* x) { __half h = __float2half(x[0]); }", {"precision_downgrade"}},
      {"__global__ void k(float* x) { __nv_bfloat16 b = __float2bfloat16_rn(x[0]); }",
       {"precision_downgrade"}},
      {"wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> a;",
       {"precision_downgrade"}},
      {"__device__ void f() { asm(\"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0}, {%1}, "
       "{%2}, {%3};\"); }",
       {"precision_downgrade"}},
      {"#define CVT(x) asm(#x)\n__device__ void f() { CVT(cvt.rna.tf32.f32 %0 %1); }",
       {"precision_downgrade"}},
      {"using T = cutlass::half_t;", {"precision_downgrade"}},
      {"void f() { cublasSetMathMode(h, CUBLAS_DEFAULT_MATH); cublasGemmEx(h, a, b, CUDA_R_32F, "
       "CUBLAS_COMPUTE_32F); }",
       {}},
      {"#include <cuda_fp16.h>\nfloat half = 0.5f; int halves(int n) { return n / 2; }", {}},
      {"auto c = CUBLAS_COMPUTE_32F_EMULATED_16BFX9;", {}},  // BF16x9: FP32-accurate emulation
      // Tracks.
      {"auto c = CUBLAS_COMPUTE_32F_FAST_TF32;", {}, Track::tf32},
      // The kernel library's reduced-precision GEMM math, named by candidate code.
      {"int f() { return mm.init_with_compute(h, s, e, false, w, n, err, 16, "
       "LtMatmul::Compute::fast_tf32); }",
       {"precision_downgrade"}},
      {"auto m = LtMatmul::Compute::fast_tf32;", {}, Track::tf32},
      {"auto m = LtMatmul::Compute::fast_bf16;", {"precision_downgrade"}, Track::tf32},
      {"auto m = LtMatmul::Compute::fast_bf16;", {}, Track::bf16},
      {"int fast_tf32 = 0;", {}},  // the bare word is no rule's
      {"__global__ void k(float* x) { __half h = __float2half(x[0]); }",
       {"precision_downgrade"},
       Track::tf32},
      {"__global__ void k(float* x) { __half h = __float2half(x[0]); }", {}, Track::bf16},
      {"__global__ void k(float* x) { __nv_fp8_e4m3 h(x[0]); }",
       {"precision_downgrade"},
       Track::bf16},
      // Row 14.
      {"void f() { cudaCtxResetPersistingL2Cache(); }", {"l2_persistence"}},
      {"void f(cudaStreamAttrValue& a) { a.accessPolicyWindow.hitProp = "
       "cudaAccessPropertyPersisting; }",
       {"l2_persistence"}},
      {"void f() { cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 1 << 20); }",
       {"l2_persistence"}},
      {"void f() { cudaDeviceSetLimit(cudaLimitStackSize, 1 << 16); }", {}},
      // Row 27.
      {"__attribute__((constructor)) static void at_load() {}", {"init_side_effect"}},
      {"[[gnu::constructor]] void at_load() {}", {"init_side_effect"}},
      {"static int ready = start_everything();", {"init_side_effect"}},
      {"void f() { atexit(g); }", {"init_side_effect"}},
      {"__attribute__((section(\".init_array\"))) void (*p)() = g;", {"init_side_effect"}},
      {"__attribute__((noinline)) void f() {}", {}},
      // Rows 13 / 20.
      {"extern \"C\" cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) { "
       "return cudaSuccess; }",
       {"tampers_judge"}},
      {"void f() { exit(0); }", {"tampers_judge"}},
      {"void f() { setenv(\"NVIDIA_TF32_OVERRIDE\", \"1\", 1); }", {"tampers_judge"}},
      {"void f() { cudaDeviceReset(); }", {"tampers_judge"}},
      {"int f() { if (cudaEventElapsedTime(&ms, a, b)) { return 1; } return 0; }", {}},
      {"void f(Loop& l) { l.exit(0); }", {}},
  };
  for (const RuleCase& c : cases) {
    SCOPED_TRACE(std::string(c.code) + " [" + std::string(enum_name(c.track)) + "]");
    const auto findings = check(c.code, c.track);
    EXPECT_EQ(fatal_kinds(findings), c.fatal) << test::describe(findings);
  }
}

// Issue 15 item 6: the holes HACKS.md row 29 names, each with an honest near-miss.
TEST(StaticChecks, RawSyscallsLoadHooksFileWritesAndTimers) {
  const RuleCase cases[] = {
      // Raw system calls: the libc wrapper in any spelling, the instructions in host asm.
      {"long f() { return syscall(SYS_getpid); }", {"hidden_work"}},
      {"long f() { return ::syscall(39); }", {"hidden_work"}},
      {"auto p = &syscall;", {"hidden_work"}},
      {"long f() { return g(__NR_rename); }", {"hidden_work"}},
      {"void f() { asm volatile(\"mov $39, %%eax\\n\\tsyscall\" ::: \"rax\"); }",
       {"hidden_work"}},
      {"void f() { __asm__(\"int $0x80\"); }", {"hidden_work"}},
      {"void f() { asm(\"sys\" \"enter\"); }", {"hidden_work"}},
      {"void f() { asm volatile(\"svc #0\"); }", {"hidden_work"}},
      {"void f() { asm(\".byte 0x0f, 0x05\"); }", {"hidden_work"}},
      {"#define RAW \"syscall\"\nvoid f() { asm(RAW); }", {"hidden_work"}},
      {"__global__ void syscall_free(float* x) { x[0] = 1; }", {}},
      {"__device__ int f(int a) { int r; asm(\"add.s32 %0, %1, 1;\" : \"=r\"(r) : \"r\"(a)); "
       "return r; }",
       {}},
      {"void f() { printf(\"no syscall here\\n\"); }", {}},
      // Load-time hooks by any spelling.
      {"[[using gnu: constructor]] void at_load() {}", {"init_side_effect"}},
      {"__attribute__((__constructor__(101))) static void at_load() {}", {"init_side_effect"}},
      {"#define AT_LOAD __attribute__((constructor))\nAT_LOAD void f() {}", {"init_side_effect"}},
      {"__attribute__((section(\".\" \"init_array\"))) void (*p)() = g;", {"init_side_effect"}},
      {"__attribute__((section(\".ctors.65535\"))) void (*p)() = g;", {"init_side_effect"}},
      {"#define S(x) #x\n__attribute__((section(S(.init_array)))) void (*p)() = g;",
       {"init_side_effect"}},
      {"#define SEC \".init\" \"_array\"\n__attribute__((section(SEC))) void (*p)() = g;",
       {"init_side_effect"}},
      {"asm(\".pushsection .init_array,\\\"aw\\\"\\n.quad g\\n.popsection\");",
       {"init_side_effect", "hidden_work"}},
      {"void* r(); void f() __attribute__((ifunc(\"r\")));", {"init_side_effect"}},
      {"__attribute__((section(\".data.tables\"))) int table[4];", {}},
      {"void f() { printf(\"the loader runs .init_array entries\\n\"); }", {}},
      {"int constructor = 3; void destructor(int);", {}},
      {"void f() { __cudaRegisterFatBinary(p); }", {"init_side_effect"}},
      // The file system written, other processes, namespaces, code patching.
      {"void f() { rename(\"a\", \"b\"); }", {"tampers_judge"}},
      {"void f() { unlink(\"verify.json\"); }", {"tampers_judge"}},
      {"void f() { ::remove(\"x\"); }", {"tampers_judge"}},
      {"void f() { truncate(\"x\", 0); ftruncate(3, 0); }", {"tampers_judge"}},
      {"void f() { mkdir(\"d\", 0700); symlink(\"a\", \"b\"); link(\"a\", \"c\"); }",
       {"tampers_judge"}},
      {"int flags = O_WRONLY | O_CREAT;", {"tampers_judge"}},
      {"void f() { write(1, \"x\", 1); }", {"tampers_judge"}},
      {"void f() { process_vm_readv(pid, a, 1, b, 1, 0); }", {"tampers_judge"}},
      {"void f() { unshare(0); setns(fd, 0); }", {"tampers_judge"}},
      {"void f() { mprotect(p, 4096, 7); }", {"tampers_judge"}},
      {"void f(std::vector<int>& v) { v.erase(std::remove(v.begin(), v.end(), 0), v.end()); }", {}},
      {"void f(Log& log) { log.write(\"x\"); log.rename(\"y\"); }", {}},
      {"void f() { FILE* p = fopen(\"in.bin\", \"r\"); }", {"reads_answer"}},
      // Timers (and threads, unchanged: flagged in code, nothing in a comment).
      {"void f() { timer_create(CLOCK_REALTIME, &ev, &t); }", {"host_thread"}},
      {"void f() { setitimer(ITIMER_REAL, &v, nullptr); }", {"host_thread"}},
      {"void f() { alarm(1); }", {"host_thread"}},
      {"// std::thread t(g);\nint x;", {}},
      {"void f() { std::thread t(g); }", {"host_thread"}},
  };
  for (const RuleCase& c : cases) {
    SCOPED_TRACE(std::string(c.code));
    const auto findings = check(c.code, c.track);
    EXPECT_EQ(fatal_kinds(findings), c.fatal) << test::describe(findings);
  }
}

TEST(StaticChecks, FindingsNameFileLineAndMatch) {
  const auto findings = check_sources(
      {SourceFile{"dir/kernel.cu", "int a;\n\nvoid f() { std::thread t(g); }\n"}}, Track::fp32);
  ASSERT_EQ(findings.size(), 1u) << test::describe(findings);
  EXPECT_EQ(findings[0].kind, HackKind::host_thread);
  EXPECT_TRUE(findings[0].fatal);
  EXPECT_NE(findings[0].detail.find("dir/kernel.cu:3: std::thread"), std::string::npos)
      << findings[0].detail;
}

TEST(StaticChecks, RepeatsOfOneRuleAreCounted) {
  std::string code = "void f() {\n";
  for (int i = 0; i < 5; ++i)
    code += "  std::thread t" + std::to_string(i) + "(g);\n";
  const auto findings = check(code + "}\n");
  ASSERT_EQ(findings.size(), 3u) << test::describe(findings);
  EXPECT_NE(findings[2].detail.find("(and 2 more like it)"), std::string::npos)
      << findings[2].detail;
}

TEST(StaticChecks, StreamsAreNotesJoinedOrNot) {
  const std::string create = "void init(S* s) { cudaStreamCreate(&s->side); }\n";
  const auto unjoined = check(create);
  EXPECT_TRUE(fatal_kinds(unjoined).empty());
  ASSERT_EQ(note_kinds(unjoined), std::set<std::string>{"side_stream"});
  EXPECT_NE(unjoined[0].detail.find("never joined"), std::string::npos);
  // The join may live in another file of the same program.
  const auto joined =
      check_sources({SourceFile{"a.cu", create},
                     SourceFile{"b.cu",
                                "void fw(S* s, cudaStream_t c) { cudaEventRecord(s->e, s->side);"
                                " cudaStreamWaitEvent(c, s->e, 0); }"}},
                    Track::fp32);
  ASSERT_EQ(joined.size(), 1u);
  EXPECT_FALSE(joined[0].fatal);
  EXPECT_NE(joined[0].detail.find("joined into the caller's"), std::string::npos);
  // A launch with no stream argument runs on the default stream.
  EXPECT_EQ(note_kinds(check("void f() { k<<<1, 32>>>(x); k<<<1, 32, 0, s>>>(x); }")),
            std::set<std::string>{"side_stream"});
  EXPECT_TRUE(check("void f() { k<<<grid(n), dim3(32, 1), smem(a, b), s>>>(x); }").empty());
}

TEST(StaticChecks, SplitTf32MakesDirectTf32ANoteButNotLibraryTf32) {
  const std::string split =
      "__device__ uint32_t to_tf32(float v) { uint32_t b; asm(\"cvt.rna.tf32.f32 %0, %1;\" : "
      "\"=r\"(b) : \"f\"(v)); return b; }\n"
      "__device__ void k(float a) { uint32_t big = to_tf32(a); uint32_t small = to_tf32(a - "
      "__uint_as_float(big)); }\n";
  const auto ok = check(split);
  EXPECT_TRUE(fatal_kinds(ok).empty()) << test::describe(ok);
  EXPECT_EQ(note_kinds(ok), std::set<std::string>{"precision_downgrade"});
  const auto library = check(split + "auto c = CUBLAS_COMPUTE_32F_FAST_TF32;");
  EXPECT_EQ(fatal_kinds(library), std::set<std::string>{"precision_downgrade"})
      << test::describe(library);
  const auto half = check(split + "__device__ __half h;");
  EXPECT_EQ(fatal_kinds(half), std::set<std::string>{"precision_downgrade"})
      << test::describe(half);
}

// ---- The adversarial suite and the honest programs -----------------------------------------

std::vector<SourceFile> program_sources(const std::string& file) {
  std::vector<SourceFile> sources;
  std::vector<std::string> names{file};
  for (const std::string& common : test::manifest_common_sources())
    names.push_back(common);
  for (const std::string& name : names) {
    auto text = read_file(test::kAdversarialDir / name);
    EXPECT_TRUE(text.ok()) << name;
    if (text.ok()) sources.push_back(SourceFile{name, *text});
  }
  return sources;
}

TEST(AdversarialManifest, LoadsAndCoversEveryStaticRow) {
  const auto programs = test::load_adversarial_manifest();
  ASSERT_GE(programs.size(), 25u);
  std::set<std::string> files;
  for (const auto& p : programs) {
    files.insert(p.file);
    EXPECT_TRUE(std::filesystem::exists(test::kAdversarialDir / p.file)) << p.file;
    EXPECT_TRUE(enum_from_name<Track>(p.track_name).has_value()) << p.track_name;
    if (p.honest) {
      EXPECT_TRUE(p.static_expect.fatal.empty() && p.library_expect.fatal.empty()) << p.file;
    }
  }
  // Every .cu in the directory is in the manifest.
  for (const auto& entry : std::filesystem::directory_iterator(test::kAdversarialDir))
    if (entry.path().extension() == ".cu") {
      EXPECT_TRUE(files.count(entry.path().filename().string())) << entry.path();
    }
}

class AdversarialStatic : public ::testing::TestWithParam<test::AdversarialProgram> {};

TEST_P(AdversarialStatic, FindsExactlyTheExpectedKinds) {
  const test::AdversarialProgram& p = GetParam();
  const auto findings = check_sources(program_sources(p.file), *enum_from_name<Track>(p.track_name));
  const test::Expectation found = test::kinds_of(findings);
  EXPECT_EQ(found.fatal, p.static_expect.fatal) << p.why << "\n" << test::describe(findings);
  EXPECT_EQ(found.notes, p.static_expect.notes) << p.why << "\n" << test::describe(findings);
}

INSTANTIATE_TEST_SUITE_P(Manifest, AdversarialStatic,
                         ::testing::ValuesIn(test::load_adversarial_manifest()),
                         [](const auto& info) { return test::program_case_name(info.param); });

TEST(HonestPrograms, TestProgramsRaiseNoFatalFinding) {
  const std::filesystem::path dir = std::filesystem::path(STITCH_TEST_DATA_DIR) / "programs";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "no tests/programs";
  std::vector<SourceFile> support;
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    if (entry.path().extension() == ".h")
      support.push_back(SourceFile{entry.path().filename().string(), *read_file(entry.path())});
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".cu") continue;
    std::vector<SourceFile> sources = support;
    sources.push_back(SourceFile{entry.path().filename().string(), *read_file(entry.path())});
    const auto findings = check_sources(sources, Track::fp32);
    EXPECT_TRUE(fatal_kinds(findings).empty()) << entry.path() << "\n" << test::describe(findings);
    ++checked;
  }
  EXPECT_GE(checked, 1);
}

}  // namespace
}  // namespace stitch
