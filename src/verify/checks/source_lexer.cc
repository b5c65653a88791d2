// The lexer behind the static checks. Handles what lets code hide from a naive scanner: quotes
// inside comments, quotes inside character literals, C++14 digit separators (1'000), raw strings,
// line splices (removed first, as the compiler does, so they cannot split a keyword or end a
// comment), encoding prefixes. Unterminated constructs end at end of line (strings) or end of file
// (block comments, raw strings); nothing here can crash on arbitrary bytes.
#include "verify/checks/source_lexer.h"

#include <algorithm>

namespace stitch {
namespace {

bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' ||
         static_cast<unsigned char>(c) >= 0x80;  // UTF-8 identifiers
}
bool is_ident_char(char c) {
  return is_ident_start(c) || (c >= '0' && c <= '9');
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

bool is_string_prefix(std::string_view id) {
  return id == "L" || id == "u" || id == "U" || id == "u8";
}
bool is_raw_string_prefix(std::string_view id) {
  return id == "R" || id == "LR" || id == "uR" || id == "UR" || id == "u8R";
}

// Translation phase 2: drops backslash-newline (and backslash-CR-LF), recording for each kept
// character where it came from when anything was dropped.
void splice_lines(std::string_view text, std::string& spliced, std::vector<size_t>& origin) {
  spliced.reserve(text.size());
  bool any = false;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\') {
      size_t n = 0;
      if (i + 1 < text.size() && text[i + 1] == '\n') n = 2;
      if (i + 2 < text.size() && text[i + 1] == '\r' && text[i + 2] == '\n') n = 3;
      if (n != 0) {
        if (!any) {
          any = true;
          origin.resize(spliced.size());
          for (size_t k = 0; k < spliced.size(); ++k)
            origin[k] = k;
        }
        i += n - 1;
        continue;
      }
    }
    spliced.push_back(text[i]);
    if (any) origin.push_back(i);
  }
}

class Lexer {
 public:
  explicit Lexer(std::string_view text) {
    out_.line_starts.push_back(0);
    for (size_t i = 0; i < text.size(); ++i)
      if (text[i] == '\n') out_.line_starts.push_back(i + 1);
    splice_lines(text, out_.code, out_.origin);
    in_storage_ = out_.code;  // read from a copy: `code` is blanked as we go
    in_ = in_storage_;
  }

  LexedSource run() {
    while (pos_ < in_.size())
      step();
    return std::move(out_);
  }

 private:
  char at(size_t i) const { return i < in_.size() ? in_[i] : '\0'; }

  void blank(size_t from, size_t to) {
    for (size_t i = from; i < to && i < in_.size(); ++i)
      if (in_[i] != '\n' && in_[i] != '\r') out_.code[i] = ' ';
  }

  void push(TokenKind kind, size_t from, size_t to, int string_index = -1) {
    out_.tokens.push_back(Token{kind, from, to - from, string_index, in_directive_, false});
    at_line_start_ = false;
    if (directive_ == DirectiveState::expect_word && kind != TokenKind::identifier)
      directive_ = DirectiveState::none;
  }

