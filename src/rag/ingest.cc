// Ingesting files into the documentation index (ingest.h).
#include "rag/ingest.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "rag/html_text.h"
#include "util/fs.h"
#include "util/text.h"

namespace stitch::rag {
namespace fs = std::filesystem;
namespace {

constexpr std::array<std::string_view, 5> kToolkitFiles = {
    "cuda_runtime_api.h", "cuda_runtime.h", "driver_types.h", "library_types.h", "vector_types.h"};
constexpr std::array<std::string_view, 4> kToolkitPrefixes = {"cublas", "cudnn", "cupti", "curand"};
constexpr std::array<std::string_view, 2> kToolkitDirs = {"cutlass", "cute"};

bool starts_with_any(std::string_view name, const auto& prefixes) {
  for (std::string_view prefix : prefixes)
    if (name.substr(0, prefix.size()) == prefix) return true;
  return false;
}

// The text the index stores for a file: HTML without its markup, everything else as it is.
std::string indexable_text(SourceKind kind, std::string content) {
  return kind == SourceKind::html ? html_to_text(content) : content;
}

}  // namespace

std::optional<SourceKind> source_kind(const fs::path& path) {
  std::string ext = lower(path.extension().string());
  if (ext == ".h" || ext == ".hpp" || ext == ".hh" || ext == ".cuh" || ext == ".inl")
    return SourceKind::header;
  if (ext == ".html" || ext == ".htm") return SourceKind::html;
  if (ext == ".md" || ext == ".markdown") return SourceKind::markdown;
  if (ext == ".txt" || ext == ".rst") return SourceKind::text;
  return std::nullopt;
}

std::vector<fs::path> toolkit_sources(const fs::path& cuda_include_dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(cuda_include_dir, ec)) {
    std::string name = entry.path().filename().string();
    bool wanted =
        entry.is_directory(ec)
            ? std::find(kToolkitDirs.begin(), kToolkitDirs.end(), name) != kToolkitDirs.end()
            : std::find(kToolkitFiles.begin(), kToolkitFiles.end(), name) != kToolkitFiles.end() ||
                  (starts_with_any(name, kToolkitPrefixes) &&
                   source_kind(entry.path()) == SourceKind::header);
    if (wanted) out.push_back(entry.path());
  }
  // Where CUPTI ships apart from the main include folder (extras/CUPTI/include).
  fs::path cupti = cuda_include_dir.parent_path() / "extras" / "CUPTI" / "include";
  if (fs::is_directory(cupti, ec)) out.push_back(cupti);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<fs::path> collect_files(const std::vector<fs::path>& roots) {
  std::set<fs::path> files;
  for (const fs::path& root : roots) {
    std::error_code ec;
    fs::path absolute = fs::absolute(root, ec).lexically_normal();
    if (fs::is_regular_file(absolute, ec)) {
      if (source_kind(absolute)) files.insert(absolute);
      continue;
    }
    // An unreadable folder or entry is skipped, not the rest of the walk.
    for (auto it = fs::recursive_directory_iterator(
             absolute, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      std::error_code entry_ec;
      if (it->is_regular_file(entry_ec) && source_kind(it->path())) files.insert(it->path());
    }
  }
  return {files.begin(), files.end()};
}

std::string content_hash(std::string_view content) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : content) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return fmt::format("{:016x}", hash);
}

Result<IndexStats> ingest_files(DocIndex& index, const std::vector<fs::path>& files,
                                const IngestOptions& options) {
  auto started = std::chrono::steady_clock::now();
  IndexStats stats;
  std::unordered_map<std::string, std::string> seen;  // hash → first path with it
  STITCH_TRY(index.begin());
  for (const fs::path& file : files) {
    std::optional<SourceKind> kind = source_kind(file);
    if (!kind) continue;
    ++stats.files;
    STITCH_ASSIGN_OR_RETURN(std::string content, read_file(file));
    const std::string hash = content_hash(content);
    const std::string path = file.string();
    if (auto [first, inserted] = seen.emplace(hash, path); !inserted) {
      ++stats.duplicates;
      STITCH_TRY(index.remove_file(path));
      continue;
    }
    STITCH_ASSIGN_OR_RETURN(std::optional<std::string> stored, index.file_hash(path));
    if (stored && *stored == hash) {
      ++stats.unchanged;
      continue;
    }
    std::string text = indexable_text(*kind, std::move(content));
    std::vector<Chunk> chunks = chunk_lines(text, options.chunking);
    std::vector<Declaration> declarations;
    if (*kind == SourceKind::header) declarations = extract_declarations(text);
    STITCH_TRY(index.replace_file(path, hash, enum_name(*kind), chunks, declarations));
    ++(stored ? stats.updated : stats.added);
    stats.chunks += static_cast<int64_t>(chunks.size());
  }
  STITCH_ASSIGN_OR_RETURN(std::vector<std::string> indexed, index.file_paths());
  for (const std::string& path : indexed) {
    std::error_code ec;
    if (fs::exists(path, ec)) continue;
    STITCH_TRY(index.remove_file(path));
    ++stats.removed;
  }
  STITCH_TRY(index.commit());
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (options.progress)
    options.progress(
        fmt::format("indexed {} files: {} added, {} updated, {} unchanged, {} "
                    "duplicates, {} removed ({} chunks written) in {:.1f} s",
                    stats.files, stats.added, stats.updated, stats.unchanged, stats.duplicates,
                    stats.removed, stats.chunks, stats.seconds));
  return stats;
}

}  // namespace stitch::rag
