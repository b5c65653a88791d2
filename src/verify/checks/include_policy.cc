// The directive scan of include_policy.h: the lexer's tokens (so comments and strings neither hide
// nor fake a directive), each file-naming construct resolved the way the compiler would search for
// it, and the program's own quoted headers followed.
#include "verify/checks/include_policy.h"

#include <cstdlib>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "util/fs.h"
#include "verify/checks/source_lexer.h"
#include "verify/checks/source_tokens.h"

namespace stitch {
namespace {

namespace fs = std::filesystem;
using namespace source_detail;

constexpr size_t kMaxFollowedHeaders = 256;  // bounds the walk over a hostile program's headers

fs::path canonical_or_normal(const fs::path& path) {
  std::error_code ec;
  fs::path resolved = fs::weakly_canonical(fs::absolute(path, ec), ec);
  return ec ? fs::absolute(path).lexically_normal() : resolved;
}

std::vector<fs::path> canonical_dirs(const std::vector<fs::path>& dirs) {
  std::vector<fs::path> out;
  for (const fs::path& dir : dirs)
    if (!dir.empty()) out.push_back(canonical_or_normal(dir));
  return out;
}

struct Roots {
  std::vector<fs::path> search, program, project, system, all;
};

// Where a file-naming directive leads, or why it is refused.
struct Resolution {
  std::string refusal;             // empty: allowed
  std::optional<fs::path> follow;  // a header of the program's own to scan as well
};

Resolution resolve(const fs::path& includer_dir, std::string_view written, bool quoted,
                   const Roots& roots) {
  Resolution out;
  const fs::path path{std::string(written)};
  if (written.empty()) return out;
  if (path.is_absolute() || written.front() == '/') {
    out.refusal =
        "names an absolute path; only the program's own, the project's, the CUDA "
        "toolkit's and the system's header folders may be read";
    return out;
  }
  bool climbs = false;
  for (const fs::path& part : path)
    climbs = climbs || part == "..";
  // The compiler opens the first folder's file that exists; so does this check. A path found in
  // none is a compile error and reads nothing. (`..` past the root stays at the root, so a path
  // that climbs to /etc from a deep system folder exists from /usr/include too.)
  std::vector<fs::path> searched;
  if (quoted) searched.push_back(includer_dir);
  for (const auto* list : {&roots.search, &roots.program, &roots.project, &roots.system})
    searched.insert(searched.end(), list->begin(), list->end());
  for (const fs::path& dir : searched) {
    std::error_code ec;
    const fs::path candidate = dir / path;
    if (!fs::exists(candidate, ec)) continue;
    if (!path_inside(candidate, roots.all)) {
      std::error_code link_ec;
      out.refusal = climbs ? "climbs with '..' to a file outside the folders a program may read"
                    : fs::is_symlink(candidate, link_ec)
                        ? "resolves through a symbolic link to a file outside the folders a "
                          "program may read"
                        : "names a file outside the folders a program may read";
      return out;
    }
    if (quoted && fs::is_regular_file(candidate, ec) && path_inside(candidate, roots.program) &&
        !path_inside(candidate, roots.project))
      out.follow = canonical_or_normal(candidate);
    return out;
  }
  return out;
}

// `directive` followed by a quoted file name (escapes as written in the source: `\"`, `\t`), so
// printf(".incbin is an assembler directive") is not one.
bool names_a_file(std::string_view text, std::string_view directive) {
  for (size_t at = text.find(directive); at != std::string_view::npos;
       at = text.find(directive, at + 1)) {
    size_t k = at + directive.size();
    while (k < text.size() && (text[k] == ' ' || text[k] == '\t' ||
                               (text[k] == '\\' && k + 1 < text.size() && text[k + 1] == 't')))
      k += text[k] == '\\' ? 2 : 1;
    if (k < text.size() && (text[k] == '"' || text[k] == '\\')) return true;
  }
  return false;
}

class DirectiveScan {
 public:
  DirectiveScan(const fs::path& path, std::string shown, std::string_view text, const Roots& roots,
                std::vector<HackFinding>& findings)
      : shown_(std::move(shown)),
        lexed_(lex_source(text)),
        t_(lexed_),
        dir_(canonical_or_normal(path).parent_path()),
        roots_(roots),
        findings_(findings) {}

