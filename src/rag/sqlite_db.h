// A small RAII layer over the SQLite C API for the documentation index: a connection, prepared
// statements with bound values, errors as Result. Nothing here knows about chunks or files.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "util/result.h"

struct sqlite3;
struct sqlite3_stmt;

namespace stitch::rag {

class Statement {
 public:
  Statement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&&) = delete;
  Statement(const Statement&) = delete;
  ~Statement();

  // Binds parameter `index` (1-based).
  Statement& bind(int index, int64_t value);
  Statement& bind(int index, double value);
  Statement& bind(int index, std::string_view text);
  Statement& bind_blob(int index, std::span<const float> values);
  // One step: true with a row to read, false when done; an Error on failure.
  Result<bool> step();
  // step() until done.
  Status run();
  void reset();

  int64_t column_int(int column) const;
  double column_double(int column) const;
  std::string column_text(int column) const;
  std::span<const float> column_floats(int column) const;  // valid until the next step
  bool column_is_null(int column) const;

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_;
};

class Database {
 public:
  enum class Mode { read_only, read_write };
  static Result<std::unique_ptr<Database>> open(const std::filesystem::path& path, Mode mode);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  Status exec(std::string_view sql);
  Result<Statement> prepare(std::string_view sql) const;
  int64_t last_insert_rowid() const;
  const std::filesystem::path& path() const { return path_; }

 private:
  Database(sqlite3* db, std::filesystem::path path) : db_(db), path_(std::move(path)) {}
  sqlite3* db_;
  std::filesystem::path path_;
};

// Whether this SQLite was built with FTS5 (doctor-style check; the index needs it).
bool sqlite_has_fts5();

}  // namespace stitch::rag
