// The documentation index: one SQLite file holding the indexed files (path, content hash, kind),
// their chunks (path, line range, text, optional embedding), an FTS5 table over the chunks (the
// text with identifiers whole, and their camelCase/underscore parts: text_terms.h) and the
// declarations found in headers (declarations.h). Schema in docs/rag.md; reading and writing both
// live here.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rag/chunker.h"
#include "rag/declarations.h"
#include "rag/sqlite_db.h"
#include "util/result.h"

namespace stitch::rag {

inline constexpr int kIndexSchemaVersion = 1;

struct ChunkRecord {
  int64_t id = 0;
  std::string path;
  int line_begin = 0;
  int line_end = 0;
  std::string text;
};

struct RankedChunk {
  int64_t id = 0;
  double score = 0;  // higher is better
};

// A declaration as stored: with the file it was found in.
struct StoredDeclaration {
  std::string path;
  Declaration declaration;
};

struct IndexCounts {
  int64_t files = 0;
  int64_t chunks = 0;
  int64_t embedded_chunks = 0;
  int64_t declarations = 0;
};

// One SQLite connection in serialized mode: the search functions may be called from several
// threads at once.
class DocIndex {
 public:
  enum class Access { read_only, read_write };
  // read_write creates the file (and its folder) and the schema when missing. An index written by
  // another schema version is refused (re-index into a new file, or delete it).
  static Result<std::unique_ptr<DocIndex>> open(const std::filesystem::path& path, Access access);

  const std::filesystem::path& path() const { return db_->path(); }

  // Files.
  Result<std::optional<std::string>> file_hash(std::string_view path) const;
  Result<std::vector<std::string>> file_paths() const;
  // Replaces everything stored for `path` (its chunks, terms, declarations, embeddings).
  Status replace_file(std::string_view path, std::string_view hash, std::string_view kind,
                      const std::vector<Chunk>& chunks,
                      const std::vector<Declaration>& declarations);
  Status remove_file(std::string_view path);
  Status begin();
  Status commit();
  Result<IndexCounts> counts() const;

  // Search.
  // The FTS5 query (text_terms.h fts_query) ranked by BM25, best first.
  Result<std::vector<RankedChunk>> bm25(std::string_view fts_query, int limit) const;
  Result<ChunkRecord> chunk(int64_t id) const;
  // The chunk that holds a stored declaration (the first one holding all its lines, else the one
  // holding its first line); nullopt when none.
  Result<std::optional<int64_t>> chunk_holding(const StoredDeclaration& stored) const;

  // Embeddings (cosine similarity; vectors are normalised when stored).
  Result<std::vector<ChunkRecord>> chunks_without_embedding(int limit) const;
  Status set_embedding(int64_t chunk_id, std::span<const float> vector);
  Result<std::vector<RankedChunk>> nearest(std::span<const float> query, int limit) const;
  Result<std::optional<std::string>> meta(std::string_view key) const;
  Status set_meta(std::string_view key, std::string_view value);

  // Declarations.
  Result<std::vector<StoredDeclaration>> declarations_named(std::string_view name) const;
  // Every distinct declared name (read once, then kept; not for concurrent first calls — the
  // search functions never call it, find_declaration does).
  Result<const std::vector<std::string>*> declaration_names() const;

 private:
  explicit DocIndex(std::unique_ptr<Database> db) : db_(std::move(db)) {}
  Status create_schema();
  Status check_schema() const;

  std::unique_ptr<Database> db_;
  mutable std::optional<std::vector<std::string>> names_;
};

}  // namespace stitch::rag
