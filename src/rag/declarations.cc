// Line-level declaration heuristics (declarations.h).
#include "rag/declarations.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>

#include "rag/text_terms.h"
#include "util/text.h"

namespace stitch::rag {
namespace {

bool ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '_';
}
bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

constexpr std::array<std::string_view, 22> kNotFunctions = {
    "if",         "while",    "for",       "switch",           "return",        "sizeof",
    "defined",    "decltype", "alignof",   "alignas",          "static_assert", "__attribute__",
    "__declspec", "catch",    "noexcept",  "operator",         "throw",         "new",
    "delete",     "void",     "__align__", "__launch_bounds__"};

constexpr std::array<std::string_view, 9> kStatementWords = {
    "return", "else", "case", "new", "delete", "throw", "goto", "using", "typedef"};

bool listed(std::string_view word, auto const& list) {
  return std::find(list.begin(), list.end(), word) != list.end();
}

bool has_word(std::string_view text, std::string_view word) {
  for (size_t at = text.find(word); at != std::string_view::npos; at = text.find(word, at + 1)) {
    bool left = at == 0 || !ident_char(text[at - 1]);
    bool right = at + word.size() >= text.size() || !ident_char(text[at + word.size()]);
    if (left && right) return true;
  }
  return false;
}

std::string_view first_word(std::string_view text) {
  size_t end = 0;
  while (end < text.size() && ident_char(text[end]))
    ++end;
  return text.substr(0, end);
}

// The line without comments; `in_block` carries a /* ... */ across lines.
std::string strip_comments(std::string_view line, bool& in_block) {
  std::string code;
  for (size_t i = 0; i < line.size(); ++i) {
    if (in_block) {
      if (line.compare(i, 2, "*/") == 0) {
        in_block = false;
        ++i;
      }
    } else if (line.compare(i, 2, "/*") == 0) {
      in_block = true;
      ++i;
    } else if (line.compare(i, 2, "//") == 0) {
      break;
    } else {
      code += line[i];
    }
  }
  return code;
}

// The first `name (` in `code` that is not a keyword: the position of name, or npos.
size_t find_call(std::string_view code, std::string_view& name) {
  size_t i = 0;
  while (i < code.size()) {
    if (!ident_start(code[i]) || (i > 0 && ident_char(code[i - 1]))) {
      ++i;
      continue;
    }
    size_t start = i;
    while (i < code.size() && ident_char(code[i]))
      ++i;
    size_t j = i;
    while (j < code.size() && code[j] == ' ')
      ++j;
    std::string_view word = code.substr(start, i - start);
    if (j < code.size() && code[j] == '(' && !listed(word, kNotFunctions)) {
      name = word;
      return start;
    }
  }
  return std::string_view::npos;
}

// What may precede a prototype's name on its line: return type and qualifier macros only.
bool prototype_prefix(std::string_view pre) {
  if (pre.empty() || pre.find_first_of("=();{},.\"?+-/!|") != std::string_view::npos) return false;
  if (listed(first_word(pre), kStatementWords)) return false;
  char last = pre.back();
  return ident_char(last) || last == '*' || last == '&' || last == '>';
}

struct OpenBlock {
  int start_line = 0;  // 0-based
  int depth = 0;       // depth outside the block
  bool is_typedef = false;
  bool is_enum = false;
  std::string name;  // struct/class/union/enum NAME {
};

class Scanner {
 public:
  explicit Scanner(std::string_view text) : lines_(lines_of(text)) {
    bool in_block = false;
    for (std::string_view line : lines_)
      code_.push_back(strip_comments(line, in_block));
  }

  std::vector<Declaration> run() {
    for (int i = 0; i < static_cast<int>(lines_.size()); ++i)
      scan_line(i);
    return std::move(out_);
  }

