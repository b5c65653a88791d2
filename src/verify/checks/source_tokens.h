// Token access shared by the source-structure passes (internal to src/verify).
#pragma once

#include <algorithm>
#include <initializer_list>
#include <string_view>

#include "verify/checks/source_lexer.h"

namespace stitch::source_detail {

inline constexpr size_t npos = static_cast<size_t>(-1);
inline constexpr size_t kAngleScan = 64;

class Tokens {
 public:
  explicit Tokens(const LexedSource& source) : s_(source) {}
  size_t size() const { return s_.tokens.size(); }
  std::string_view text(size_t i) const {
    return i < size() ? s_.text(s_.tokens[i]) : std::string_view();
  }
  TokenKind kind(size_t i) const { return s_.tokens[i].kind; }
  bool ident(size_t i) const { return i < size() && s_.tokens[i].kind == TokenKind::identifier; }
  bool is(size_t i, std::string_view t) const {
    return i < size() &&
           (s_.tokens[i].kind == TokenKind::punct || s_.tokens[i].kind == TokenKind::identifier) &&
           text(i) == t;
  }
  bool directive(size_t i) const { return s_.tokens[i].in_directive; }
  bool literal(size_t i) const {
    const TokenKind k = s_.tokens[i].kind;
    return k == TokenKind::number || k == TokenKind::string_literal || k == TokenKind::char_literal;
  }
  // Tokens i and i+1 are written without space between them.
  bool adjacent(size_t i) const {
    return i + 1 < size() && s_.tokens[i].offset + s_.tokens[i].length == s_.tokens[i + 1].offset;
  }
  const LexedSource& source() const { return s_; }

  // Index of the bracket closing the one at `open`, or npos: (), [] and {} from the lexer's table;
  // template angle brackets by a short bounded scan (they cannot be told from comparisons anyway).
  size_t match_forward(size_t open) const {
    if (open >= size()) return npos;
    if (!is(open, "<")) return s_.tokens[open].match;
    int depth = 0;
    for (size_t i = open; i < size() && i - open < kAngleScan; ++i) {
      if (is(i, "<"))
        ++depth;
      else if (is(i, ">") && --depth == 0)
        return i;
      else if (is(i, ">>>") && (depth -= 3) <= 0)
        return i;
      else if (is(i, ";") || is(i, "{"))
        return npos;
    }
    return npos;
  }
  size_t match_backward(size_t close) const {
    return close < size() ? s_.tokens[close].match : npos;
  }

 private:
  const LexedSource& s_;
};

inline bool in_list(std::string_view word, std::initializer_list<std::string_view> list) {
  return std::find(list.begin(), list.end(), word) != list.end();
}

}  // namespace stitch::source_detail
