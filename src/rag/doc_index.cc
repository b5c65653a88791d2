// The SQLite documentation index (doc_index.h).
#include "rag/doc_index.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <queue>
#include <system_error>

#include <fmt/format.h>

#include "rag/text_terms.h"
#include "util/enum_names.h"

namespace stitch::rag {
namespace {

constexpr std::string_view kSchema = R"sql(
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files(id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL,
                                 hash TEXT NOT NULL, kind TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS chunks(id INTEGER PRIMARY KEY, file_id INTEGER NOT NULL,
                                  line_begin INTEGER NOT NULL, line_end INTEGER NOT NULL,
                                  text TEXT NOT NULL, embedding BLOB);
CREATE INDEX IF NOT EXISTS chunks_by_file ON chunks(file_id);
CREATE VIRTUAL TABLE IF NOT EXISTS chunk_terms USING fts5(body, parts,
    tokenize = "unicode61 tokenchars '_'");
CREATE TABLE IF NOT EXISTS declarations(file_id INTEGER NOT NULL, name TEXT NOT NULL,
                                        kind TEXT NOT NULL, line_begin INTEGER NOT NULL,
                                        line_end INTEGER NOT NULL, text TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS declarations_by_name ON declarations(name);
CREATE INDEX IF NOT EXISTS declarations_by_file ON declarations(file_id);
)sql";

// BM25 column weights: a whole identifier (body) counts twice a part of one (parts).
constexpr std::string_view kBm25 = "bm25(chunk_terms, 2.0, 1.0)";

void normalise(std::vector<float>& v) {
  double norm = 0;
  for (float x : v)
    norm += static_cast<double>(x) * x;
  norm = std::sqrt(norm);
  if (norm > 0)
    for (float& x : v)
      x = static_cast<float>(x / norm);
}

}  // namespace

Result<std::unique_ptr<DocIndex>> DocIndex::open(const std::filesystem::path& path, Access access) {
  if (access == Access::read_only && !std::filesystem::exists(path))
    return make_error(ErrorKind::bad_input,
                      "no documentation index at {}: build one with `stitchcuda rag index`",
                      path.string());
  if (access == Access::read_write && path.has_parent_path()) {
    std::error_code ec;
    std::filesystem::create_directories(path.parent_path(), ec);
    if (ec)
      return make_error(ErrorKind::machine, "cannot create {}: {}", path.parent_path().string(),
                        ec.message());
  }
  STITCH_ASSIGN_OR_RETURN(
      std::unique_ptr<Database> db,
      Database::open(path, access == Access::read_only ? Database::Mode::read_only
                                                       : Database::Mode::read_write));
  std::unique_ptr<DocIndex> index(new DocIndex(std::move(db)));
  if (access == Access::read_write) STITCH_TRY(index->create_schema());
  STITCH_TRY(index->check_schema());
  return index;
}

Status DocIndex::create_schema() {
  if (!sqlite_has_fts5())
    return make_error(ErrorKind::machine,
                      "this SQLite was built without FTS5 (the index needs it)");
  STITCH_TRY(db_->exec(kSchema));
  STITCH_ASSIGN_OR_RETURN(std::optional<std::string> version, meta("schema_version"));
  if (!version) return set_meta("schema_version", std::to_string(kIndexSchemaVersion));
  return {};
}

Status DocIndex::check_schema() const {
  auto version = meta("schema_version");
  if (!version.ok() || !*version)
    return make_error(ErrorKind::bad_input, "{} is not a documentation index", path().string());
  if (**version != std::to_string(kIndexSchemaVersion))
    return make_error(ErrorKind::bad_input,
                      "{} holds index schema {} (this build reads {}): delete it and re-index",
                      path().string(), **version, kIndexSchemaVersion);
  return {};
}

Result<std::optional<std::string>> DocIndex::meta(std::string_view key) const {
  STITCH_ASSIGN_OR_RETURN(Statement s, db_->prepare("SELECT value FROM meta WHERE key = ?"));
  s.bind(1, key);
  STITCH_ASSIGN_OR_RETURN(bool row, s.step());
  if (!row) return std::optional<std::string>();
  return std::optional<std::string>(s.column_text(0));
}

Status DocIndex::set_meta(std::string_view key, std::string_view value) {
  STITCH_ASSIGN_OR_RETURN(Statement s,
                          db_->prepare("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)"));
  s.bind(1, key).bind(2, value);
  return s.run();
}

Result<std::optional<std::string>> DocIndex::file_hash(std::string_view path) const {
  STITCH_ASSIGN_OR_RETURN(Statement s, db_->prepare("SELECT hash FROM files WHERE path = ?"));
  s.bind(1, path);
  STITCH_ASSIGN_OR_RETURN(bool row, s.step());
  if (!row) return std::optional<std::string>();
  return std::optional<std::string>(s.column_text(0));
}

Result<std::vector<std::string>> DocIndex::file_paths() const {
  STITCH_ASSIGN_OR_RETURN(Statement s, db_->prepare("SELECT path FROM files ORDER BY path"));
  std::vector<std::string> paths;
  while (true) {
    STITCH_ASSIGN_OR_RETURN(bool row, s.step());
    if (!row) return paths;
    paths.push_back(s.column_text(0));
  }
}

Status DocIndex::remove_file(std::string_view path) {
  names_.reset();
  for (std::string_view sql :
       {"DELETE FROM chunk_terms WHERE rowid IN (SELECT c.id FROM chunks c JOIN files f ON "
        "c.file_id = f.id WHERE f.path = ?1)",
        "DELETE FROM chunks WHERE file_id IN (SELECT id FROM files WHERE path = ?1)",
        "DELETE FROM declarations WHERE file_id IN (SELECT id FROM files WHERE path = ?1)",
        "DELETE FROM files WHERE path = ?1"}) {
    STITCH_ASSIGN_OR_RETURN(Statement s, db_->prepare(sql));
    s.bind(1, path);
    STITCH_TRY(s.run());
  }
  return {};
}

Status DocIndex::replace_file(std::string_view path, std::string_view hash, std::string_view kind,
                              const std::vector<Chunk>& chunks,
                              const std::vector<Declaration>& declarations) {
  STITCH_TRY(remove_file(path));
  STITCH_ASSIGN_OR_RETURN(Statement file,
                          db_->prepare("INSERT INTO files(path, hash, kind) VALUES (?, ?, ?)"));
  file.bind(1, path).bind(2, hash).bind(3, kind);
  STITCH_TRY(file.run());
  const int64_t file_id = db_->last_insert_rowid();
  STITCH_ASSIGN_OR_RETURN(Statement chunk_insert,
                          db_->prepare("INSERT INTO chunks(file_id, line_begin, line_end, text) "
                                       "VALUES (?, ?, ?, ?)"));
  STITCH_ASSIGN_OR_RETURN(
      Statement terms_insert,
      db_->prepare("INSERT INTO chunk_terms(rowid, body, parts) VALUES (?, ?, ?)"));
  const std::string file_parts =
      split_parts_text(std::filesystem::path(std::string(path)).filename().string());
  for (const Chunk& chunk : chunks) {
    chunk_insert.reset();
    chunk_insert.bind(1, file_id).bind(2, int64_t{chunk.line_begin});
    chunk_insert.bind(3, int64_t{chunk.line_end}).bind(4, chunk.text);
    STITCH_TRY(chunk_insert.run());
    terms_insert.reset();
    terms_insert.bind(1, db_->last_insert_rowid()).bind(2, chunk.text);
    terms_insert.bind(3, file_parts + split_parts_text(chunk.text));
    STITCH_TRY(terms_insert.run());
  }
  STITCH_ASSIGN_OR_RETURN(Statement decl_insert,
                          db_->prepare("INSERT INTO declarations(file_id, name, kind, line_begin, "
                                       "line_end, text) VALUES (?, ?, ?, ?, ?, ?)"));
  for (const Declaration& d : declarations) {
    decl_insert.reset();
    decl_insert.bind(1, file_id).bind(2, d.name).bind(3, enum_name(d.kind));
    decl_insert.bind(4, int64_t{d.line_begin}).bind(5, int64_t{d.line_end}).bind(6, d.text);
    STITCH_TRY(decl_insert.run());
  }
  return {};
}

Status DocIndex::begin() {
  return db_->exec("BEGIN");
}
Status DocIndex::commit() {
  return db_->exec("COMMIT");
}

Result<IndexCounts> DocIndex::counts() const {
  STITCH_ASSIGN_OR_RETURN(
      Statement s,
      db_->prepare("SELECT (SELECT count(*) FROM files), (SELECT count(*) FROM chunks), "
                   "(SELECT count(*) FROM chunks WHERE embedding IS NOT NULL), "
                   "(SELECT count(*) FROM declarations)"));
  STITCH_TRY(s.step());
  return IndexCounts{s.column_int(0), s.column_int(1), s.column_int(2), s.column_int(3)};
}

Result<std::vector<RankedChunk>> DocIndex::bm25(std::string_view fts_query, int limit) const {
  STITCH_ASSIGN_OR_RETURN(Statement s,
                          db_->prepare(fmt::format("SELECT rowid, {} AS r FROM chunk_terms WHERE "
                                                   "chunk_terms MATCH ? ORDER BY r LIMIT ?",
                                                   kBm25)));
  s.bind(1, fts_query).bind(2, int64_t{limit});
  std::vector<RankedChunk> ranked;
  while (true) {
    STITCH_ASSIGN_OR_RETURN(bool row, s.step());
    if (!row) return ranked;
    ranked.push_back({s.column_int(0), -s.column_double(1)});
  }
}

Result<ChunkRecord> DocIndex::chunk(int64_t id) const {
  STITCH_ASSIGN_OR_RETURN(
      Statement s, db_->prepare("SELECT f.path, c.line_begin, c.line_end, c.text FROM chunks c "
                                "JOIN files f ON c.file_id = f.id WHERE c.id = ?"));
  s.bind(1, id);
  STITCH_ASSIGN_OR_RETURN(bool row, s.step());
  if (!row) return make_error("no chunk {} in {}", id, path().string());
  return ChunkRecord{id, s.column_text(0), static_cast<int>(s.column_int(1)),
                     static_cast<int>(s.column_int(2)), s.column_text(3)};
}

Result<std::optional<int64_t>> DocIndex::chunk_holding(const StoredDeclaration& stored) const {
  STITCH_ASSIGN_OR_RETURN(
      Statement s,
      db_->prepare("SELECT c.id FROM chunks c JOIN files f ON c.file_id = f.id WHERE f.path = ? "
                   "AND c.line_begin <= ? AND c.line_end >= ? ORDER BY (c.line_end >= ?) DESC, "
                   "c.line_begin LIMIT 1"));
  s.bind(1, stored.path).bind(2, int64_t{stored.declaration.line_begin});
  s.bind(3, int64_t{stored.declaration.line_begin}).bind(4, int64_t{stored.declaration.line_end});
  STITCH_ASSIGN_OR_RETURN(bool row, s.step());
  if (!row) return std::optional<int64_t>();
  return std::optional<int64_t>(s.column_int(0));
}

Result<std::vector<ChunkRecord>> DocIndex::chunks_without_embedding(int limit) const {
  STITCH_ASSIGN_OR_RETURN(
      Statement s,
      db_->prepare("SELECT c.id, f.path, c.line_begin, c.line_end, c.text FROM chunks c JOIN "
                   "files f ON c.file_id = f.id WHERE c.embedding IS NULL ORDER BY c.id LIMIT ?"));
  s.bind(1, int64_t{limit});
  std::vector<ChunkRecord> out;
  while (true) {
    STITCH_ASSIGN_OR_RETURN(bool row, s.step());
    if (!row) return out;
    out.push_back({s.column_int(0), s.column_text(1), static_cast<int>(s.column_int(2)),
                   static_cast<int>(s.column_int(3)), s.column_text(4)});
  }
}

Status DocIndex::set_embedding(int64_t chunk_id, std::span<const float> vector) {
  std::vector<float> unit(vector.begin(), vector.end());
  normalise(unit);
  STITCH_ASSIGN_OR_RETURN(Statement s,
                          db_->prepare("UPDATE chunks SET embedding = ? WHERE id = ?"));
  s.bind_blob(1, unit).bind(2, chunk_id);
  return s.run();
}

Result<std::vector<RankedChunk>> DocIndex::nearest(std::span<const float> query, int limit) const {
  std::vector<float> unit(query.begin(), query.end());
  normalise(unit);
  STITCH_ASSIGN_OR_RETURN(
      Statement s, db_->prepare("SELECT id, embedding FROM chunks WHERE embedding IS NOT NULL"));
  auto worse = [](const RankedChunk& a, const RankedChunk& b) { return a.score > b.score; };
  std::priority_queue<RankedChunk, std::vector<RankedChunk>, decltype(worse)> best(worse);
  while (true) {
    STITCH_ASSIGN_OR_RETURN(bool row, s.step());
    if (!row) break;
    std::span<const float> v = s.column_floats(1);
    if (v.size() != unit.size()) continue;  // embedded by another model: not comparable
    double dot = std::inner_product(v.begin(), v.end(), unit.begin(), 0.0);
    best.push({s.column_int(0), dot});
    if (static_cast<int>(best.size()) > limit) best.pop();
  }
  std::vector<RankedChunk> ranked;
  for (; !best.empty(); best.pop())
    ranked.push_back(best.top());
  std::reverse(ranked.begin(), ranked.end());
  return ranked;
}

Result<std::vector<StoredDeclaration>> DocIndex::declarations_named(std::string_view name) const {
  STITCH_ASSIGN_OR_RETURN(
      Statement s,
      db_->prepare("SELECT f.path, d.name, d.kind, d.line_begin, d.line_end, d.text FROM "
                   "declarations d JOIN files f ON d.file_id = f.id WHERE d.name = ? "
                   "ORDER BY f.path, d.line_begin"));
  s.bind(1, name);
  std::vector<StoredDeclaration> out;
  while (true) {
    STITCH_ASSIGN_OR_RETURN(bool row, s.step());
    if (!row) return out;
    StoredDeclaration stored;
    stored.path = s.column_text(0);
    stored.declaration.name = s.column_text(1);
    stored.declaration.kind =
        enum_from_name<DeclarationKind>(s.column_text(2)).value_or(DeclarationKind::function);
    stored.declaration.line_begin = static_cast<int>(s.column_int(3));
    stored.declaration.line_end = static_cast<int>(s.column_int(4));
    stored.declaration.text = s.column_text(5);
    out.push_back(std::move(stored));
  }
}

Result<const std::vector<std::string>*> DocIndex::declaration_names() const {
  if (names_) return &*names_;
  STITCH_ASSIGN_OR_RETURN(Statement s, db_->prepare("SELECT DISTINCT name FROM declarations"));
  std::vector<std::string> names;
  while (true) {
    STITCH_ASSIGN_OR_RETURN(bool row, s.step());
    if (!row) break;
    names.push_back(s.column_text(0));
  }
  names_ = std::move(names);
  return &*names_;
}

}  // namespace stitch::rag
