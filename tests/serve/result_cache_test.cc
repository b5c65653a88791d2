// CachingScorer over the fake scorer: one verification per distinct (task, program), only verdicts
// that belong to the program kept, least recently used out first, identical candidates on two
// workers verified once, and a waiter that is cancelled does not hang.
#include <gtest/gtest.h>

#include <thread>

#include "serve/fake_scorer.h"
#include "serve/result_cache.h"
#include "serve_fixtures.h"

namespace stitch::serve {
namespace {

using test::candidate;

struct CacheRig {
  explicit CacheRig(size_t capacity = 16) : cache(fake, capacity) {}
  Result<ScoredCandidate> score(const Candidate& which) {
    CancelToken cancel;
    return cache.score(which, ScoreContext{0, cancel, clock});
  }
  FakeScorer fake;
  CachingScorer cache;
  SteadyClock clock;
};

TEST(ServeResultCache, AnIdenticalProgramIsScoredOnceAndTheRepeatSaysWhoseScoreItIs) {
  CacheRig rig;
  auto first = rig.score(candidate("a", "FAKE_SPEEDUP=2"));
  ASSERT_TRUE(first.ok());
  EXPECT_FALSE(first->breakdown.contains("result_cache"));
  auto repeat = rig.score(candidate("b", "FAKE_SPEEDUP=2"));
  ASSERT_TRUE(repeat.ok());
  EXPECT_EQ(rig.fake.scored(), 1);
  EXPECT_EQ(rig.cache.hits(), 1u);
  EXPECT_DOUBLE_EQ(repeat->reward, first->reward);
  EXPECT_EQ(repeat->speedup, first->speedup);
  EXPECT_EQ(repeat->breakdown["result_cache"]["first_request"], "a");
  EXPECT_EQ(repeat->breakdown["result_cache"]["hit"], true);
}

TEST(ServeResultCache, AnotherProgramOrAnotherTaskIsScoredAgain) {
  CacheRig rig;
  ASSERT_TRUE(rig.score(candidate("a", "FAKE_SPEEDUP=2")).ok());
  ASSERT_TRUE(rig.score(candidate("b", "FAKE_SPEEDUP=2 ")).ok());  // one byte more
  Candidate other_task = candidate("c", "FAKE_SPEEDUP=2");
  other_task.task = "task_b";
  ASSERT_TRUE(rig.score(other_task).ok());
  EXPECT_EQ(rig.fake.scored(), 3);
  EXPECT_EQ(rig.cache.hits(), 0u);
}

TEST(ServeResultCache, OnlyVerdictsOfTheProgramAreKept) {
  CacheRig rig;
  for (const char* kept : {"FAKE_WRONG", "FAKE_HACKED", "FAKE_COMPILE_ERROR"}) {
    ASSERT_TRUE(rig.score(candidate("first", kept)).ok());
    ASSERT_TRUE(rig.score(candidate("again", kept)).ok());
  }
  EXPECT_EQ(rig.fake.scored(), 3);
  // The machinery failing, or no GPU to run on, says nothing of the program: scored again.
  EXPECT_FALSE(rig.score(candidate("i1", "FAKE_INFRA")).ok());
  EXPECT_FALSE(rig.score(candidate("i2", "FAKE_INFRA")).ok());
  ASSERT_TRUE(rig.score(candidate("n1", "FAKE_NO_GPU")).ok());
  ASSERT_TRUE(rig.score(candidate("n2", "FAKE_NO_GPU")).ok());
  EXPECT_EQ(rig.fake.scored(), 7);
  EXPECT_EQ(rig.cache.size(), 3u);
}

TEST(ServeResultCache, TheLeastRecentlyUsedProgramGoesFirst) {
  CacheRig rig(2);
  ASSERT_TRUE(rig.score(candidate("1", "// one")).ok());
  ASSERT_TRUE(rig.score(candidate("2", "// two")).ok());
  ASSERT_TRUE(rig.score(candidate("3", "// one")).ok());    // hit: "one" is now the most recent
  ASSERT_TRUE(rig.score(candidate("4", "// three")).ok());  // evicts "two"
  EXPECT_EQ(rig.fake.scored(), 3);
  ASSERT_TRUE(rig.score(candidate("5", "// one")).ok());
  EXPECT_EQ(rig.fake.scored(), 3);
  ASSERT_TRUE(rig.score(candidate("6", "// two")).ok());
  EXPECT_EQ(rig.fake.scored(), 4);
  EXPECT_EQ(rig.cache.size(), 2u);
}

TEST(ServeResultCache, ACapacityOfZeroKeepsNothing) {
  CacheRig rig(0);
  ASSERT_TRUE(rig.score(candidate("a")).ok());
  ASSERT_TRUE(rig.score(candidate("b")).ok());
  EXPECT_EQ(rig.fake.scored(), 2);
}

TEST(ServeResultCache, IdenticalCandidatesOnTwoWorkersAreVerifiedOnce) {
  CacheRig rig;
  Result<ScoredCandidate> first = make_error(ErrorKind::work_failed, "not run");
  Result<ScoredCandidate> second = first;
  std::thread worker0([&] { first = rig.score(candidate("w0", "FAKE_SLEEP_MS=300")); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::thread worker1([&] { second = rig.score(candidate("w1", "FAKE_SLEEP_MS=300")); });
  worker0.join();
  worker1.join();
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(rig.fake.scored(), 1);
  EXPECT_EQ(second->breakdown["result_cache"]["first_request"], "w0");
}

TEST(ServeResultCache, AWaiterWhoseRequestIsCancelledReturnsAtOnce) {
  CacheRig rig;
  std::thread worker0([&] { (void)rig.score(candidate("w0", "FAKE_SLEEP_MS=2000")); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CancelToken cancel;
  cancel.deadline_s = rig.clock.now_s() + 0.2;
  const double started = rig.clock.now_s();
  auto waited = rig.cache.score(candidate("w1", "FAKE_SLEEP_MS=2000"),
                                ScoreContext{1, cancel, rig.clock});
  EXPECT_FALSE(waited.ok());
  EXPECT_LT(rig.clock.now_s() - started, 1.0);
  worker0.join();
  EXPECT_EQ(rig.fake.scored(), 1);
}

}  // namespace
}  // namespace stitch::serve
