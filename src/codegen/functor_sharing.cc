// Identical functors share one type (functor_sharing.h).
#include "codegen/functor_sharing.h"

#include <map>
#include <regex>
#include <vector>

#include <fmt/format.h>

#include "codegen/emit_context.h"

namespace stitch::codegen {
namespace {

// A line without its trailing `// ...` comment (node ids differ between copies of a body).
std::string without_comment(const std::string& line) {
  const size_t comment = line.find("//");
  if (comment == std::string::npos) return line;
  size_t end = comment;
  while (end > 0 && line[end - 1] == ' ')
    --end;
  return line.substr(0, end);
}

// The block's text with its own name replaced and comments dropped: equal keys, same type.
std::string block_key(const std::vector<std::string>& lines, const std::string& name) {
  std::string key;
  const std::regex own_name("\\b" + name + "\\b");
  for (const std::string& line : lines)
    key += std::regex_replace(without_comment(line), own_name, "@") + "\n";
  return key;
}

}  // namespace

std::string share_identical_functors(const std::string& functors) {
  static const std::regex opening(R"(^struct (\w+) \{$)");
  const std::vector<std::string> lines = split_lines(functors);
  std::map<std::string, std::string> first_with_key;
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::smatch match;
    size_t end = i;
    if (std::regex_match(lines[i], match, opening))
      while (end < lines.size() && lines[end] != "};")
        ++end;
    if (end == i || end == lines.size()) {  // not a complete top-level struct: kept
      out += lines[i] + "\n";
      continue;
    }
    const std::string name = match[1].str();
    const std::vector<std::string> block(lines.begin() + i, lines.begin() + end + 1);
    const auto [it, first] = first_with_key.emplace(block_key(block, name), name);
    if (first) {
      for (const std::string& line : block)
        out += line + "\n";
    } else {
      out += fmt::format("using {} = {};  // the same body\n", name, it->second);
    }
    i = end;
  }
  return out;
}

}  // namespace stitch::codegen
