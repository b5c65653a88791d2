// BuildCache: key computation (SHA-256 over the build's inputs), lookup, and atomic entry creation.
#include "verify/build/build_cache.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "util/fs.h"
#include "verify/build/build_failure.h"
#include "verify/checks/include_policy.h"  // path_inside

namespace stitch {
namespace {

constexpr std::string_view kKeyFormat = "stitch-build-cache 1";
constexpr size_t kMaxLocalIncludes = 256;

std::string output_file_name(OutputKind kind) {
  return kind == OutputKind::shared_library ? "program.so" : "program";
}

// Appends one named, length-prefixed field, so no two different inputs serialise alike.
void add_field(std::string& material, std::string_view name, std::string_view value) {
  material += fmt::format("{} {}\n", name, value.size());
  material += value;
  material += '\n';
}

bool process_alive(pid_t pid) {
  return ::kill(pid, 0) == 0 || errno == EPERM;
}

// Flushes a file the compiler wrote to disk, so a renamed entry never holds a library that a crash
// of the machine could truncate.
void fsync_file(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

std::filesystem::path default_build_cache_dir() {
  namespace fs = std::filesystem;
  if (const char* dir = std::getenv("STITCH_BUILD_CACHE")) return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME")) return fs::path(xdg) / "stitchcuda" / "builds";
  if (const char* home = std::getenv("HOME")) return fs::path(home) / ".cache" / "stitchcuda" / "builds";
  return fs::temp_directory_path() / "stitchcuda-builds";
}

Result<BuildResult> build_maybe_cached(Compiler& compiler, const BuildRequest& request,
                                       const std::filesystem::path& cache_dir,
                                       const std::string& worker_id) {
  if (cache_dir.empty()) {
    STITCH_ASSIGN_OR_RETURN(BuildResult result, compiler.build(request));
    STITCH_TRY(check_machine_build_failure(result));
    return result;
  }
  STITCH_ASSIGN_OR_RETURN(BuildCache cache, BuildCache::open(cache_dir, worker_id, compiler));
  return cache.build(request);
}

std::string sha256_hex(std::string_view data) {
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> context(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr);
  EVP_DigestUpdate(context.get(), data.data(), data.size());
  EVP_DigestFinal_ex(context.get(), digest, &length);
  std::string hex;
  for (unsigned int i = 0; i < length; ++i)
    hex += fmt::format("{:02x}", digest[i]);
  return hex;
}

std::vector<std::filesystem::path> local_includes(
    const std::filesystem::path& source, const std::vector<std::filesystem::path>& include_dirs) {
  static const std::regex include_line(R"re(^\s*#\s*include\s*"([^"]+)")re");
  std::vector<std::filesystem::path> found;
  std::set<std::filesystem::path> visited;
  std::vector<std::filesystem::path> pending = {std::filesystem::absolute(source)};
  std::vector<std::filesystem::path> roots;
  for (const auto& dir : include_dirs) {
    std::error_code ec;
    roots.push_back(std::filesystem::weakly_canonical(std::filesystem::absolute(dir), ec));
  }
  {
    std::error_code ec;
    roots.push_back(std::filesystem::weakly_canonical(pending.front().parent_path(), ec));
  }
  while (!pending.empty() && found.size() < kMaxLocalIncludes) {
    std::filesystem::path file = pending.back();
    pending.pop_back();
    auto contents = read_file(file);
    if (!contents.ok()) continue;
    std::vector<std::filesystem::path> here;
    std::istringstream lines(*contents);
    std::string line;
    std::smatch m;
    while (std::getline(lines, line)) {
      if (!std::regex_search(line, m, include_line)) continue;
      // Only headers inside the source's folder or an include folder: an absolute path, or one
      // that climbs or links out of them, is the include check's to refuse (include_policy.h),
      // never a header to read.
      const std::filesystem::path written = m[1].str();
      if (written.is_absolute()) continue;
      std::vector<std::filesystem::path> dirs = {file.parent_path()};
      dirs.insert(dirs.end(), include_dirs.begin(), include_dirs.end());
      for (const auto& dir : dirs) {
        const std::filesystem::path candidate = dir / written;
        std::error_code ec;
        if (!std::filesystem::is_regular_file(candidate, ec)) continue;
        std::filesystem::path resolved = std::filesystem::weakly_canonical(candidate, ec);
        if (!path_inside(resolved, roots)) continue;
        if (visited.insert(resolved).second) {
          found.push_back(resolved);
          here.push_back(resolved);
        }
        break;
      }
    }
    // Depth-first in include order, so the list (and the key) does not depend on set ordering.
    pending.insert(pending.end(), here.rbegin(), here.rend());
  }
  return found;
}

Result<BuildCache> BuildCache::open(const std::filesystem::path& root, const std::string& worker_id,
                                    Compiler& compiler) {
  if (worker_id.empty() || worker_id == "entries" ||
      worker_id.find_first_of("/\\") != std::string::npos || worker_id[0] == '.')
    return make_error("build cache: invalid worker id '{}'", worker_id);
  std::filesystem::path absolute_root = std::filesystem::absolute(root);
  STITCH_TRY(make_dirs(absolute_root / "entries"));
  STITCH_TRY(make_dirs(absolute_root / worker_id));
  BuildCache cache(absolute_root, absolute_root / worker_id, compiler);
  STITCH_TRY(cache.remove_abandoned_builds());
  return cache;
}

Status BuildCache::remove_abandoned_builds() {
  static const std::regex name(R"(build-[0-9a-f]+-(\d+)-\d+)");
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(worker_dir_, ec)) {
    std::smatch m;
    std::string file_name = entry.path().filename().string();
    if (!std::regex_match(file_name, m, name)) continue;
    if (process_alive(static_cast<pid_t>(std::stoll(m[1])))) continue;
    std::filesystem::remove_all(entry.path(), ec);
  }
  if (ec) return make_error("{}: cannot list: {}", worker_dir_.string(), ec.message());
  return {};
}

std::filesystem::path BuildCache::entry_dir(const std::string& key) const {
  return root_ / "entries" / key;
}

Result<std::string> BuildCache::key_for(const BuildRequest& request) {
  if (request.sources.empty()) return make_error("build request has no sources");
  STITCH_ASSIGN_OR_RETURN(std::string identity, compiler_->identity());
  std::vector<std::filesystem::path> search_dirs = request.include_dirs;
  for (const auto& dir : compiler_->include_dirs())
    search_dirs.push_back(dir);

  std::string material(kKeyFormat);
  material += '\n';
  add_field(material, "compiler", identity);
  add_field(material, "arch", request.arch);
  add_field(material, "kind", output_kind_name(request.output_kind));
  for (const auto& flag : request.extra_flags)
    add_field(material, "flag", flag);
  for (const auto& library : request.libraries)
    add_field(material, "library", library);
  // Contents and file names, not directories: the same program in another attempt directory is
  // the same build. (File names matter: they appear in diagnostics and __FILE__.)
  for (const auto& source : request.sources) {
    auto contents = read_file(source);
    if (!contents.ok()) return contents.error().with_context("build cache key");
    add_field(material, "source", source.filename().string());
    add_field(material, "contents", *contents);
    for (const auto& header : local_includes(source, search_dirs)) {
      auto header_contents = read_file(header);
      if (!header_contents.ok()) continue;
      add_field(material, "header", header.filename().string());
      add_field(material, "contents", *header_contents);
    }
  }
  return sha256_hex(material);
}

std::optional<BuildResult> BuildCache::lookup(const std::string& key) const {
  std::filesystem::path dir = entry_dir(key);
  auto text = read_file(dir / "build.json");
  if (!text.ok()) return std::nullopt;
  nlohmann::json json = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.contains("result")) return std::nullopt;
  auto result = build_result_from_json(json["result"]);
  if (!result.ok()) return std::nullopt;
  if (result->ok) {
    result->library_path = dir / result->library_path.filename();
    std::error_code ec;
    if (!std::filesystem::is_regular_file(result->library_path, ec)) return std::nullopt;
  }
  result->cache_hit = true;
  return std::move(result).value();
}

Result<BuildResult> BuildCache::build(const BuildRequest& request) {
  STITCH_ASSIGN_OR_RETURN(std::string key, key_for(request));
  std::vector<std::string> sources;
  for (const auto& source : request.sources)
    sources.push_back(std::filesystem::absolute(source).string());

  if (auto hit = lookup(key)) {
    // Diagnostics name the sources as they were when the entry was built; name today's instead.
    auto text = read_file(entry_dir(key) / "build.json");
    auto stored =
        nlohmann::json::parse(*text, nullptr, false).value("sources", std::vector<std::string>{});
    for (Diagnostic& d : hit->diagnostics)
      for (size_t i = 0; i < stored.size() && i < sources.size(); ++i)
        if (d.file == stored[i]) d.file = sources[i];
    return std::move(*hit);
  }

  std::filesystem::path build_dir =
      worker_dir_ / fmt::format("build-{}-{}-{}", key.substr(0, 16), ::getpid(), builds_started_++);
  std::error_code ec;
  std::filesystem::remove_all(build_dir, ec);
  STITCH_TRY(make_dirs(build_dir));
  BuildRequest staged = request;
  staged.output_path = build_dir / output_file_name(request.output_kind);
  auto built = compiler_->build(staged);
  if (!built.ok()) {
    std::filesystem::remove_all(build_dir, ec);
    return built.error();
  }
  BuildResult result = std::move(built).value();
  if (Status machine = check_machine_build_failure(result); !machine.ok()) {
    std::filesystem::remove_all(build_dir, ec);
    return machine.error();  // says nothing about the source: not cached
  }
  if (!result.reproducible) {
    std::filesystem::remove_all(build_dir, ec);
    result.library_path.clear();
    result.ok = false;
    return result;
  }

  BuildResult stored = result;
  stored.library_path = result.ok ? staged.output_path.filename() : std::filesystem::path();
  nlohmann::json record = {
      {"key", key}, {"sources", sources}, {"result", build_result_to_json(stored)}};
  if (result.ok) fsync_file(staged.output_path);
  auto written = write_file_atomic(build_dir / "build.json", record.dump(2));
  if (!written.ok()) {
    std::filesystem::remove_all(build_dir, ec);
    return written.error().with_context("build cache");
  }
  std::filesystem::path entry = entry_dir(key);
  if (::rename(build_dir.c_str(), entry.c_str()) != 0) {
    int saved = errno;
    // Another worker stored the same key first (the target exists and is not empty): use theirs.
    std::filesystem::remove_all(build_dir, ec);
    if (auto existing = lookup(key)) {
      existing->cache_hit = false;  // this call did compile
      return std::move(*existing);
    }
    return make_error("build cache: cannot store {}: {}", entry.string(), std::strerror(saved));
  }
  if (result.ok) result.library_path = entry / staged.output_path.filename();
  return result;
}

}  // namespace stitch
