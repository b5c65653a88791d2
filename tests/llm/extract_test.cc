// Reading a program out of malformed, chatty and truncated replies (src/llm/extract.h): a table
// of replies, each with the outcome and what the extraction must say.
#include "llm/extract.h"

#include <gtest/gtest.h>

namespace stitch::llm {
namespace {

// A complete program to the ABI (its body is beside the point: nothing here compiles it).
constexpr std::string_view kProgram = R"(#include <cuda_runtime.h>
#include "stitch/program.h"

struct State { float* w; };

__global__ void scale(const float* x, float* y, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];  // "}" in a comment and in a string: "{"
}

extern "C" int stitch_abi_version(void) { return STITCH_ABI_VERSION; }
extern "C" int stitch_init(const stitch_tensor* params, int n_params, void** state) {
  *state = new State{nullptr};
  return STITCH_OK;
}
extern "C" int stitch_forward(void* state, const stitch_tensor* inputs, int n_inputs,
                              stitch_tensor* outputs, int n_outputs, void* stream) {
  scale<<<1, 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float*>(inputs[0].data), static_cast<float*>(outputs[0].data), 256);
  return cudaGetLastError() == cudaSuccess ? STITCH_OK : STITCH_ERROR_CUDA;
}
extern "C" void stitch_destroy(void* state) { delete static_cast<State*>(state); }
extern "C" const char* stitch_last_error(void* state) { return ""; }
)";

std::string program() {
  return std::string(kProgram);
}