  void step() {
    const char c = in_[pos_];
    if (c == '\n') {
      ++pos_;
      at_line_start_ = true;
      in_directive_ = false;
      directive_ = DirectiveState::none;
      return;
    }
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      ++pos_;
      return;
    }
    if (c == '/' && at(pos_ + 1) == '/') return line_comment();
    if (c == '/' && at(pos_ + 1) == '*') return block_comment();
    // `%:` is the digraph of `#`: `%:include "x"` is a directive too.
    const size_t hash = c == '#' ? 1 : (c == '%' && at(pos_ + 1) == ':') ? 2 : 0;
    if (hash != 0 && at_line_start_) {
      in_directive_ = true;
      push(TokenKind::punct, pos_, pos_ + hash);
      out_.tokens.back().directive_start = true;
      pos_ += hash;
      directive_ = DirectiveState::expect_word;
      return;
    }
    if (directive_ == DirectiveState::expect_header && (c == '<' || c == '"')) return header();
    if (is_ident_start(c)) return identifier();
    if (is_digit(c) || (c == '.' && is_digit(at(pos_ + 1)))) return number();
    if (c == '"' || c == '\'') return quoted(pos_, pos_, c);
    punct();
  }

  void line_comment() {
    size_t i = pos_;
    while (i < in_.size() && in_[i] != '\n')
      ++i;
    blank(pos_, i);
    pos_ = i;
  }

  void block_comment() {
    size_t i = pos_ + 2;
    while (i < in_.size() && !(in_[i] == '*' && at(i + 1) == '/'))
      ++i;
    i = std::min(in_.size(), i + 2);
    blank(pos_, i);
    pos_ = i;
  }

  void header() {
    const char close = in_[pos_] == '<' ? '>' : '"';
    size_t i = pos_ + 1;
    while (i < in_.size() && in_[i] != close && in_[i] != '\n')
      ++i;
    if (i < in_.size() && in_[i] == close) ++i;
    push(TokenKind::header_name, pos_, i);
    pos_ = i;
    directive_ = DirectiveState::none;
  }

  void identifier() {
    size_t i = pos_;
    while (i < in_.size() && is_ident_char(in_[i]))
      ++i;
    const std::string_view id = in_.substr(pos_, i - pos_);
    const char next = at(i);
    if (next == '"' && is_raw_string_prefix(id)) return raw_string(pos_, i);
    if ((next == '"' || next == '\'') && is_string_prefix(id)) return quoted(pos_, i, next);
    const bool was_expecting = directive_ == DirectiveState::expect_word;
    push(TokenKind::identifier, pos_, i);
    if (was_expecting) {
      directive_ = (id == "include" || id == "include_next" || id == "import")
                       ? DirectiveState::expect_header
                       : DirectiveState::none;
    }
    pos_ = i;
  }

  void number() {
    size_t i = pos_ + 1;
    while (i < in_.size()) {
      const char d = in_[i];
      const char prev = in_[i - 1];
      if (is_ident_char(d) || d == '.') {
        ++i;
      } else if (d == '\'' && is_ident_char(at(i + 1))) {  // digit separator, not a char literal
        i += 2;
      } else if ((d == '+' || d == '-') &&
                 (prev == 'e' || prev == 'E' || prev == 'p' || prev == 'P')) {
        ++i;
      } else {
        break;
      }
    }
    push(TokenKind::number, pos_, i);
    pos_ = i;
  }

  // A "..." or '...' literal whose opening quote is at `quote` (`start` includes any prefix).
  void quoted(size_t start, size_t quote, char delimiter) {
    size_t i = quote + 1;
    std::string value;
    bool closed = false;
    while (i < in_.size()) {
      const char d = in_[i];
      if (d == '\\') {
        value.push_back(d);
        if (i + 1 < in_.size() && in_[i + 1] != '\n') value.push_back(in_[i + 1]);
        i += (i + 1 < in_.size() && in_[i + 1] != '\n') ? 2 : 1;
        continue;
      }
      if (d == '\n') break;  // unterminated: ends at the end of the line
      if (d == delimiter) {
        closed = true;
        break;
      }
      value.push_back(d);
      ++i;
    }
    const size_t end = closed ? i + 1 : i;
    blank(quote + 1, i);
    if (delimiter == '"') {
      out_.strings.push_back(StringLiteral{start, std::move(value)});
      push(TokenKind::string_literal, start, end, static_cast<int>(out_.strings.size() - 1));
    } else {
      push(TokenKind::char_literal, start, end);
    }
    pos_ = end;
  }

  // R"delim( ... )delim"; `quote` is the position of the opening quote.
  void raw_string(size_t start, size_t quote) {
    size_t i = quote + 1;
    std::string delim;
    while (i < in_.size() && in_[i] != '(' && in_[i] != '\n' && delim.size() <= 16)
      delim.push_back(in_[i++]);
    size_t end = i;  // malformed raw string: what we saw is the literal
    std::string value;
    if (at(i) == '(') {
      const std::string closing = ")" + delim + "\"";
      const size_t body = i + 1;
      const size_t found = in_.find(closing, body);
      const size_t body_end = found == std::string_view::npos ? in_.size() : found;
      value.assign(in_.substr(body, body_end - body));
      end = found == std::string_view::npos ? in_.size() : found + closing.size();
    }
    blank(quote + 1, end > quote + 1 ? end - 1 : end);
    out_.strings.push_back(StringLiteral{start, std::move(value)});
    push(TokenKind::string_literal, start, end, static_cast<int>(out_.strings.size() - 1));
    pos_ = end;
  }

  void punct() {
    static constexpr std::string_view kMulti[] = {"<<<", ">>>", "::", "->", "##"};
    for (std::string_view p : kMulti) {
      if (in_.substr(pos_, p.size()) == p) {
        push(TokenKind::punct, pos_, pos_ + p.size());
        pos_ += p.size();
        return;
      }
    }
    push(TokenKind::punct, pos_, pos_ + 1);
    ++pos_;
  }

  enum class DirectiveState { none, expect_word, expect_header };

  std::string in_storage_;
  std::string_view in_;
  LexedSource out_;
  size_t pos_ = 0;
  bool at_line_start_ = true;
  bool in_directive_ = false;
  DirectiveState directive_ = DirectiveState::none;
};

}  // namespace

int LexedSource::line_of(size_t offset) const {
  size_t original = offset;
  if (!origin.empty()) original = offset < origin.size() ? origin[offset] : origin.back() + 1;
  auto it = std::upper_bound(line_starts.begin(), line_starts.end(), original);
  return static_cast<int>(it - line_starts.begin());
}

namespace {

// Links matching brackets with one stack for code and one, reset per line, for directives.
struct BracketStack {
  std::vector<size_t> open;  // token indices
  size_t braces = 0;         // how many of them are '{'
};

void match_brackets(LexedSource& s) {
  BracketStack code, directive;
  auto bracket = [&](size_t token) { return s.code[s.tokens[token].offset]; };
  for (size_t i = 0; i < s.tokens.size(); ++i) {
    Token& t = s.tokens[i];
    if (t.directive_start) directive = BracketStack{};
    if (t.kind != TokenKind::punct || t.length != 1) continue;
    const char c = s.code[t.offset];
    BracketStack& stack = t.in_directive ? directive : code;
    if (c == '(' || c == '[' || c == '{') {
      stack.open.push_back(i);
      if (c == '{') ++stack.braces;
      continue;
    }
    if (c != ')' && c != ']' && c != '}') continue;
    // A brace closes whatever parentheses were left open inside it (unbalanced macro tricks).
    if (c == '}' && stack.braces > 0)
      while (bracket(stack.open.back()) != '{')
        stack.open.pop_back();
    const char open = c == ')' ? '(' : c == ']' ? '[' : '{';
    if (!stack.open.empty() && bracket(stack.open.back()) == open) {
      s.tokens[stack.open.back()].match = i;
      t.match = stack.open.back();
      stack.open.pop_back();
      if (c == '}') --stack.braces;
    }
  }
}

}  // namespace

LexedSource lex_source(std::string_view text) {
  LexedSource s = Lexer(text).run();
  match_brackets(s);
  return s;
}

}  // namespace stitch
