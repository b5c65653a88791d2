// SqliteRequestStore (request_store.h): one table, one row per request id.
//   requests(seq INTEGER PRIMARY KEY, request_id TEXT UNIQUE, task, source, timeout_s, status,
//            reply TEXT: reply_to_json once final, else NULL)
#include <sqlite3.h>

#include "serve/request_store.h"

namespace stitch::serve {

struct SqliteRequestStore::Db {
  sqlite3* handle = nullptr;
  ~Db() {
    if (handle) sqlite3_close(handle);
  }
};

namespace {

constexpr const char* kSchema =
    "PRAGMA journal_mode=WAL;"
    "PRAGMA synchronous=FULL;"
    "CREATE TABLE IF NOT EXISTS requests ("
    "  seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  request_id TEXT NOT NULL UNIQUE,"
    "  task TEXT NOT NULL,"
    "  source TEXT NOT NULL,"
    "  timeout_s REAL NOT NULL,"
    "  status TEXT NOT NULL,"
    "  reply TEXT);";

// One prepared statement, finalized on scope exit.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) : db_(db) {
    ok_ = sqlite3_prepare_v2(db, sql, -1, &statement_, nullptr) == SQLITE_OK;
  }
  ~Statement() { sqlite3_finalize(statement_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int index, const std::string& text) {
    sqlite3_bind_text(statement_, index, text.data(), static_cast<int>(text.size()),
                      SQLITE_TRANSIENT);
    return *this;
  }
  Statement& bind(int index, double value) {
    sqlite3_bind_double(statement_, index, value);
    return *this;
  }
  // SQLITE_ROW, SQLITE_DONE or an error code.
  int step() { return ok_ ? sqlite3_step(statement_) : SQLITE_ERROR; }
  std::string text(int column) const {
    const unsigned char* value = sqlite3_column_text(statement_, column);
    return value ? std::string(reinterpret_cast<const char*>(value),
                               static_cast<size_t>(sqlite3_column_bytes(statement_, column)))
                 : std::string();
  }
  double number(int column) const { return sqlite3_column_double(statement_, column); }
  bool is_null(int column) const { return sqlite3_column_type(statement_, column) == SQLITE_NULL; }
  Error error(const char* what) const {
    return make_error(ErrorKind::machine, "request store: {}: {}", what, sqlite3_errmsg(db_));
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* statement_ = nullptr;
  bool ok_ = false;
};

Result<StoredRequest> read_row(const Statement& row) {
  StoredRequest stored;
  stored.candidate = {row.text(0), row.text(1), row.text(2), row.number(3)};
  auto status = enum_from_name<RequestStatus>(row.text(4));
  if (!status)
    return make_error(ErrorKind::bad_input, "request store: bad status '{}'", row.text(4));
  stored.status = *status;
  if (!row.is_null(5)) {
    auto doc = nlohmann::json::parse(row.text(5), nullptr, false);
    STITCH_ASSIGN_OR_RETURN(ScoreReply reply, reply_from_json(doc));
    stored.reply = std::move(reply);
  }
  return stored;
}

}  // namespace

SqliteRequestStore::SqliteRequestStore(std::unique_ptr<Db> db) : db_(std::move(db)) {}
SqliteRequestStore::~SqliteRequestStore() = default;

Result<std::unique_ptr<SqliteRequestStore>> SqliteRequestStore::open(
    const std::filesystem::path& path) {
  auto db = std::make_unique<Db>();
  if (sqlite3_open_v2(path.c_str(), &db->handle,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK)
    return make_error(ErrorKind::machine, "{}: cannot open: {}", path.string(),
                      db->handle ? sqlite3_errmsg(db->handle) : "out of memory");
  sqlite3_busy_timeout(db->handle, 5000);
  char* message = nullptr;
  if (sqlite3_exec(db->handle, kSchema, nullptr, nullptr, &message) != SQLITE_OK) {
    Error error = make_error(ErrorKind::machine, "{}: {}", path.string(),
                             message ? message : "schema failed");
    sqlite3_free(message);
    return error;
  }
  return std::unique_ptr<SqliteRequestStore>(new SqliteRequestStore(std::move(db)));
}

Result<std::optional<StoredRequest>> SqliteRequestStore::find_locked(const std::string& id) {
  Statement select(db_->handle,
                   "SELECT request_id, task, source, timeout_s, status, reply FROM requests "
                   "WHERE request_id = ?1");
  select.bind(1, id);
  const int step = select.step();
  if (step == SQLITE_DONE) return std::optional<StoredRequest>();
  if (step != SQLITE_ROW) return select.error("find");
  STITCH_ASSIGN_OR_RETURN(StoredRequest stored, read_row(select));
  return std::optional<StoredRequest>(std::move(stored));
}

Result<std::optional<StoredRequest>> SqliteRequestStore::insert(const Candidate& candidate) {
  std::lock_guard lock(mutex_);
  Statement insert(db_->handle,
                   "INSERT OR IGNORE INTO requests (request_id, task, source, timeout_s, status) "
                   "VALUES (?1, ?2, ?3, ?4, 'queued')");
  insert.bind(1, candidate.request_id).bind(2, candidate.task).bind(3, candidate.source);
  insert.bind(4, candidate.timeout_s);
  if (insert.step() != SQLITE_DONE) return insert.error("insert");
  if (sqlite3_changes(db_->handle) == 1) return std::optional<StoredRequest>();
  return find_locked(candidate.request_id);
}

Result<std::optional<StoredRequest>> SqliteRequestStore::find(const std::string& request_id) {
  std::lock_guard lock(mutex_);
  return find_locked(request_id);
}

Status SqliteRequestStore::set_status(const std::string& request_id, RequestStatus status) {
  std::lock_guard lock(mutex_);
  Statement update(db_->handle, "UPDATE requests SET status = ?1 WHERE request_id = ?2");
  update.bind(1, std::string(enum_name(status))).bind(2, request_id);
  if (update.step() != SQLITE_DONE) return update.error("set status");
  return {};
}

Status SqliteRequestStore::finish(const ScoreReply& reply) {
  std::lock_guard lock(mutex_);
  Statement update(db_->handle,
                   "UPDATE requests SET status = ?1, reply = ?2 WHERE request_id = ?3");
  update.bind(1, std::string(enum_name(reply.status)))
      .bind(2, reply_to_json(reply).dump())
      .bind(3, reply.request_id);
  if (update.step() != SQLITE_DONE) return update.error("finish");
  return {};
}

Result<std::vector<Candidate>> SqliteRequestStore::unfinished() {
  std::lock_guard lock(mutex_);
  Statement select(db_->handle,
                   "SELECT request_id, task, source, timeout_s, status, reply FROM requests "
                   "WHERE status IN ('queued', 'running') ORDER BY seq");
  std::vector<Candidate> candidates;
  int step = SQLITE_ROW;
  while ((step = select.step()) == SQLITE_ROW) {
    STITCH_ASSIGN_OR_RETURN(StoredRequest stored, read_row(select));
    candidates.push_back(std::move(stored.candidate));
  }
  if (step != SQLITE_DONE) return select.error("unfinished");
  return candidates;
}

}  // namespace stitch::serve
