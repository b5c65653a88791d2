// The SQLite layer (sqlite_db.h).
#include "rag/sqlite_db.h"

#include <sqlite3.h>

#include <utility>

namespace stitch::rag {

Statement::Statement(Statement&& other) noexcept
    : db_(other.db_), stmt_(std::exchange(other.stmt_, nullptr)) {}

Statement::~Statement() {
  if (stmt_ != nullptr) sqlite3_finalize(stmt_);
}

Statement& Statement::bind(int index, int64_t value) {
  sqlite3_bind_int64(stmt_, index, value);
  return *this;
}

Statement& Statement::bind(int index, double value) {
  sqlite3_bind_double(stmt_, index, value);
  return *this;
}

Statement& Statement::bind(int index, std::string_view text) {
  sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  return *this;
}

Statement& Statement::bind_blob(int index, std::span<const float> values) {
  sqlite3_bind_blob(stmt_, index, values.data(), static_cast<int>(values.size_bytes()),
                    SQLITE_TRANSIENT);
  return *this;
}

Result<bool> Statement::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return make_error("sqlite: {}", sqlite3_errmsg(db_));
}

Status Statement::run() {
  while (true) {
    STITCH_ASSIGN_OR_RETURN(bool row, step());
    if (!row) return {};
  }
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

int64_t Statement::column_int(int column) const {
  return sqlite3_column_int64(stmt_, column);
}

double Statement::column_double(int column) const {
  return sqlite3_column_double(stmt_, column);
}

std::string Statement::column_text(int column) const {
  const unsigned char* text = sqlite3_column_text(stmt_, column);
  if (text == nullptr) return "";
  return std::string(reinterpret_cast<const char*>(text),
                     static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
}

std::span<const float> Statement::column_floats(int column) const {
  const void* blob = sqlite3_column_blob(stmt_, column);
  size_t bytes = static_cast<size_t>(sqlite3_column_bytes(stmt_, column));
  if (blob == nullptr) return {};
  return {static_cast<const float*>(blob), bytes / sizeof(float)};
}

bool Statement::column_is_null(int column) const {
  return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

Result<std::unique_ptr<Database>> Database::open(const std::filesystem::path& path, Mode mode) {
  sqlite3* db = nullptr;
  int flags =
      mode == Mode::read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
  int rc = sqlite3_open_v2(path.c_str(), &db, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string why = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    return make_error(ErrorKind::machine, "cannot open {}: {}", path.string(), why);
  }
  sqlite3_busy_timeout(db, 5000);
  return std::unique_ptr<Database>(new Database(db, path));
}

Database::~Database() {
  sqlite3_close(db_);
}

Status Database::exec(std::string_view sql) {
  char* message = nullptr;
  std::string text(sql);
  if (sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
    Error error = make_error("sqlite ({}): {}", path_.string(), message ? message : "?");
    sqlite3_free(message);
    return error;
  }
  return {};
}

Result<Statement> Database::prepare(std::string_view sql) const {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr) !=
      SQLITE_OK)
    return make_error("sqlite ({}): {}", path_.string(), sqlite3_errmsg(db_));
  return Statement(db_, stmt);
}

int64_t Database::last_insert_rowid() const {
  return sqlite3_last_insert_rowid(db_);
}

bool sqlite_has_fts5() {
  return sqlite3_compileoption_used("ENABLE_FTS5") != 0;
}

}  // namespace stitch::rag