// kProgram with `from` replaced by `to` (the first occurrence).
std::string program_with(std::string_view from, std::string_view to) {
  std::string text = program();
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

std::string fenced(std::string_view code, std::string_view language = "cuda") {
  return "```" + std::string(language) + "\n" + std::string(code) + "```\n";
}

const std::string kKernelPart = program().substr(0, program().find("extern \"C\" int stitch_abi"));
const std::string kHostPart = program().substr(program().find("extern \"C\" int stitch_abi"));

struct ReplyCase {
  const char* name;
  std::string reply;
  FinishReason finish;
  StepOutcome outcome;
  std::string expect;  // usable: the source (or "" to skip); else a part of the failure's message
  std::string note = "";  // usable: a part of the note
};
void PrintTo(const ReplyCase& c, std::ostream* os) {
  *os << c.name;
}

const FinishReason kStop = FinishReason::stop;
const StepOutcome kUsable = StepOutcome::usable;
const StepOutcome kNone = StepOutcome::no_usable_output;

std::vector<ReplyCase> reply_cases() {
  const std::string p = program();
  return {
      {"prose_around", "Here is the program.\n\n" + fenced(p) + "\nIt fuses everything.", kStop,
       kUsable, p, "block 1 of 1"},
      {"cpp_fence", fenced(p, "cpp"), kStop, kUsable, p},
      {"cxx_fence", fenced(p, "c++"), kStop, kUsable, p},
      {"bare_fence", fenced(p, ""), kStop, kUsable, p},
      {"tilde_fence", "~~~cuda\n" + p + "~~~\n", kStop, kUsable, p},
      {"indented_fence", "  ```cuda\n" + p + "  ```\n", kStop, kUsable, p},
      {"reference_then_program",
       fenced("import torch\nclass Model: pass\n", "python") + "My version:\n" + fenced(p), kStop,
       kUsable, p, "block 2 of 2"},
      {"draft_then_fixed",
       fenced(program_with("extern \"C\" void stitch_destroy", "void gone")) +
           "Wait, I forgot destroy:\n" + fenced(p),
       kStop, kUsable, p, "block 2 of 2"},
      {"kernels_and_host_split", fenced(kKernelPart) + "and the host side:\n" + fenced(kHostPart),
       kStop, kUsable, kKernelPart + kHostPart, "2 blocks joined"},
      {"unterminated_complete", "```cuda\n" + p, FinishReason::stop, kUsable, p},
      {"closing_fence_after_brace", "```cuda\n" + p.substr(0, p.size() - 1) + "```\n", kStop,
       kUsable, p},
      {"fence_after_prose", "Sure! ```cuda\n" + p + "```", kStop, kUsable, p},
      {"unfenced", "Here is the code:\n" + p, kStop, kUsable, p, "unfenced reply"},
      {"array_and_spacing",
       fenced(program_with("const stitch_tensor* params, int n_params, void** state",
                           "stitch_tensor const params[], int n_params, void **state")),
       kStop, kUsable, ""},
      {"exports_macro",
       fenced(
           "#include \"host_program.cuh\"\nstruct Program { };\nSTITCH_PROGRAM_EXPORTS(Program)\n"),
       kStop, kUsable, ""},
      {"truncated_by_length", "```cuda\n" + p.substr(0, p.find("stitch_destroy")),
       FinishReason::length, kNone,
       "no_usable_output (truncated): the reply was cut off inside "
       "the program (token budget reached)"},
      {"truncated_open_fence", "```cuda\n" + p.substr(0, p.size() / 2), kStop, kNone,
       "(truncated)"},
      {"empty", "  \n", kStop, kNone, "no_usable_output (empty_reply)"},
      {"prose_only", "I cannot write this kernel, sorry.", kStop, kNone,
       "no_usable_output (no_code): the reply holds no code block"},
      {"python_only", fenced("def forward(x): return x\n", "python"), kStop, kNone,
       "not C++/CUDA (python)"},
      {"prose_mentions_fences", "Wrap code in ``` fences, as in the task.", kStop, kNone,
       "(no_code)"},
      {"stream_type",
       fenced(program_with("int n_outputs, void* stream", "int n_outputs, cudaStream_t stream")),
       kStop, kNone,
       "(abi_violation): no code block is a program to the ABI: stitch_forward is defined as int "
       "stitch_forward(void*, const stitch_tensor*, int, stitch_tensor*, int, cudaStream_t); the "
       "ABI says int stitch_forward(void*, const stitch_tensor*, int, stitch_tensor*, int, void*) "
       "(the stream parameter is void*: cast it to cudaStream_t inside)"},
      {"missing_last_error",
       fenced(program_with(
           "extern \"C\" const char* stitch_last_error(void* state) { return \"\"; }", "")),
       kStop, kNone, "stitch_last_error is not defined"},
      {"no_header", fenced(program_with("#include \"stitch/program.h\"", "")), kStop, kNone,
       "it does not include \"stitch/program.h\""},
      {"static_init",
       fenced(program_with("extern \"C\" int stitch_init", "static int stitch_init")), kStop, kNone,
       "stitch_init is static or inline"},
      {"commented_out_destroy",
       fenced(
           program_with("extern \"C\" void stitch_destroy", "// extern \"C\" void stitch_destroy")),
       kStop, kNone, "stitch_destroy is not defined"},
      {"wrong_return",
       fenced(program_with("extern \"C\" void stitch_destroy", "extern \"C\" int stitch_destroy")),
       kStop, kNone, "stitch_destroy is defined as int stitch_destroy(void*); the ABI says void"},
  };
}

class ExtractProgram : public ::testing::TestWithParam<ReplyCase> {};

TEST_P(ExtractProgram, FromReply) {
  const ReplyCase& c = GetParam();
  const ProgramExtraction extraction = extract_program(c.reply, c.finish);
  ASSERT_EQ(extraction.outcome, c.outcome) << extraction.failure.message() << "\n" << c.reply;
  if (c.outcome == StepOutcome::usable) {
    if (!c.expect.empty()) EXPECT_EQ(extraction.source, c.expect);
    EXPECT_TRUE(check_program_abi(extraction.source).ok());
    EXPECT_NE(extraction.note.find(c.note), std::string::npos) << extraction.note;
  } else {
    EXPECT_NE(extraction.failure.message().find(c.expect), std::string::npos)
        << extraction.failure.message();
  }
}

INSTANTIATE_TEST_SUITE_P(Table, ExtractProgram, ::testing::ValuesIn(reply_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ExtractProgram, ReasoningModelsMayAnswerInTheReasoningField) {
  ChatReply reply;
  reply.reasoning = "Let me think.\n" + fenced(program());
  reply.finish = FinishReason::stop;
  const ProgramExtraction extraction = extract_program(reply);
  ASSERT_EQ(extraction.outcome, StepOutcome::usable) << extraction.failure.message();
  EXPECT_NE(extraction.note.find("reasoning field"), std::string::npos);
  reply.content = "no code here";
  reply.reasoning = "nor here";
  EXPECT_EQ(extract_program(reply).failure.reason, UnusableReason::no_code);
}

TEST(FindCodeBlocks, KeepsLanguagesOrderAndOpenness) {
  const auto blocks =
      find_code_blocks("a\n```Python\nx = 1\n```\nb\n``` cuda {.x}\nint y;\n```\n```c\nopen");
  ASSERT_EQ(blocks.size(), 3u);
  EXPECT_EQ(blocks[0].language, "python");
  EXPECT_EQ(blocks[0].code, "x = 1\n");
  EXPECT_EQ(blocks[1].language, "cuda");
  EXPECT_TRUE(blocks[1].closed);
  EXPECT_EQ(blocks[2].code, "open\n");
  EXPECT_FALSE(blocks[2].closed);
}

TEST(CheckProgramAbi, ListsEveryMissingSymbol) {
  const AbiCheck check = check_program_abi("#include \"stitch/program.h\"\nint stitch_init();\n");
  EXPECT_FALSE(check.ok());
  EXPECT_TRUE(check.includes_header);
  EXPECT_TRUE(check.defined.empty());
  EXPECT_EQ(check.problems.size(), 5u);  // a declaration is not a definition
  EXPECT_TRUE(check_program_abi(program()).defined.size() == 5);
}

}  // namespace
}  // namespace stitch::llm
