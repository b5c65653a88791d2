// Code blocks and the program in a model's reply (extract.h). The ABI check is abi_check.cc.
#include "llm/extract.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "util/text.h"

namespace stitch::llm {
namespace {

// An opening fence on this line: "```cuda", "  ~~~ c++ {.numberLines}", "Here it is: ```cpp".
// Returns the fence (its character repeated) and the info word, or nullopt.
struct Fence {
  std::string marker;
  std::string language;
};
std::optional<Fence> opening_fence(std::string_view line) {
  for (std::string_view mark : {"```", "~~~"}) {
    const size_t at = line.find(mark);
    if (at == std::string_view::npos) continue;
    size_t end = at;
    while (end < line.size() && line[end] == mark[0])
      ++end;
    std::string_view info = trim(line.substr(end));
    // Only an info string may follow (a language word and attributes), no further fence.
    if (info.find(mark) != std::string_view::npos) continue;
    const size_t word_end = info.find_first_of(" \t{");
    std::string word = lower(info.substr(0, word_end));
    if (!std::all_of(word.begin(), word.end(), [](char c) {
          return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-' || c == '_' ||
                 c == '.';
        }))
      continue;
    // A fence after prose on the same line opens a block only with a code language after it
    // ("Here it is: ```cuda"), so "wrap it in ``` fences" stays prose.
    const bool mid_line = !trim(line.substr(0, at)).empty();
    if (mid_line && (word.empty() || !(is_program_language(word) || word == "json"))) continue;
    return Fence{std::string(line.substr(at, end - at)), word};
  }
  return std::nullopt;
}

// Whether `line` closes a block opened by `marker`; `code_before` gets what precedes the fence on
// the line ("}```" closes after "}").
bool closes(std::string_view line, const std::string& marker, std::string_view& code_before) {
  std::string_view text = trim(line);
  if (text.size() < marker.size() || !text.ends_with(std::string_view(marker).substr(0, 3)))
    return false;
  size_t fence_start = text.size();
  while (fence_start > 0 && text[fence_start - 1] == marker[0])
    --fence_start;
  if (text.size() - fence_start < marker.size()) return false;
  code_before = text.substr(0, fence_start);
  return true;
}

bool has_unfenced_program(std::string_view text) {
  return text.find("#include") != std::string_view::npos ||
         text.find("__global__") != std::string_view::npos;
}

// From the first preprocessor line (or a comment just before it) to the end: a reply that is code
// with a line of prose on top.
std::string unfenced_program(std::string_view text) {
  size_t start = text.find("#include");
  if (start == std::string_view::npos) start = text.find("__global__");
  start = text.rfind('\n', start) == std::string_view::npos ? 0 : text.rfind('\n', start) + 1;
  return std::string(text.substr(start));
}

std::string join_blocks(const std::vector<const CodeBlock*>& blocks) {
  std::string joined;
  for (const CodeBlock* block : blocks) {
    if (!joined.empty() && !joined.ends_with('\n')) joined += '\n';
    joined += block->code;
  }
  return joined;
}

ProgramExtraction usable(std::string source, std::string note) {
  return {StepOutcome::usable, std::move(source), std::move(note), {}};
}

ProgramExtraction unusable(UnusableReason reason, std::string detail) {
  return {StepOutcome::no_usable_output, "", "", {reason, std::move(detail)}};
}

std::string problems_text(const AbiCheck& check) {
  std::string text;
  for (const std::string& problem : check.problems)
    text += (text.empty() ? "" : "; ") + problem;
  return text;
}

// The candidate whose failure best explains why none is usable: most symbols defined, then the
// longest.
const CodeBlock* closest_candidate(const std::vector<const CodeBlock*>& candidates,
                                   const std::vector<AbiCheck>& checks, size_t& index) {
  index = 0;
  for (size_t k = 1; k < candidates.size(); ++k) {
    const size_t have = checks[k].defined.size(), best = checks[index].defined.size();
    if (have > best ||
        (have == best && candidates[k]->code.size() >= candidates[index]->code.size()))
      index = k;
  }
  return candidates[index];
}

ProgramExtraction from_candidates(const std::vector<const CodeBlock*>& candidates,
                                  size_t total_blocks, FinishReason finish) {
  std::vector<AbiCheck> checks;
  for (const CodeBlock* block : candidates)
    checks.push_back(check_program_abi(block->code));
  // The last complete program wins: a reply that corrects itself puts the fixed version last.
  for (size_t k = candidates.size(); k-- > 0;)
    if (checks[k].ok())
      return usable(candidates[k]->code,
                    fmt::format("block {} of {}", candidates[k]->number, total_blocks));
  if (candidates.size() > 1) {
    std::string joined = join_blocks(candidates);
    if (check_program_abi(joined).ok())
      return usable(std::move(joined), fmt::format("{} blocks joined", candidates.size()));
  }
  size_t index = 0;
  const CodeBlock* closest = closest_candidate(candidates, checks, index);
  const AbiCheck& check = checks[index];
  const bool cut_by_budget =
      finish == FinishReason::length && (!closest->closed || !check.balanced);
  if (cut_by_budget || (!closest->closed && !check.balanced))
    return unusable(UnusableReason::truncated,
                    fmt::format("the reply was cut off inside the program{} ({})",
                                finish == FinishReason::length ? " (token budget reached)" : "",
                                problems_text(check)));
  return unusable(UnusableReason::abi_violation,
                  fmt::format("no code block is a program to the ABI: {}", problems_text(check)));
}

}  // namespace

std::vector<CodeBlock> find_code_blocks(std::string_view reply) {
  std::vector<CodeBlock> blocks;
  std::optional<Fence> open;
  size_t at = 0;
  while (at < reply.size()) {
    size_t end = reply.find('\n', at);
    if (end == std::string_view::npos) end = reply.size();
    const std::string_view line = reply.substr(at, end - at);
    at = end + 1;
    if (!open) {
      open = opening_fence(line);
      if (open) blocks.push_back({open->language, "", false, static_cast<int>(blocks.size()) + 1});
      continue;
    }
    std::string_view before;
    if (closes(line, open->marker, before)) {
      if (!before.empty()) blocks.back().code.append(before).append("\n");
      blocks.back().closed = true;
      open.reset();
      continue;
    }
    blocks.back().code.append(line).append("\n");
  }
  return blocks;
}

bool is_program_language(std::string_view language) {
  static constexpr std::array<std::string_view, 12> kLanguages = {
      "", "cuda", "cu", "cuh", "cpp", "c++", "cxx", "cc", "c", "h", "hpp", "objective-c"};
  return std::find(kLanguages.begin(), kLanguages.end(), language) != kLanguages.end();
}

std::string NoUsableOutput::message() const {
  return fmt::format("no_usable_output ({}): {}", enum_name(reason), detail);
}

ProgramExtraction extract_program(std::string_view text, FinishReason finish) {
  if (trim(text).empty()) return unusable(UnusableReason::empty_reply, "the reply is empty");
  const std::vector<CodeBlock> blocks = find_code_blocks(text);
  std::vector<const CodeBlock*> candidates;
  for (const CodeBlock& block : blocks)
    if (is_program_language(block.language) && !trim(block.code).empty())
      candidates.push_back(&block);
  if (!candidates.empty()) return from_candidates(candidates, blocks.size(), finish);
  if (blocks.empty() && has_unfenced_program(text)) {
    const CodeBlock whole{"", unfenced_program(text), finish != FinishReason::length, 1};
    ProgramExtraction extraction = from_candidates({&whole}, 1, finish);
    if (extraction.outcome == StepOutcome::usable) extraction.note = "unfenced reply";
    return extraction;
  }
  std::string languages;
  for (const CodeBlock& block : blocks)
    languages += (languages.empty() ? "" : ", ") + (block.language.empty() ? "?" : block.language);
  return unusable(UnusableReason::no_code,
                  blocks.empty() ? "the reply holds no code block"
                                 : "the reply's code blocks are not C++/CUDA (" + languages + ")");
}

ProgramExtraction extract_program(const ChatReply& reply) {
  ProgramExtraction from_content = extract_program(reply.content, reply.finish);
  if (from_content.outcome == StepOutcome::usable || trim(reply.reasoning).empty())
    return from_content;
  ProgramExtraction from_reasoning = extract_program(reply.reasoning, reply.finish);
  if (from_reasoning.outcome != StepOutcome::usable) return from_content;
  from_reasoning.note += " (in the reasoning field)";
  return from_reasoning;
}

}  // namespace stitch::llm
