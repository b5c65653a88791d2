// The program ABI check of a source text (extract.h): the header included, and each of the five
// C symbols defined with include/stitch/program.h's signature, or STITCH_PROGRAM_EXPORTS used.
// It reads the code the way a compiler would see the declarations (comments and literals blanked)
// but is no parser: its job is to catch a reply that cannot be a program before nvcc runs.
#include <algorithm>
#include <cctype>
#include <regex>

#include <fmt/format.h>

#include "llm/extract.h"

namespace stitch::llm {
namespace {

struct Signature {
  AbiSymbol symbol;
  std::string_view result;  // normalized return type
  std::vector<std::string_view> params;
};

const std::array<Signature, 5>& abi_signatures() {
  static const std::array<Signature, 5> signatures = {{
      {AbiSymbol::abi_version, "int", {}},
      {AbiSymbol::init, "int", {"const stitch_tensor*", "int", "void**"}},
      {AbiSymbol::forward,
       "int",
       {"void*", "const stitch_tensor*", "int", "stitch_tensor*", "int", "void*"}},
      {AbiSymbol::destroy, "void", {"void*"}},
      {AbiSymbol::last_error, "const char*", {"void*"}},
  }};
  return signatures;
}

bool is_ident(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// `source` with comments and string/char literals replaced by spaces (newlines kept).
std::string blank_comments_and_literals(std::string_view source) {
  std::string out(source);
  size_t i = 0;
  auto blank = [&](size_t from, size_t to) {
    for (size_t k = from; k < to && k < out.size(); ++k)
      if (out[k] != '\n') out[k] = ' ';
  };
  while (i < source.size()) {
    if (source.compare(i, 2, "//") == 0) {
      const size_t end = source.find('\n', i);
      blank(i, end == std::string_view::npos ? source.size() : end);
      i = end == std::string_view::npos ? source.size() : end;
    } else if (source.compare(i, 2, "/*") == 0) {
      const size_t end = source.find("*/", i + 2);
      const size_t stop = end == std::string_view::npos ? source.size() : end + 2;
      blank(i, stop);
      i = stop;
    } else if (source[i] == '"' || source[i] == '\'') {
      const char quote = source[i];
      size_t k = i + 1;
      while (k < source.size() && source[k] != quote && source[k] != '\n')
        k += source[k] == '\\' ? 2 : 1;
      blank(i, std::min(k + 1, source.size()));
      i = k + 1;
    } else {
      ++i;
    }
  }
  return out;
}

bool brackets_balance(std::string_view code) {
  int braces = 0, parens = 0;
  for (char c : code) {
    braces += c == '{' ? 1 : c == '}' ? -1 : 0;
    parens += c == '(' ? 1 : c == ')' ? -1 : 0;
    if (braces < 0 || parens < 0) return false;
  }
  return braces == 0 && parens == 0;
}

// A declarator's type in one spelling: "const stitch_tensor*" for "stitch_tensor const *params",
// "const stitch_tensor params[]" and the like; the parameter name and top-level const dropped.
std::string normalize_type(std::string_view text) {
  std::string spaced;
  for (char c : text) {
    if (c == '*' || c == '&' || c == '[' || c == ']') {
      spaced += ' ';
      spaced += c;
      spaced += ' ';
    } else {
      spaced += std::isspace(static_cast<unsigned char>(c)) ? ' ' : c;
    }
  }
  std::vector<std::string> tokens;
  for (size_t at = 0; at < spaced.size();) {
    const size_t start = spaced.find_first_not_of(' ', at);
    if (start == std::string::npos) break;
    const size_t end = spaced.find(' ', start);
    tokens.push_back(spaced.substr(start, end == std::string::npos ? end : end - start));
    at = end == std::string::npos ? spaced.size() : end;
  }
  int stars = 0;
  bool is_const = false;
  std::vector<std::string> words;
  for (size_t k = 0; k < tokens.size(); ++k) {
    const std::string& token = tokens[k];
    if (token == "*" || token == "[") stars += 1;
    if (token == "*" || token == "[" || token == "]" || token == "&") continue;
    if (token == "const") {
      is_const = is_const || stars == 0;  // a const after the last '*' is top-level: dropped
      continue;
    }
    words.push_back(token);
  }
  if (words.size() > 1) words.pop_back();  // the parameter's name
  std::string type = is_const ? "const " : "";
  for (size_t k = 0; k < words.size(); ++k)
    type += (k ? " " : "") + words[k];
  return type + std::string(static_cast<size_t>(stars), '*');
}

std::vector<std::string> split_params(std::string_view list) {
  std::vector<std::string> params;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= list.size(); ++i) {
    const char c = i < list.size() ? list[i] : ',';
    depth += (c == '(' || c == '<' || c == '[') ? 1 : (c == ')' || c == '>' || c == ']') ? -1 : 0;
    if (c == ',' && depth == 0) {
      std::string param = normalize_type(list.substr(start, i - start));
      if (!param.empty()) params.push_back(param);
      start = i + 1;
    }
  }
  if (params.size() == 1 && params[0] == "void") params.clear();
  return params;
}

// The words before `name` back to the previous declaration boundary.
std::string return_type_before(std::string_view code, size_t name_at, bool& internal_linkage) {
  size_t start = name_at;
  while (start > 0 && code[start - 1] != ';' && code[start - 1] != '}' && code[start - 1] != '{')
    --start;
  // Preprocessor lines between the last declaration and this one are not part of it.
  std::string words = std::regex_replace(std::string(code.substr(start, name_at - start)),
                                         std::regex(R"(^[ \t]*#.*$)", std::regex::multiline), " ");
  internal_linkage = std::regex_search(words, std::regex(R"(\b(static|inline)\b)"));
  words = std::regex_replace(words, std::regex(R"(\b(extern|static|inline|__host__)\b)"), " ");
  words = std::regex_replace(words, std::regex(R"(__attribute__\s*\(\(.*\)\))"), " ");
  return normalize_type(words + " name");
}

// Checks every definition of `signature`'s symbol; returns whether one matched, and adds
// problems for a definition with another signature.
bool check_symbol(std::string_view code, const Signature& signature,
                  std::vector<std::string>& problems) {
  const std::string name(enum_name(signature.symbol));
  for (size_t at = code.find(name); at != std::string_view::npos; at = code.find(name, at + 1)) {
    if ((at > 0 && is_ident(code[at - 1])) || is_ident(code[at + name.size()])) continue;
    size_t open = code.find_first_not_of(" \t\n", at + name.size());
    if (open == std::string_view::npos || code[open] != '(') continue;
    int depth = 0;
    size_t close = open;
    for (; close < code.size(); ++close) {
      depth += code[close] == '(' ? 1 : code[close] == ')' ? -1 : 0;
      if (depth == 0) break;
    }
    if (close >= code.size()) continue;
    const size_t body = code.find_first_not_of(" \t\n", close + 1);
    if (body == std::string_view::npos || code[body] != '{') continue;  // a declaration or a call
    bool internal = false;
    const std::string result = return_type_before(code, at, internal);
    const std::vector<std::string> params = split_params(code.substr(open + 1, close - open - 1));
    const std::vector<std::string> expected(signature.params.begin(), signature.params.end());
    if (internal) {
      problems.push_back(name + " is static or inline: the ABI needs it exported");
    } else if (result != signature.result || params != expected) {
      std::string got, want;
      for (const auto& p : params)
        got += (got.empty() ? "" : ", ") + p;
      for (const auto& p : expected)
        want += (want.empty() ? "" : ", ") + p;
      std::string hint;
      if (std::find(params.begin(), params.end(), "cudaStream_t") != params.end())
        hint = " (the stream parameter is void*: cast it to cudaStream_t inside)";
      problems.push_back(fmt::format("{} is defined as {} {}({}); the ABI says {} {}({}){}", name,
                                     result, name, got, signature.result, name, want, hint));
    } else {
      return true;
    }
  }
  return false;
}

bool includes_abi_header(std::string_view source) {
  static const std::regex include(
      R"(^[ \t]*#[ \t]*include[ \t]*[<"]([^>"]*/)?(program\.h|host_program\.cuh)[>"])",
      std::regex::multiline);
  return std::regex_search(source.begin(), source.end(), include);
}

}  // namespace

AbiCheck check_program_abi(std::string_view source) {
  AbiCheck check;
  const std::string code = blank_comments_and_literals(source);
  check.balanced = brackets_balance(code);
  check.includes_header = includes_abi_header(source);
  static const std::regex macro_use(R"(^[ \t]*STITCH_PROGRAM_EXPORTS[ \t]*\()",
                                    std::regex::multiline);
  check.uses_exports_macro = std::regex_search(code, macro_use);
  if (!check.includes_header) check.problems.push_back("it does not include \"stitch/program.h\"");
  if (!check.balanced)
    check.problems.push_back("its braces or parentheses do not close (the code looks cut off)");
  for (const Signature& signature : abi_signatures()) {
    std::vector<std::string> wrong;
    const bool defined = check.uses_exports_macro || check_symbol(code, signature, wrong);
    if (defined) {
      check.defined.push_back(signature.symbol);
    } else if (!wrong.empty()) {
      check.problems.insert(check.problems.end(), wrong.begin(), wrong.end());
    } else {
      check.problems.push_back(std::string(enum_name(signature.symbol)) + " is not defined");
    }
  }
  return check;
}

}  // namespace stitch::llm
