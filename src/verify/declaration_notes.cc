// Declarations for compile errors (declaration_notes.h).
#include "verify/declaration_notes.h"

#include <algorithm>
#include <array>
#include <cctype>

#include <fmt/format.h>

namespace stitch {
namespace {

bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

constexpr std::array<std::string_view, 11> kNotCallees = {
    "if",     "for",      "while",       "switch",           "return",
    "sizeof", "decltype", "static_cast", "reinterpret_cast", "const_cast",
    "alignof"};

// The quoted names of a message, in order: identifier "X" ... → X.
std::vector<std::string> quoted_names(std::string_view message) {
  std::vector<std::string> out;
  size_t at = 0;
  while ((at = message.find('"', at)) != std::string_view::npos) {
    size_t end = message.find('"', at + 1);
    if (end == std::string_view::npos) break;
    out.emplace_back(message.substr(at + 1, end - at - 1));
    at = end + 1;
  }
  return out;
}

// "ns::name" → "name"; a template argument list or parameter list is dropped.
std::string last_component(std::string name) {
  name = name.substr(0, name.find_first_of("<("));
  size_t colon = name.rfind("::");
  if (colon != std::string::npos) name = name.substr(colon + 2);
  while (!name.empty() && !ident_char(name.back()))
    name.pop_back();
  return name;
}

// The failing line of a snippet (the one read_snippet marks with '>'), without its number.
std::string failing_line(std::string_view snippet) {
  size_t start = 0;
  while (start < snippet.size()) {
    size_t end = snippet.find('\n', start);
    if (end == std::string_view::npos) end = snippet.size();
    std::string_view line = snippet.substr(start, end - start);
    if (!line.empty() && line.front() == '>') {
      size_t bar = line.find('|');
      return std::string(bar == std::string_view::npos ? line : line.substr(bar + 1));
    }
    start = end + 1;
  }
  return "";
}

// The names called on a line: identifiers followed by '(' (innermost last).
std::vector<std::string> callees(std::string_view line) {
  std::vector<std::string> out;
  for (size_t i = 0; i < line.size();) {
    if (!ident_char(line[i]) || std::isdigit(static_cast<unsigned char>(line[i]))) {
      ++i;
      continue;
    }
    size_t start = i;
    while (i < line.size() && ident_char(line[i]))
      ++i;
    size_t j = i;
    while (j < line.size() && line[j] == ' ')
      ++j;
    std::string name(line.substr(start, i - start));
    if (j < line.size() && line[j] == '(' &&
        std::find(kNotCallees.begin(), kNotCallees.end(), name) == kNotCallees.end())
      out.push_back(std::move(name));
  }
  return out;
}

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

}  // namespace

std::vector<ErrorIdentifier> error_identifiers(const Diagnostic& error) {
  const std::string& m = error.message;
  std::vector<ErrorIdentifier> out;
  std::vector<std::string> names = quoted_names(m);
  if (contains(m, "is undefined") && !names.empty()) {
    out.push_back({last_component(names.front()), true});
  } else if (contains(m, "has no member") && names.size() >= 2) {
    out.push_back({last_component(names[1]), true});
    out.push_back({last_component(names[0]), false});  // the class / namespace itself
  } else if ((contains(m, "no instance of overloaded function") ||
              contains(m, "no instance of function template")) &&
             !names.empty()) {
    out.push_back({last_component(names.front()), false});
  } else if (contains(m, "arguments in function call") ||
             contains(m, "incompatible with parameter") ||
             contains(m, "cannot be used to initialize") ||
             contains(m, "no suitable conversion function")) {
    std::vector<std::string> called = callees(failing_line(error.snippet));
    // The innermost call is usually the one with the bad argument list: try it first.
    for (auto it = called.rbegin(); it != called.rend(); ++it)
      out.push_back({*it, false});
  }
  out.erase(std::remove_if(out.begin(), out.end(),
                           [](const ErrorIdentifier& id) { return id.name.empty(); }),
            out.end());
  return out;
}

void attach_declarations(Feedback& feedback, DeclarationSource& source) {
  for (const Diagnostic& error : feedback.compile_errors) {
    if (feedback.declarations.size() >= kMaxDeclarationNotes) break;
    for (const ErrorIdentifier& id : error_identifiers(error)) {
      std::optional<DeclarationNote> note = source.find(id.name, id.fuzzy);
      if (!note) continue;
      bool known = std::any_of(
          feedback.declarations.begin(), feedback.declarations.end(),
          [&](const DeclarationNote& d) { return d.name == note->name && d.path == note->path; });
      if (!known) feedback.declarations.push_back(std::move(*note));
      break;
    }
  }
  if (feedback.declarations.empty() ||
      feedback.suggestion.rule != SuggestionRule::fix_compile_error)
    return;
  const DeclarationNote& first = feedback.declarations.front();
  feedback.suggestion.text +=
      first.name == first.identifier
          ? fmt::format(" `{}` is declared at {}:{}-{}.", first.name, first.path, first.line_begin,
                        first.line_end)
          : fmt::format(" `{}` is not declared; did you mean `{}` ({}:{}-{})?", first.identifier,
                        first.name, first.path, first.line_begin, first.line_end);
}

}  // namespace stitch
