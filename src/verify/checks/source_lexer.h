// A small C/C++/CUDA lexer for the static hack checks: it blanks comments and the contents of
// string and character literals (so a comment that mentions torch does not trip a check and a
// string cannot hide code from one) and splits the rest into tokens with their offsets and line
// numbers. It is not a preprocessor: macros are not expanded, which is why the library audit checks
// the built imports as well.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace stitch {

enum class TokenKind : uint8_t {
  identifier,
  number,
  string_literal,  // "..." or R"(...)" with any encoding prefix
  char_literal,
  header_name,  // <...> or "..." after #include / #include_next / #import, kept verbatim
  punct,        // one character, or one of :: -> <<< >>> ##
};

struct Token {
  TokenKind kind;
  size_t offset = 0;  // into LexedSource::code
  size_t length = 0;
  int string_index = -1;         // string_literal: index into LexedSource::strings
  bool in_directive = false;     // part of a preprocessor line (#include, #define, #pragma ...)
  bool directive_start = false;  // the '#' that starts such a line
  // For ( ) [ ] { }: index of the matching bracket, or -1 (size_t) when unbalanced. Brackets on a
  // preprocessor line match only on that line.
  size_t match = static_cast<size_t>(-1);
};

struct StringLiteral {
  size_t offset = 0;  // of the literal's first character (its prefix, if any)
  std::string
      value;  // what is between the quotes (raw-string delimiters removed), escapes as written
};

struct LexedSource {
  // The text after line splicing (backslash-newline removed, as the compiler's phase 2 does, so
  // `std::thr\<newline>ead` is one token), with comments and the contents of string and character
  // literals replaced by spaces. Newlines are kept; line_of maps offsets back to original lines.
  std::string code;
  std::vector<Token> tokens;
  std::vector<StringLiteral> strings;
  std::vector<size_t> line_starts;  // offset in the original text of each physical line's start
  std::vector<size_t> origin;  // code offset -> original offset; empty when nothing was spliced

  std::string_view text(const Token& token) const {
    return std::string_view(code).substr(token.offset, token.length);
  }
  int line_of(size_t offset) const;  // 1-based physical line of a code offset
};

LexedSource lex_source(std::string_view text);

}  // namespace stitch
