// Load-time hooks and raw system calls in host code (see source_hooks.h).
#include "verify/checks/source_hooks.h"

#include <fmt/format.h>

#include "verify/checks/source_tokens.h"

namespace stitch {
namespace {

using namespace source_detail;

constexpr size_t kAttributeReach = 8;  // tokens between __attribute__ / [[ and the attribute name

constexpr std::string_view kHookSections[] = {".init_array", ".preinit_array", ".ctors", ".init",
                                              ".fini_array", ".fini",          ".dtors"};

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// The hook section `text` names at `at` (".init_array", ".init_array.00100"), or "".
std::string_view hook_section_at(std::string_view text, size_t at) {
  for (std::string_view section : kHookSections) {
    if (text.substr(at, section.size()) != section) continue;
    const size_t end = at + section.size();
    if (end == text.size() || !is_name_char(text[end])) return section;
  }
  return {};
}

// A hook section named anywhere in `text`, as a whole name.
std::string_view mentions_hook_section(std::string_view text) {
  for (size_t at = text.find('.'); at != std::string_view::npos; at = text.find('.', at + 1)) {
    if (at > 0 && is_name_char(text[at - 1])) continue;
    if (std::string_view s = hook_section_at(text, at); !s.empty()) return s;
  }
  return {};
}

// Escapes (\n, \t, \") become spaces, so asm text splits into words.
std::string unescaped(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size()) {
      out.push_back(' ');
      ++i;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

std::vector<std::string> words_of(std::string_view text) {
  std::vector<std::string> words;
  std::string current;
  for (char c : unescaped(text)) {
    if (is_name_char(c) || c == '.' || c == '$' || c == '#') {
      current.push_back(c);
    } else if (!current.empty()) {
      words.push_back(std::move(current));
      current.clear();
    }
  }
  if (!current.empty()) words.push_back(std::move(current));
  return words;
}

// `.section .init_array` / `.pushsection .ctors,"aw"` in assembler text.
std::string_view asm_hook_section(std::string_view text) {
  const std::vector<std::string> words = words_of(text);
  for (size_t k = 0; k + 1 < words.size(); ++k)
    if (words[k] == ".section" || words[k] == ".pushsection")
      if (std::string_view s = hook_section_at(words[k + 1], 0); !s.empty()) return s;
  return {};
}

// The host instruction or directive in assembler text that makes a system call or emits
// hand-encoded machine code, or "".
std::string raw_machine_code(std::string_view text) {
  const std::vector<std::string> words = words_of(text);
  for (size_t k = 0; k < words.size(); ++k) {
    const std::string& w = words[k];
    const std::string next = k + 1 < words.size() ? words[k + 1] : "";
    if (w == "syscall" || w == "sysenter") return w;
    if (w == "int" && in_list(next, {"0x80", "$0x80", "$128"})) return w + " " + next;
    if ((w == "svc" || w == "swi") && !next.empty() && (next[0] == '#' || next[0] == '0'))
      return w + " " + next;
    if (in_list(w, {".byte", ".2byte", ".4byte", ".8byte", ".word", ".long", ".quad", ".inst",
                    ".short", ".hword", ".value", ".int"}))
      return w;
  }
  return {};
}

bool in_attribute(const Tokens& t, size_t i) {
  if (i >= 2 && t.is(i - 1, "::") && t.is(i - 2, "gnu")) return true;
  for (size_t k = i; k-- > 0 && i - k <= kAttributeReach;) {
    if (t.is(k, "__attribute__") || t.is(k, "__attribute")) return true;
    if (t.is(k, "[") && k > 0 && t.is(k - 1, "[")) return true;
  }
  return false;
}

// String literals on #define lines, adjacent ones joined: what a macro may hand to an asm
// statement or a section attribute.
std::vector<std::pair<size_t, std::string>> defined_strings(const LexedSource& s) {
  const Tokens t(s);
  std::vector<std::pair<size_t, std::string>> out;
  bool in_define = false;
  for (size_t i = 0; i < t.size(); ++i) {
    if (s.tokens[i].directive_start) in_define = t.is(i + 1, "define");
    if (!s.tokens[i].in_directive) in_define = false;
    if (!in_define || t.kind(i) != TokenKind::string_literal) continue;
    const size_t first = i;
    std::string joined;
    for (; i < t.size() && t.kind(i) == TokenKind::string_literal && s.tokens[i].in_directive; ++i)
      joined += s.strings[s.tokens[i].string_index].value;
    out.emplace_back(first, std::move(joined));
    --i;
  }
  return out;
}

void section_attributes(const Tokens& t, std::vector<HookFinding>& out) {
  const LexedSource& s = t.source();
  for (size_t i = 0; i + 1 < t.size(); ++i) {
    if (!t.ident(i) || !in_list(t.text(i), {"section", "__section__"}) || !t.is(i + 1, "(") ||
        !in_attribute(t, i))
      continue;
    const size_t close = t.match_forward(i + 1);
    if (close == npos) continue;
    std::string name;
    bool literal = close > i + 2;
    for (size_t k = i + 2; k < close; ++k) {
      if (t.kind(k) != TokenKind::string_literal)
        literal = false;
      else
        name += s.strings[s.tokens[k].string_index].value;
    }
    if (!literal) {
      out.push_back({i, HackKind::init_side_effect, "section(...)",
                     "section name built by a macro or expression: it cannot be checked"});
    } else if (std::string_view hook = hook_section_at(name, 0); !hook.empty()) {
      out.push_back({i, HackKind::init_side_effect, fmt::format("section(\"{}\")", name),
                     "places code or a pointer in a load- or unload-time section"});
    }
  }
}

}  // namespace

std::vector<HookFinding> find_load_hooks(const LexedSource& source,
                                         const std::vector<AsmStatement>& asm_statements) {
  const Tokens t(source);
  std::vector<HookFinding> out;
  for (size_t i = 0; i < t.size(); ++i) {
    if (!t.ident(i)) continue;
    const std::string_view name = t.text(i);
    if (in_list(name, {"constructor", "destructor", "__constructor__", "__destructor__"}) &&
        in_attribute(t, i))
      out.push_back({i, HackKind::init_side_effect, std::string(name),
                     "runs code when the library is loaded or unloaded"});
    if (in_list(name, {"ifunc", "__ifunc__"}) && in_attribute(t, i))
      out.push_back({i, HackKind::init_side_effect, std::string(name),
                     "runs a resolver while the library is relocated"});
    // S(.section .init_array) with #define S(x) #x: the name as code tokens.
    if (in_list(name, {"init_array", "preinit_array", "fini_array", "ctors", "dtors"}) && i > 0 &&
        t.is(i - 1, ".") && t.adjacent(i - 1))
      out.push_back({i, HackKind::init_side_effect, "." + std::string(name),
                     "names a load- or unload-time section in code a macro turns into a string"});
  }
  section_attributes(t, out);
  for (const AsmStatement& statement : asm_statements)
    if (std::string_view hook = asm_hook_section(statement.ptx); !hook.empty())
      out.push_back({statement.first_token, HackKind::init_side_effect,
                     fmt::format("asm .section {}", hook),
                     "places code or a pointer in a load- or unload-time section"});
  for (const auto& [token, text] : defined_strings(source))
    if (std::string_view hook = mentions_hook_section(text); !hook.empty())
      out.push_back({token, HackKind::init_side_effect, fmt::format("\"{}\"", text.substr(0, 80)),
                     fmt::format("a macro names the load- or unload-time section {}", hook)});
  return out;
}

std::vector<HookFinding> find_raw_syscalls(const LexedSource& source,
                                           const std::vector<AsmStatement>& asm_statements) {
  std::vector<HookFinding> out;
  for (const AsmStatement& statement : asm_statements)
    if (std::string code = raw_machine_code(statement.ptx); !code.empty())
      out.push_back({statement.first_token, HackKind::hidden_work, "asm " + code,
                     code.front() == '.' ? "emits hand-encoded machine code into the host program"
                                         : "makes a raw system call from inline assembly"});
  for (const auto& [token, text] : defined_strings(source))
    if (std::string code = raw_machine_code(text); !code.empty())
      out.push_back({token, HackKind::hidden_work, fmt::format("\"{}\"", text.substr(0, 80)),
                     fmt::format("a macro holds assembly ({}) an asm statement may use", code)});
  return out;
}

}  // namespace stitch
