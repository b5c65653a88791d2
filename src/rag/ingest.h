// What goes into the documentation index and how it is brought up to date: the CUDA toolkit's
// headers (runtime, cuBLAS/cuBLASLt, cuDNN, CUPTI, cuRAND, CUTLASS/CuTe where present), the
// project's kernels/ headers and any folders of HTML, Markdown or text a user names. Re-indexing is
// incremental by content hash: unchanged files are skipped, changed ones replaced, files gone from
// disk removed, and a file whose content is already indexed under another name (cudnn_v9.h is
// cudnn.h) is skipped as a duplicate.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "rag/chunker.h"
#include "rag/doc_index.h"
#include "util/enum_names.h"
#include "util/result.h"

namespace stitch::rag {

enum class SourceKind : uint8_t { header, html, markdown, text };
inline constexpr std::array<std::string_view, 4> kSourceKindNames = {"header", "html", "markdown",
                                                                     "text"};
constexpr const auto& enum_names(SourceKind) {
  return kSourceKindNames;
}
static_assert(names_every_enumerator(SourceKind::text));

// The kind of a file by its extension; nullopt for files the index does not take.
std::optional<SourceKind> source_kind(const std::filesystem::path& path);

// The toolkit files and folders worth indexing under a CUDA include folder (those that exist):
// cuda_runtime_api.h, cuda_runtime.h, driver_types.h, library_types.h, vector_types.h, cublas*,
// cudnn*, cupti*, curand*, the cutlass/ and cute/ folders, and ../extras/CUPTI/include.
std::vector<std::filesystem::path> toolkit_sources(const std::filesystem::path& cuda_include_dir);

// Every indexable file under `roots` (a root may be a file), sorted, each once.
std::vector<std::filesystem::path> collect_files(const std::vector<std::filesystem::path>& roots);

// 64-bit FNV-1a of the content, in hex: the change detector (not a security boundary).
std::string content_hash(std::string_view content);

struct IndexStats {
  int files = 0;  // files considered
  int added = 0;
  int updated = 0;
  int unchanged = 0;
  int duplicates = 0;  // same content as a file indexed before it
  int removed = 0;     // in the index but gone from disk
  int64_t chunks = 0;  // chunks written this time
  double seconds = 0;
};

struct IngestOptions {
  ChunkOptions chunking;
  std::function<void(const std::string&)> progress;  // one line per notable step; may be empty
};

// Brings `index` up to date with `files` (collect_files' output), in one transaction.
Result<IndexStats> ingest_files(DocIndex& index, const std::vector<std::filesystem::path>& files,
                                const IngestOptions& options = {});

}  // namespace stitch::rag
