// GET /api/jobs beyond filters (newest first by default, paging both ways, views, search)
// and the bulk actions POST /api/jobs/{retry,cancel,delete}, on every engine.
#include <chrono>
#include <thread>

#include "server_fixture.hpp"

namespace readpast::test {
namespace {

class JobListApiTest : public ServerTest {
 protected:
  // A job of the queue that is dead after one failed attempt.
  std::int64_t make_dead(const std::string& queue) {
    std::int64_t id = enqueue(queue, {{"max_attempts", 1}, {"payload", "p"}});
    Json leased = lease_one(queue);
    EXPECT_EQ(leased["id"], id);
    Reply r = post("/api/jobs/" + std::to_string(id) + "/fail",
                   {{"lease_token", leased["lease_token"]}, {"error", "boom"}});
    EXPECT_EQ(r.json["state"], "dead") << r.body;
    return id;
  }

  // The ids of a page's jobs, in the order they came.
  static std::vector<std::int64_t> page_ids(const Reply& r) {
    std::vector<std::int64_t> ids;
    for (const auto& job : r.json["jobs"]) ids.push_back(job["id"]);
    return ids;
  }

  // The query string of a cursor object ({"before": ID} or {"after": ID}).
  static std::string cursor(const Json& c) {
    if (c.contains("before")) return "before=" + std::to_string(c["before"].get<std::int64_t>());
    return "after=" + std::to_string(c["after"].get<std::int64_t>());
  }
};

TEST_P(JobListApiTest, NewestFirstByDefaultWithNextAndPrevPages) {
  std::vector<std::int64_t> ids;
  for (int i = 0; i < 7; ++i) ids.push_back(enqueue("q", {{"payload", std::to_string(i)}}));
  Reply first = get("/api/jobs?limit=3");
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_EQ(first.json["order"], "newest");
  EXPECT_EQ(page_ids(first), (std::vector<std::int64_t>{ids[6], ids[5], ids[4]}));
  EXPECT_TRUE(first.json["prev"].is_null()) << first.body;
  EXPECT_EQ(first.json["next"], Json({{"before", ids[4]}}));

  Reply second = get("/api/jobs?limit=3&" + cursor(first.json["next"]));
  EXPECT_EQ(page_ids(second), (std::vector<std::int64_t>{ids[3], ids[2], ids[1]}));
  Reply third = get("/api/jobs?limit=3&" + cursor(second.json["next"]));
  EXPECT_EQ(page_ids(third), (std::vector<std::int64_t>{ids[0]}));
  EXPECT_TRUE(third.json["next"].is_null()) << third.body;

  // And back: each "prev" is the page before, in the same order.
  Reply back2 = get("/api/jobs?limit=3&" + cursor(third.json["prev"]));
  EXPECT_EQ(page_ids(back2), page_ids(second));
  Reply back1 = get("/api/jobs?limit=3&" + cursor(back2.json["prev"]));
  EXPECT_EQ(page_ids(back1), page_ids(first));
  EXPECT_TRUE(back1.json["prev"].is_null()) << back1.body;
  EXPECT_EQ(back1.json["next"], Json({{"before", ids[4]}}));

  // Oldest first pages the other way.
  Reply oldest = get("/api/jobs?order=oldest&limit=4");
  EXPECT_EQ(page_ids(oldest), (std::vector<std::int64_t>{ids[0], ids[1], ids[2], ids[3]}));
  EXPECT_EQ(oldest.json["next"], Json({{"after", ids[3]}}));
  Reply oldest2 = get("/api/jobs?order=oldest&limit=4&" + cursor(oldest.json["next"]));
  EXPECT_EQ(page_ids(oldest2), (std::vector<std::int64_t>{ids[4], ids[5], ids[6]}));
  Reply oldest_back = get("/api/jobs?order=oldest&limit=4&" + cursor(oldest2.json["prev"]));
  EXPECT_EQ(page_ids(oldest_back), page_ids(oldest));
}

TEST_P(JobListApiTest, ViewsAndSearch) {
  std::int64_t dead = make_dead("mail");
  std::int64_t plain = enqueue("mail", {{"payload", "{\"to\":\"bob@example.com\"}"}});
  std::int64_t later = enqueue("mail", {{"payload", "later"}, {"delay", "1h"}});
  std::int64_t keyed = enqueue("other", {{"payload", "x"}, {"unique_key", "Order-BOB-1"}});
  // A retrying job: failed once with attempts left, retried in an hour.
  std::int64_t retrying = enqueue("retry", {{"payload", "r"}});
  Json leased = lease_one("retry");
  ASSERT_EQ(leased["id"], retrying);
  ASSERT_EQ(post("/api/jobs/" + std::to_string(retrying) + "/fail",
                 {{"lease_token", leased["lease_token"]},
                  {"error", "Bob's mailbox is full"},
                  {"retry_after", "1h"}})
                .status,
            200);
  // An expired lease.
  std::int64_t expiring = enqueue("exp", {{"payload", "e"}});
  ASSERT_EQ(lease_one("exp", "300ms")["id"], expiring);
  std::this_thread::sleep_for(std::chrono::milliseconds(600));

  EXPECT_EQ(page_ids(get("/api/jobs?view=scheduled")),
            (std::vector<std::int64_t>{retrying, later}));
  EXPECT_EQ(page_ids(get("/api/jobs?view=scheduled&queue=mail")),
            (std::vector<std::int64_t>{later}));
  EXPECT_EQ(page_ids(get("/api/jobs?view=retrying")), (std::vector<std::int64_t>{retrying}));
  EXPECT_EQ(page_ids(get("/api/jobs?view=expired")), (std::vector<std::int64_t>{expiring}));
  EXPECT_EQ(page_ids(get("/api/jobs?view=expired&state=running&queue=exp")),
            (std::vector<std::int64_t>{expiring}));

  // Search: payload, unique key, error text; any case; URL-encoded.
  EXPECT_EQ(page_ids(get("/api/jobs?q=BOB")), (std::vector<std::int64_t>{retrying, keyed, plain}));
  EXPECT_EQ(page_ids(get("/api/jobs?q=bob%40example&order=oldest")),
            (std::vector<std::int64_t>{plain}));
  EXPECT_EQ(page_ids(get("/api/jobs?q=boom&state=dead")), (std::vector<std::int64_t>{dead}));
  EXPECT_EQ(page_ids(get("/api/jobs?q=test-worker&queue=exp")),
            (std::vector<std::int64_t>{expiring}));
  Reply none = get("/api/jobs?q=nothing-matches");
  EXPECT_EQ(none.status, 200);
  EXPECT_TRUE(none.json["jobs"].empty());
  EXPECT_TRUE(none.json["next"].is_null()) << "a small table is searched in one request";
}

TEST_P(JobListApiTest, BadListParametersAreOneLineErrors) {
  enqueue("q");
  for (const char* path :
       {"/api/jobs?order=sideways", "/api/jobs?view=waiting", "/api/jobs?before=0",
        "/api/jobs?before=x", "/api/jobs?after=-1", "/api/jobs?before=5&after=2",
        "/api/jobs?view=expired&state=available", "/api/jobs?q=%00", "/api/jobs?q=%FF"}) {
    Reply r = get(path);
    EXPECT_EQ(r.status, 400) << path << ": " << r.body;
    EXPECT_EQ(r.code(), "invalid_argument") << path;
    EXPECT_EQ(r.body.find('\n'), r.body.size() - 1) << path << ": " << r.body;
  }
  std::string long_text(1025, 'a');
  EXPECT_EQ(get("/api/jobs?q=" + long_text).status, 400);
}

TEST_P(JobListApiTest, BulkRetryCancelAndDeleteSayWhatChanged) {
  std::int64_t dead1 = make_dead("q");
  std::int64_t dead2 = make_dead("q");
  std::int64_t available = enqueue("q");
  std::int64_t running = enqueue("r");
  ASSERT_EQ(lease_one("r")["id"], running);
  const std::int64_t missing = 999999;

  Reply retried = post("/api/jobs/retry", {{"ids", {dead1, available, missing, dead1}}});
  ASSERT_EQ(retried.status, 200) << retried.body;
  EXPECT_EQ(retried.json["retried"], Json::array({dead1}));
  EXPECT_EQ(retried.json["unchanged"], Json::array({available, missing}));
  EXPECT_EQ(job(dead1)["state"], "available");

  Reply cancelled = post("/api/jobs/cancel", {{"ids", {dead1, running, dead2}}});
  ASSERT_EQ(cancelled.status, 200) << cancelled.body;
  EXPECT_EQ(cancelled.json["cancelled"], Json::array({dead1, running}));
  EXPECT_EQ(cancelled.json["unchanged"], Json::array({dead2}));

  // Delete takes finished jobs only: the available one stays.
  Reply deleted = post("/api/jobs/delete", {{"ids", {dead1, dead2, available, missing}}});
  ASSERT_EQ(deleted.status, 200) << deleted.body;
  EXPECT_EQ(deleted.json["deleted"], Json::array({dead1, dead2}));
  EXPECT_EQ(deleted.json["unchanged"], Json::array({available, missing}));
  EXPECT_EQ(get("/api/jobs/" + std::to_string(dead1)).status, 404);
  EXPECT_EQ(job(available)["state"], "available");

  // Bad bodies change nothing.
  EXPECT_EQ(post("/api/jobs/delete", {{"ids", {available, -1}}}).status, 400);
  EXPECT_EQ(post("/api/jobs/delete", {{"ids", "all"}}).status, 400);
  EXPECT_EQ(post("/api/jobs/delete", {{"ids", Json::array()}, {"force", true}}).status, 400);
  Json too_many = Json::array();
  for (int i = 1; i <= 10001; ++i) too_many.push_back(i);
  EXPECT_EQ(post("/api/jobs/delete", {{"ids", too_many}}).status, 400);
  EXPECT_EQ(job(available)["state"], "available");
  EXPECT_EQ(job(running)["state"], "cancelled");
}

INSTANTIATE_TEST_SUITE_P(Engines, JobListApiTest, ::testing::ValuesIn(engine_names()),
                         [](const ::testing::TestParamInfo<std::string>& engine) {
                           return engine.param;
                         });

}  // namespace
}  // namespace readpast::test