  // Headers of the program's own that the scanned file includes.
  std::vector<fs::path> run() {
    for (size_t i = 0; i < t_.size(); ++i) {
      if (lexed_.tokens[i].directive_start) directive(i);
      if (t_.ident(i)) identifier(i);
      // S(.incbin "/etc/passwd") with #define S(x) #x: the directive as code tokens.
      if (t_.is(i, ".") && t_.adjacent(i) && t_.ident(i + 1) &&
          in_list(t_.text(i + 1), {"incbin", "include"}) && i + 2 < t_.size() &&
          t_.kind(i + 2) == TokenKind::string_literal)
        refuse(i, "." + std::string(t_.text(i + 1)),
               "an assembler directive that reads a file at build time");
    }
    assembler_strings();
    return follow_;
  }

 private:
  void refuse(size_t token, std::string_view directive, std::string_view why) {
    findings_.push_back(
        HackFinding{HackKind::reads_answer,
                    fmt::format("{}:{}: {}: {} (refused before compiling)", shown_,
                                lexed_.line_of(lexed_.tokens[token].offset), directive, why),
                    true});
  }

  void check_path(size_t token, const std::string& shown, std::string_view written, bool quoted) {
    Resolution r = resolve(dir_, written, quoted, roots_);
    if (!r.refusal.empty()) return refuse(token, shown, r.refusal);
    if (r.follow) follow_.push_back(*r.follow);
  }

  void directive(size_t hash) {
    if (!t_.ident(hash + 1)) return;
    const std::string_view word = t_.text(hash + 1);
    const size_t operand = hash + 2;
    const bool same_line = operand < t_.size() && lexed_.tokens[operand].in_directive &&
                           !lexed_.tokens[operand].directive_start;
    if (in_list(word, {"include", "include_next", "import"})) {
      if (!same_line) return;
      if (t_.kind(operand) != TokenKind::header_name)
        return refuse(hash, fmt::format("#{} {}", word, t_.text(operand)),
                      "names its file through a macro, which cannot be checked before "
                      "compiling; write the header's name");
      const std::string_view header = t_.text(operand);
      const bool quoted = header.front() == '"';
      const std::string_view path =
          header.size() >= 2 ? header.substr(1, header.size() - 2) : std::string_view();
      check_path(hash, fmt::format("#{} {}", word, header), path, quoted);
    } else if (word == "embed") {
      refuse(hash, "#embed", "embeds a file's bytes into the program");
    } else if (word == "pragma") {
      for (size_t k = operand;
           k < t_.size() && lexed_.tokens[k].in_directive && !lexed_.tokens[k].directive_start; ++k)
        if (t_.is(k, "dependency"))
          return refuse(hash, "#pragma GCC dependency", "makes the compiler read another file");
    }
  }

  void identifier(size_t i) {
    const std::string_view name = t_.text(i);
    if (name == "__has_embed") return refuse(i, name, "probes a file for embedding");
    if (name == "_Pragma" && t_.is(i + 1, "(") && i + 2 < t_.size() &&
        t_.kind(i + 2) == TokenKind::string_literal) {
      const std::string& value = lexed_.strings[lexed_.tokens[i + 2].string_index].value;
      if (value.find("dependency") != std::string::npos)
        refuse(i, "_Pragma(\"GCC dependency\")", "makes the compiler read another file");
      return;
    }
    if (name != "__has_include" && name != "__has_include_next") return;
    if (!t_.is(i + 1, "(") || i + 2 >= t_.size()) return;  // #ifdef __has_include
    const size_t arg = i + 2;
    if (t_.kind(arg) == TokenKind::string_literal) {
      const std::string& value = lexed_.strings[lexed_.tokens[arg].string_index].value;
      return check_path(i, fmt::format("{}(\"{}\")", name, value), value, true);
    }
    if (t_.is(arg, "<")) {
      size_t close = arg + 1;
      while (close < t_.size() && close - arg < kAngleScan && !t_.is(close, ">") &&
             !t_.is(close, ")"))
        ++close;
      if (close < t_.size() && t_.is(close, ">") && close > arg + 1) {
        const size_t from = lexed_.tokens[arg + 1].offset;
        const size_t to = lexed_.tokens[close].offset;
        const std::string path = lexed_.code.substr(from, to - from);
        return check_path(i, fmt::format("{}(<{}>)", name, path), path, false);
      }
    }
    refuse(i, fmt::format("{}({}...)", name, t_.text(arg)),
           "names its file through a macro, which cannot be checked before compiling");
  }

