// ScoreService over the memory store and the fake scorer: admission, idempotency, the bounded
// queue, deadlines, restarts and shutdown.
#include <gtest/gtest.h>

#include "serve/fake_scorer.h"
#include "serve/request_store.h"
#include "serve/service.h"
#include "serve_fixtures.h"

namespace stitch::serve {
namespace {

using test::candidate;
using test::eventually;

struct ServiceRig {
  explicit ServiceRig(ServiceOptions options = {}) : service(store, scorer, clock, options) {}
  MemoryRequestStore store;
  FakeScorer scorer;
  SteadyClock clock;
  ScoreService service;
};

TEST(ServeScoreService, ScoresAndARepeatedIdIsAnsweredFromTheStoredResult) {
  ServiceRig rig;
  ASSERT_TRUE(rig.service.start().ok());
  EXPECT_EQ(rig.service.submit(candidate("a", "FAKE_SPEEDUP=2")).admission, Admission::accepted);
  auto reply = rig.service.wait("a", 5);
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, RequestStatus::done);
  EXPECT_DOUBLE_EQ(reply->scored.reward, 3.0);
  Admitted repeat = rig.service.submit(candidate("a", "FAKE_SPEEDUP=2"));
  EXPECT_EQ(repeat.admission, Admission::duplicate);
  EXPECT_EQ(repeat.reply.status, RequestStatus::done);
  EXPECT_EQ(rig.scorer.scored(), 1);
  EXPECT_EQ(rig.service.submit(candidate("a", "another program")).admission, Admission::conflict);
}

TEST(ServeScoreService, ABoundedQueueRefusesWhenFull) {
  ServiceOptions options;
  options.queue_capacity = 2;
  ServiceRig rig(options);
  ASSERT_TRUE(rig.service.start().ok());
  ASSERT_EQ(rig.service.submit(candidate("r", "FAKE_SLEEP_MS=400")).admission, Admission::accepted);
  ASSERT_TRUE(eventually([&] { return rig.service.gauges().in_flight == 1; }));
  EXPECT_EQ(rig.service.submit(candidate("q1")).admission, Admission::accepted);
  EXPECT_EQ(rig.service.submit(candidate("q2")).admission, Admission::accepted);
  Admitted full = rig.service.submit(candidate("q3"));
  EXPECT_EQ(full.admission, Admission::queue_full);
  EXPECT_EQ(full.reply.scored.error, ErrorCode::queue_full);
  EXPECT_EQ(rig.service.metrics().count_refused(ErrorCode::queue_full), 1);
  // A repeat of an accepted id is answered even while the queue is full.
  EXPECT_EQ(rig.service.submit(candidate("q1")).admission, Admission::duplicate);
}

TEST(ServeScoreService, ARequestPastItsTimeLimitTimesOut) {
  ServiceRig rig;
  ASSERT_TRUE(rig.service.start().ok());
  rig.service.submit(candidate("slow", "FAKE_SLEEP_MS=5000", 0.1));
  auto reply = rig.service.wait("slow", 3);
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, RequestStatus::timeout);
  EXPECT_EQ(reply->scored.error, ErrorCode::request_timeout);
}

TEST(ServeScoreService, ScorerErrorsAreFinalErrorsWithTheirCode) {
  ServiceRig rig;
  ASSERT_TRUE(rig.service.start().ok());
  rig.service.submit(Candidate{"u", "unknown", "// ok", 0});
  rig.service.submit(candidate("i", "FAKE_INFRA"));
  rig.service.submit(candidate("h", "FAKE_HACKED FAKE_SPEEDUP=4"));
  rig.service.submit(candidate("n", "FAKE_NO_GPU"));
  auto no_gpu = rig.service.wait("n", 5);
  EXPECT_EQ(no_gpu->status, RequestStatus::error);
  EXPECT_EQ(no_gpu->scored.error, ErrorCode::no_gpu);
  EXPECT_TRUE(no_gpu->scored.compiled);
  EXPECT_EQ(rig.service.wait("u", 5)->scored.error, ErrorCode::unknown_task);
  EXPECT_EQ(rig.service.wait("i", 5)->scored.error, ErrorCode::infrastructure_error);
  auto hacked = rig.service.wait("h", 5);
  EXPECT_EQ(hacked->status, RequestStatus::done);
  EXPECT_TRUE(hacked->scored.hacked);
  EXPECT_EQ(hacked->scored.reward, 0);
}

TEST(ServeScoreService, NothingIsAcceptedThatTheStoreDidNotKeep) {
  ServiceRig rig;
  rig.store.fail_inserts = true;
  ASSERT_TRUE(rig.service.start().ok());
  EXPECT_EQ(rig.service.submit(candidate("a")).admission, Admission::store_failed);
  EXPECT_FALSE(rig.service.lookup("a"));
}

TEST(ServeScoreService, StartReQueuesWhatTheStoreHoldsUnfinished) {
  ServiceRig rig;
  ASSERT_TRUE(rig.store.insert(candidate("left-queued")).ok());
  ASSERT_TRUE(rig.store.insert(candidate("left-running")).ok());
  ASSERT_TRUE(rig.store.set_status("left-running", RequestStatus::running).ok());
  auto requeued = rig.service.start();
  ASSERT_TRUE(requeued.ok());
  EXPECT_EQ(*requeued, 2u);
  EXPECT_EQ(rig.service.wait("left-queued", 5)->status, RequestStatus::done);
  EXPECT_EQ(rig.service.wait("left-running", 5)->status, RequestStatus::done);
}

TEST(ServeScoreService, ShutdownFinishesInFlightWorkWithinTheGrace) {
  ServiceRig rig;
  ASSERT_TRUE(rig.service.start().ok());
  rig.service.submit(candidate("a", "FAKE_SLEEP_MS=200"));
  ASSERT_TRUE(eventually([&] { return rig.service.gauges().in_flight == 1; }));
  rig.service.shutdown(5);
  EXPECT_EQ(rig.service.lookup("a")->status, RequestStatus::done);
  EXPECT_EQ(rig.service.submit(candidate("late")).admission, Admission::shutting_down);
}

TEST(ServeScoreService, ShutdownPastTheGraceReturnsInFlightAndQueuedWorkToTheQueue) {
  ServiceRig rig;
  ASSERT_TRUE(rig.service.start().ok());
  rig.service.submit(candidate("running", "FAKE_SLEEP_MS=10000"));
  ASSERT_TRUE(eventually([&] { return rig.service.gauges().in_flight == 1; }));
  rig.service.submit(candidate("waiting"));
  rig.service.shutdown(0.05);
  auto unfinished = rig.store.unfinished();
  ASSERT_TRUE(unfinished.ok());
  ASSERT_EQ(unfinished->size(), 2u);
  EXPECT_EQ(rig.store.find("running")->value().status, RequestStatus::queued);
}

}  // namespace
}  // namespace stitch::serve
