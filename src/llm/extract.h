// Reading a program out of a model's reply, whatever shape the reply has: fenced code blocks
// anywhere (```cuda, ```cpp, ```c++, bare ```), several of them, prose around, a last fence left
// open by a truncated reply, or no fence at all. The block that holds the program is chosen by the
// program ABI (include/stitch/program.h): it must define stitch_abi_version, stitch_init,
// stitch_forward, stitch_destroy and stitch_last_error with the ABI's signatures (or use
// kernels/host_program.cuh's STITCH_PROGRAM_EXPORTS), checked here before anything is built. A
// reply with no such program is `no_usable_output`, with the reason.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "llm/chat.h"
#include "util/enum_names.h"

namespace stitch::llm {

struct CodeBlock {
  std::string language;  // the fence's info word, lower case ("cuda", "c++", ""); "" when unfenced
  std::string code;
  bool closed = true;  // false: the reply ended inside the block
  int number = 1;      // its place among the reply's blocks, from 1
};

// Every fenced block of `reply`, in order.
std::vector<CodeBlock> find_code_blocks(std::string_view reply);

// Whether a block's language may hold C++/CUDA (unlabelled included; python, json... not).
bool is_program_language(std::string_view language);

enum class AbiSymbol : uint8_t { abi_version, init, forward, destroy, last_error };
inline constexpr std::array<std::string_view, 5> kAbiSymbolNames = {
    "stitch_abi_version", "stitch_init", "stitch_forward", "stitch_destroy", "stitch_last_error"};
constexpr const auto& enum_names(AbiSymbol) {
  return kAbiSymbolNames;
}
static_assert(names_every_enumerator(AbiSymbol::last_error));

struct AbiCheck {
  bool includes_header = false;  // stitch/program.h (or host_program.cuh, which includes it)
  bool uses_exports_macro = false;
  std::vector<AbiSymbol> defined;     // defined with the ABI's signature
  std::vector<std::string> problems;  // empty: the ABI is met
  bool balanced = true;               // braces and parentheses close (false: looks cut off)
  bool ok() const { return problems.empty(); }
};

// The ABI check of one source text (comments and string literals ignored).
AbiCheck check_program_abi(std::string_view source);

enum class StepOutcome : uint8_t { usable, no_usable_output };
inline constexpr std::array<std::string_view, 2> kStepOutcomeNames = {"usable", "no_usable_output"};
constexpr const auto& enum_names(StepOutcome) {
  return kStepOutcomeNames;
}
static_assert(names_every_enumerator(StepOutcome::no_usable_output));

enum class UnusableReason : uint8_t {
  empty_reply,    // no content (and no reasoning holding code)
  no_code,        // prose only: no code block, nothing that looks like a program
  truncated,      // the program is cut off (an open fence with unbalanced braces, or `length`)
  abi_violation,  // code, but no block (nor all blocks together) meets the ABI
  not_json,       // a JSON answer that neither parsed, nor repaired, nor came right on re-ask
};
inline constexpr std::array<std::string_view, 5> kUnusableReasonNames = {
    "empty_reply", "no_code", "truncated", "abi_violation", "not_json"};
constexpr const auto& enum_names(UnusableReason) {
  return kUnusableReasonNames;
}
static_assert(names_every_enumerator(UnusableReason::not_json));

struct NoUsableOutput {
  UnusableReason reason = UnusableReason::no_code;
  std::string detail;
  // "no_usable_output (abi_violation): stitch_destroy is not defined"
  std::string message() const;
};

struct ProgramExtraction {
  StepOutcome outcome = StepOutcome::no_usable_output;
  std::string source;      // usable: the program
  std::string note;        // usable: which block(s) it came from
  NoUsableOutput failure;  // no_usable_output: why
};

// The program in one reply's text; `finish` says whether the reply was cut by the token budget.
ProgramExtraction extract_program(std::string_view text,
                                  FinishReason finish = FinishReason::unknown);
// The same for a whole reply: its content, else its reasoning (reasoning models that answered
// there).
ProgramExtraction extract_program(const ChatReply& reply);

}  // namespace stitch::llm