 private:
  void add(std::string_view name, DeclarationKind kind, int first, int last) {
    Declaration d;
    d.name = std::string(name);
    d.kind = kind;
    d.line_begin = first + 1;
    d.line_end = last + 1;
    for (int i = first; i <= last && i < first + kDeclarationMaxLines; ++i) {
      d.text += lines_[static_cast<size_t>(i)];
      d.text += '\n';
    }
    out_.push_back(std::move(d));
  }

  bool in_enum() const { return !blocks_.empty() && blocks_.back().is_enum; }

  void scan_line(int i) {
    std::string_view t = trim(code_[static_cast<size_t>(i)]);
    if (t.empty()) return;
    if (t.front() == '#') {
      scan_preprocessor(i, t);
      previous_end_ = '#';
      return;
    }
    if (i > skip_until_) {
      if (in_enum())
        scan_enumerator(i, t);
      else
        scan_prototype(i, t);
      scan_typedef_line(i, t);
    }
    track_braces(i, t);
    previous_end_ = t.back();
  }

  void scan_preprocessor(int i, std::string_view t) {
    std::string_view rest = trim(t.substr(1));
    if (rest.substr(0, 6) != "define") return;
    rest = trim(rest.substr(6));
    std::string_view name = first_word(rest);
    if (name.empty()) return;
    int last = i;
    while (last + 1 < static_cast<int>(lines_.size()) &&
           !trim(lines_[static_cast<size_t>(last)]).empty() &&
           trim(lines_[static_cast<size_t>(last)]).back() == '\\')
      ++last;
    add(name, DeclarationKind::macro, i, last);
  }

  void scan_enumerator(int i, std::string_view t) {
    std::string_view name = first_word(t);
    if (name.empty() || !ident_start(name.front())) return;
    std::string_view rest = trim(t.substr(name.size()));
    if (rest.empty() || rest.front() == '=' || rest.front() == ',')
      add(name, DeclarationKind::enumerator, i, i);
  }

  void scan_prototype(int i, std::string_view t) {
    std::string_view name;
    size_t at = find_call(t, name);
    if (at == std::string_view::npos) return;
    std::string_view pre = trim(t.substr(0, at));
    int first = i;
    if (pre.empty()) {
      // The return type on the line before ("cudaError_t CUDARTAPI" / "name(").
      if (!(ident_char(previous_end_) || previous_end_ == '*' || previous_end_ == '&')) return;
      first = previous_line_;
    } else if (!prototype_prefix(pre)) {
      return;
    }
    int last = prototype_end(i, at);
    if (last < 0) return;
    add(name, DeclarationKind::function, first, last);
    skip_until_ = last;
  }

  // The line of the `;` or `{` that ends the prototype whose name is at (line, column).
  int prototype_end(int line, size_t column) const {
    int parens = 0;
    bool opened = false;
    int limit = std::min<int>(static_cast<int>(lines_.size()), line + kDeclarationMaxLines);
    for (int i = line; i < limit; ++i) {
      std::string_view code = code_[static_cast<size_t>(i)];
      for (size_t c = i == line ? column : 0; c < code.size(); ++c) {
        char ch = code[c];
        if (ch == '(') {
          ++parens;
          opened = true;
        } else if (ch == ')') {
          --parens;
        } else if (opened && parens == 0 && (ch == ';' || ch == '{')) {
          return i;
        } else if (opened && parens == 0 && (ch == '=' || ch == ',')) {
          return -1;  // an initialiser or an expression, not a prototype
        }
      }
    }
    return -1;
  }

  void scan_typedef_line(int i, std::string_view t) {
    if (first_word(t) != "typedef" || t.find('{') != std::string_view::npos) return;
    if (t.back() != ';') return;
    size_t pointer = t.find("(*");
    std::string_view name;
    if (pointer != std::string_view::npos) {
      name = first_word(trim(t.substr(pointer + 2)));
    } else {
      std::string_view body = trim(t.substr(0, t.size() - 1));
      size_t end = body.size();
      while (end > 0 && body[end - 1] == ']')
        end = body.rfind('[', end - 1);
      size_t start = end;
      while (start > 0 && ident_char(body[start - 1]))
        --start;
      name = body.substr(start, end - start);
    }
    if (!name.empty() && ident_start(name.front())) add(name, DeclarationKind::type, i, i);
  }