  // Adjacent literals are one string to the compiler ("." "incbin"): join each run first.
  void assembler_strings() {
    for (size_t i = 0; i < t_.size(); ++i) {
      if (t_.kind(i) != TokenKind::string_literal) continue;
      std::string joined;
      const size_t first = i;
      for (; i < t_.size() && t_.kind(i) == TokenKind::string_literal; ++i)
        joined += lexed_.strings[lexed_.tokens[i].string_index].value;
      std::string lower;
      for (char c : joined)
        lower.push_back(c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c);
      for (std::string_view directive : {".incbin", ".include"})
        if (names_a_file(lower, directive))
          refuse(first, directive, "an assembler directive that reads a file at build time");
    }
  }

  std::string shown_;
  LexedSource lexed_;
  Tokens t_;
  fs::path dir_;
  const Roots& roots_;
  std::vector<HackFinding>& findings_;
  std::vector<fs::path> follow_;
};

void add_existing(std::vector<fs::path>& dirs, const fs::path& dir) {
  std::error_code ec;
  if (!dir.empty() && fs::is_directory(dir, ec)) dirs.push_back(canonical_or_normal(dir));
}

}  // namespace

bool path_inside(const fs::path& path, const std::vector<fs::path>& dirs) {
  const fs::path resolved = canonical_or_normal(path);
  for (const fs::path& dir : dirs) {
    const fs::path relative = resolved.lexically_relative(dir);
    if (!relative.empty() && *relative.begin() != "..") return true;
  }
  return false;
}

std::vector<fs::path> system_include_dirs(const fs::path& nvcc) {
  std::vector<fs::path> dirs;
  // A toolkit is public text: its whole tree (include/, targets/*/include, nvvm/...) is allowed.
  if (!nvcc.empty()) add_existing(dirs, canonical_or_normal(nvcc).parent_path().parent_path());
  if (const char* home = std::getenv("CUDA_HOME"); home && *home) add_existing(dirs, home);
  add_existing(dirs, "/usr/local/cuda");
  for (const char* dir : {"/usr/include", "/usr/local/include", "/usr/lib/gcc"})
    add_existing(dirs, dir);
  return dirs;
}

std::vector<HackFinding> check_include_directives(
    const std::vector<fs::path>& files, const IncludeRoots& given,
    const std::function<std::string(const fs::path&)>& display) {
  Roots roots{canonical_dirs(given.search),
              canonical_dirs(given.program),
              canonical_dirs(given.project),
              canonical_dirs(given.system),
              {}};
  for (const auto* list : {&roots.program, &roots.project, &roots.system})
    roots.all.insert(roots.all.end(), list->begin(), list->end());
  std::vector<HackFinding> findings;
  std::set<fs::path> scanned;
  for (const fs::path& file : files)
    scanned.insert(canonical_or_normal(file));
  std::vector<fs::path> pending(files.rbegin(), files.rend());
  while (!pending.empty()) {
    const fs::path file = pending.back();
    pending.pop_back();
    auto text = read_file(file);
    if (!text.ok()) continue;
    const std::string shown = display ? display(file) : file.string();
    for (const fs::path& header : DirectiveScan(file, shown, *text, roots, findings).run())
      if (scanned.size() < kMaxFollowedHeaders && scanned.insert(header).second)
        pending.push_back(header);
  }
  return findings;
}

}  // namespace stitch
