// local_header_closure: a worklist over quoted #include lines.
#include "adapters/header_closure.h"

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>

#include "util/fs.h"

namespace stitch::adapters {

namespace {

namespace fs = std::filesystem;

// The quoted includes of `text`, in order. Line-based: an include inside a block comment or a
// disabled #if branch is followed too, which at worst copies a header that is not needed.
std::vector<std::string> quoted_includes(const std::string& text) {
  static const std::regex pattern(R"(^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\")");
  std::vector<std::string> found;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    std::smatch m;
    const std::string line = text.substr(begin, end - begin);
    if (std::regex_search(line, m, pattern)) found.push_back(m[1].str());
    begin = end + 1;
  }
  return found;
}

bool is_file(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

// `path` normalised; nullopt when it climbs above its root ("../x").
std::optional<fs::path> contained(const fs::path& path) {
  fs::path normal = path.lexically_normal();
  if (normal.empty() || normal.is_absolute() || *normal.begin() == "..") return std::nullopt;
  return normal;
}

struct Pending {
  fs::path file;          // canonical
  fs::path relative_dir;  // its directory relative to best/include ("" for sources)
};

}  // namespace

Result<std::vector<LocalHeader>> local_header_closure(const std::vector<fs::path>& sources,
                                                      const std::vector<fs::path>& include_dirs) {
  std::map<fs::path, fs::path> placed;  // relative -> file
  std::set<std::pair<fs::path, fs::path>> visited;
  std::deque<Pending> work;
  for (const fs::path& source : sources) {
    std::error_code ec;
    fs::path file = fs::weakly_canonical(source, ec);
    if (ec || !is_file(file)) return make_error("{}: not a readable source file", source.string());
    work.push_back({file, fs::path()});
  }
  while (!work.empty()) {
    Pending current = work.front();
    work.pop_front();
    STITCH_ASSIGN_OR_RETURN(std::string text, read_file(current.file));
    for (const std::string& include : quoted_includes(text)) {
      const fs::path spelled(include);
      if (spelled.is_absolute())
        return make_error("{}: #include \"{}\" is an absolute path; best/ could not carry it",
                          current.file.string(), include);
      fs::path found;
      std::optional<fs::path> relative;
      if (is_file(current.file.parent_path() / spelled)) {
        found = current.file.parent_path() / spelled;
        relative = contained(current.relative_dir / spelled);
      } else {
        for (const fs::path& dir : include_dirs) {
          if (is_file(dir / spelled)) {
            found = dir / spelled;
            relative = contained(spelled);
            break;
          }
        }
      }
      if (found.empty()) continue;  // the compiler's own search paths (toolkit, system)
      if (!relative)
        return make_error("{}: #include \"{}\" climbs out of the include tree best/ would copy",
                          current.file.string(), include);
      std::error_code ec;
      found = fs::weakly_canonical(found, ec);
      if (ec) return make_error("{}: {}", found.string(), ec.message());
      auto [it, inserted] = placed.emplace(*relative, found);
      if (!inserted && it->second != found)
        return make_error("include/{} would hold both {} and {}", relative->string(),
                          it->second.string(), found.string());
      if (visited.insert({found, relative->parent_path()}).second)
        work.push_back({found, relative->parent_path()});
    }
  }
  std::vector<LocalHeader> headers;
  for (const auto& [relative, file] : placed)
    headers.push_back({file, relative});
  return headers;
}

}  // namespace stitch::adapters