  void open_block(int i, std::string_view t) {
    OpenBlock block;
    block.start_line = pending_start_ >= 0 ? pending_start_ : i;
    block.depth = depth_;
    block.is_typedef = pending_typedef_;
    block.is_enum = pending_enum_;
    block.name = pending_name_;
    blocks_.push_back(block);
    pending_start_ = -1;
    pending_typedef_ = pending_enum_ = false;
    pending_name_.clear();
  }

  void close_block(int i, std::string_view after) {
    OpenBlock block = blocks_.back();
    blocks_.pop_back();
    std::string_view closing = first_word(trim(after));
    std::string_view name = block.is_typedef && !closing.empty() ? closing : block.name;
    if (!name.empty()) add(name, DeclarationKind::type, block.start_line, i);
  }

  void note_type_head(int i, std::string_view t) {
    std::string_view rest = t;
    if (first_word(rest) == "typedef") {
      pending_typedef_ = true;
      rest = trim(rest.substr(7));
    }
    std::string_view keyword = first_word(rest);
    if (keyword == "struct" || keyword == "class" || keyword == "union" || keyword == "enum") {
      pending_enum_ = keyword == "enum";
      rest = trim(rest.substr(keyword.size()));
      if (first_word(rest) == "class" || first_word(rest) == "struct")
        rest = trim(rest.substr(first_word(rest).size()));
      // Skip attribute macros (enum __device_builtin__ cudaError): the name is the last word
      // before '{', ':' or the end of the line.
      std::string_view head = rest.substr(0, rest.find_first_of("{:;"));
      std::string_view word;
      for (std::string_view w : split_words(head))
        word = w;
      pending_name_ = std::string(word);
      pending_start_ = i;
    } else if (pending_typedef_) {
      pending_start_ = i;
    }
  }

  static std::vector<std::string_view> split_words(std::string_view text) {
    std::vector<std::string_view> words;
    size_t i = 0;
    while (i < text.size()) {
      while (i < text.size() && !ident_char(text[i]))
        ++i;
      size_t start = i;
      while (i < text.size() && ident_char(text[i]))
        ++i;
      if (i > start) words.push_back(text.substr(start, i - start));
    }
    return words;
  }

  void track_braces(int i, std::string_view t) {
    if (has_word(t, "typedef") || has_word(t, "struct") || has_word(t, "class") ||
        has_word(t, "union") || has_word(t, "enum"))
      note_type_head(i, t);
    for (size_t c = 0; c < t.size(); ++c) {
      if (t[c] == '{') {
        open_block(i, t);
        ++depth_;
      } else if (t[c] == '}') {
        --depth_;
        if (!blocks_.empty()) close_block(i, t.substr(c + 1));
      } else if (t[c] == ';' && blocks_.empty()) {
        pending_start_ = -1;
        pending_typedef_ = pending_enum_ = false;
        pending_name_.clear();
      }
    }
    previous_line_ = i;
  }

  std::vector<std::string_view> lines_;
  std::vector<std::string> code_;
  std::vector<Declaration> out_;
  std::vector<OpenBlock> blocks_;
  int depth_ = 0;
  int skip_until_ = -1;
  int previous_line_ = 0;
  char previous_end_ = ';';
  int pending_start_ = -1;
  bool pending_typedef_ = false;
  bool pending_enum_ = false;
  std::string pending_name_;
};

}  // namespace

std::vector<Declaration> extract_declarations(std::string_view header_text) {
  return Scanner(header_text).run();
}

}  // namespace stitch::rag
