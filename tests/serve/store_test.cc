// The SQLite request store: accepted requests, repeats, final replies, and what survives a reopen.
#include <gtest/gtest.h>

#include "serve/request_store.h"
#include "serve_fixtures.h"

namespace stitch::serve {
namespace {

using test::candidate;

TEST(ServeSqliteStore, InsertIsIdempotentAndFinishedRepliesSurviveAReopen) {
  test::TempDir dir;
  const auto path = dir.path() / "requests.db";
  {
    auto store = SqliteRequestStore::open(path);
    ASSERT_TRUE(store.ok()) << store.error().message;
    auto first = (*store)->insert(candidate("a"));
    ASSERT_TRUE(first.ok());
    EXPECT_FALSE(*first);  // new
    ASSERT_TRUE((*store)->insert(candidate("b")).ok());
    ASSERT_TRUE((*store)->insert(candidate("c")).ok());
    auto again = (*store)->insert(candidate("a", "other source"));
    ASSERT_TRUE(again.ok() && *again);
    EXPECT_EQ((*again)->candidate.source, "// ok");  // the stored one, not overwritten
    ScoreReply reply = pending_reply(candidate("b"), RequestStatus::done);
    reply.scored.reward = 2.5;
    ASSERT_TRUE((*store)->finish(reply).ok());
    ASSERT_TRUE((*store)->set_status("c", RequestStatus::running).ok());
  }
  auto store = SqliteRequestStore::open(path);
  ASSERT_TRUE(store.ok());
  auto unfinished = (*store)->unfinished();
  ASSERT_TRUE(unfinished.ok());
  ASSERT_EQ(unfinished->size(), 2u);  // a (queued) and c (running), in accept order
  EXPECT_EQ((*unfinished)[0].request_id, "a");
  EXPECT_EQ((*unfinished)[1].request_id, "c");
  auto b = (*store)->find("b");
  ASSERT_TRUE(b.ok() && *b && (*b)->reply);
  EXPECT_EQ((*b)->status, RequestStatus::done);
  EXPECT_DOUBLE_EQ((*b)->reply->scored.reward, 2.5);
  auto missing = (*store)->find("zzz");
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(*missing);
}

TEST(ServeSqliteStore, UsesWriteAheadLogging) {
  test::TempDir dir;
  auto store = SqliteRequestStore::open(dir.path() / "requests.db");
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->insert(candidate("a")).ok());
  EXPECT_TRUE(std::filesystem::exists(dir.path() / "requests.db-wal"));
}

TEST(ServeSqliteStore, AnUnopenableFileIsAnError) {
  test::TempDir dir;
  EXPECT_FALSE(SqliteRequestStore::open(dir.path() / "no" / "such" / "dir.db").ok());
}

}  // namespace
}  // namespace stitch::serve
