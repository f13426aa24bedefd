// The operator's side of the HTTP API on every engine: list with keyset paging, get, retry,
// cancel, queue stats, pause/resume, retry all, purge, throughput, /metrics and /healthz.
#include <algorithm>
#include <chrono>
#include <thread>

#include "server_fixture.hpp"

namespace readpast::test {
namespace {

using namespace std::chrono_literals;

class AdminApiTest : public ServerTest {
 protected:
  // A job of the queue that is dead after one failed attempt.
  std::int64_t dead_job(const std::string& queue, const std::string& error = "boom") {
    std::int64_t id = enqueue(queue, {{"max_attempts", 1}, {"payload", "p"}});
    Json leased = lease_one(queue);
    EXPECT_EQ(leased["id"], id);
    Reply r = post("/api/jobs/" + std::to_string(id) + "/fail",
                   {{"lease_token", leased["lease_token"]}, {"error", error}});
    EXPECT_EQ(r.json["state"], "dead") << r.body;
    return id;
  }
};

// Every page of a filtered listing, oldest first, following "next"; the ids seen, in order.
std::vector<std::int64_t> all_pages(const AdminApiTest& test, const std::string& filter) {
  std::vector<std::int64_t> seen;
  std::string after;
  for (int page = 0; page < 20; ++page) {
    Reply r = test.get("/api/jobs?order=oldest&limit=3" + filter +
                       (after.empty() ? "" : "&after=" + after));
    EXPECT_EQ(r.status, 200) << r.body;
    if (r.status != 200) break;
    for (const auto& job : r.json["jobs"]) seen.push_back(job["id"]);
    if (r.json["next"].is_null()) break;
    after = std::to_string(r.json["next"]["after"].get<std::int64_t>());
  }
  return seen;
}

TEST_P(AdminApiTest, KeysetPagingVisitsEveryJobOnceInIdOrder) {
  // Two queues, jobs in several states, interleaved ids. (dead_job leases the queue's
  // first job, so the dead ones come first.)
  std::vector<std::int64_t> pages, other, dead;
  dead.push_back(dead_job("pages"));
  pages.push_back(dead.back());
  dead.push_back(dead_job("other"));
  other.push_back(dead.back());
  for (int i = 0; i < 4; ++i) {
    pages.push_back(enqueue("pages", {{"payload", std::to_string(i)}}));
    other.push_back(enqueue("other"));
  }
  pages.push_back(enqueue("pages"));
  std::string cancel = "/api/jobs/" + std::to_string(pages[2]) + "/cancel";
  ASSERT_EQ(post(cancel).status, 200);

  EXPECT_EQ(all_pages(*this, "&queue=pages"), pages);
  EXPECT_EQ(all_pages(*this, "&state=dead"), dead);
  std::vector<std::int64_t> everything = pages;
  everything.insert(everything.end(), other.begin(), other.end());
  std::sort(everything.begin(), everything.end());
  EXPECT_EQ(all_pages(*this, ""), everything);
  EXPECT_EQ(all_pages(*this, "&queue=pages&state=available"),
            std::vector<std::int64_t>({pages[1], pages[3], pages[4], pages[5]}));

  EXPECT_EQ(get("/api/jobs?limit=0").status, 400);
  EXPECT_EQ(get("/api/jobs?state=sleeping").status, 400);
  EXPECT_EQ(get("/api/jobs?queue=bad%20name").status, 400);
}

TEST_P(AdminApiTest, ListFiltersByStateAndTruncatesPayloadsOnRequest) {
  std::int64_t dead = dead_job("q");
  enqueue("q", {{"payload", std::string(100, 'x') + "é"}});
  Reply r = get("/api/jobs?queue=q&state=dead");
  ASSERT_EQ(r.json["jobs"].size(), 1u);
  EXPECT_EQ(r.json["jobs"][0]["id"], dead);
  EXPECT_EQ(r.json["jobs"][0]["last_error"], "boom");

  // Cut before the two-byte "é" rather than through it.
  Reply preview = get("/api/jobs?queue=q&state=available&payload_max=101");
  ASSERT_EQ(preview.json["jobs"].size(), 1u);
  EXPECT_EQ(preview.json["jobs"][0]["payload"], std::string(100, 'x'));
  EXPECT_EQ(preview.json["jobs"][0]["payload_truncated"], true);
}

TEST_P(AdminApiTest, RetryAndCancelOneJob) {
  std::int64_t id = dead_job("q");
  std::string path = "/api/jobs/" + std::to_string(id);
  Reply retried = post(path + "/retry");
  EXPECT_EQ(retried.status, 200) << retried.body;
  Json job = this->job(id);
  EXPECT_EQ(job["state"], "available");
  EXPECT_EQ(job["attempts"], 0);

  Reply again = post(path + "/retry");
  EXPECT_EQ(again.status, 409);
  EXPECT_EQ(again.code(), "conflict");

  EXPECT_EQ(post(path + "/cancel").status, 200);
  EXPECT_EQ(this->job(id)["state"], "cancelled");
  EXPECT_EQ(post(path + "/cancel").code(), "conflict");

  EXPECT_EQ(get("/api/jobs/999999").status, 404);
  EXPECT_EQ(get("/api/jobs/999999").code(), "not_found");
  EXPECT_EQ(post("/api/jobs/999999/retry").code(), "not_found");
  EXPECT_EQ(get("/api/jobs/abc").code(), "invalid_argument");

  Reply many = post("/api/jobs/retry", {{"ids", {id, 999999}}});
  EXPECT_EQ(many.status, 200) << many.body;
  EXPECT_EQ(many.json["retried"], Json::array({id}));
  EXPECT_EQ(many.json["unchanged"], Json::array({999999}));
}

TEST_P(AdminApiTest, QueueStatsPauseResumeRetryAllAndPurge) {
  dead_job("mail");
  dead_job("mail");
  enqueue("mail");
  Json stats = get("/api/queues/mail").json;
  EXPECT_EQ(stats["available"], 1);
  EXPECT_EQ(stats["dead"], 2);
  EXPECT_EQ(stats["paused"], false);

  EXPECT_EQ(post("/api/queues/mail/pause").json["paused"], true);
  EXPECT_EQ(get("/api/queues/mail").json["paused"], true);
  EXPECT_TRUE(lease_one("mail").is_null());
  EXPECT_EQ(post("/api/queues/mail/resume").json["paused"], false);

  Reply all = post("/api/queues/mail/retry", {{"state", "dead"}});
  EXPECT_EQ(all.json["retried"], 2) << all.body;
  EXPECT_EQ(get("/api/queues/mail").json["available"], 3);

  Json leased = lease_one("mail");
  post("/api/jobs/" + std::to_string(leased["id"].get<std::int64_t>()) + "/complete",
       {{"lease_token", leased["lease_token"]}});
  Reply purged = post("/api/queues/mail/purge", {{"state", "succeeded"}});
  EXPECT_EQ(purged.json["purged"], 1) << purged.body;
  EXPECT_EQ(post("/api/queues/mail/purge", {{"state", "running"}}).status, 400);
  EXPECT_EQ(post("/api/queues/mail/purge", Json::object()).status, 400);

  Reply list = get("/api/queues");
  ASSERT_EQ(list.json["queues"].size(), 1u);
  EXPECT_EQ(list.json["queues"][0]["queue"], "mail");
  // A queue nobody used is zeros, not an error.
  EXPECT_EQ(get("/api/queues/empty").json["available"], 0);
}

TEST_P(AdminApiTest, TheServerRescuesExpiredLeasesOfQueuesNobodyWorksOn) {
  server::ServerOptions o = options();
  o.queue_refresh_interval = 100ms;
  restart(o);
  std::int64_t id = enqueue("abandoned");
  Json leased = lease_one("abandoned", "1s");
  ASSERT_EQ(leased["id"], id);
  Json stats = get("/api/queues/abandoned").json;
  EXPECT_EQ(stats["running"], 1);
  EXPECT_EQ(stats["expired"], 0);
  // Nobody leases the queue again: the server moves the job back by itself, within about a
  // second (its rescue interval) of the lease's end.
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (job(id)["state"] == "running" && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);
  }
  Json after = job(id);
  EXPECT_EQ(after["state"], "available") << after.dump();
  EXPECT_EQ(after["last_error"], "lease expired (worker lost)");
  EXPECT_EQ(get("/api/queues/abandoned").json["expired"], 0);
}

TEST_P(AdminApiTest, TheServerTakesItsTurnAtRetentionForQueuesWithoutWorkers) {
  server::ServerOptions quiet = options();
  quiet.retention_interval = std::nullopt;  // the fixture's server keeps out of it
  restart(quiet);
  std::int64_t id = dead_job("orphan");
  std::int64_t kept = enqueue("orphan");
  // A second server whose Queue keeps dead jobs for 1 ms; no worker handles "orphan".
  QueueOptions short_retention;
  short_retention.retention.dead = 1ms;
  auto own = Queue::open(db_url(), short_retention);
  ASSERT_TRUE(own) << own.error().message;
  server::ServerOptions o = options();
  o.retention_interval = 200ms;
  auto tidy = server::Server::bind(*own, o);
  ASSERT_TRUE(tidy) << tidy.error().message;
  std::thread serving([&] { EXPECT_TRUE((*tidy)->run()); });
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (get("/api/jobs/" + std::to_string(id)).status == 200 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);
  }
  (*tidy)->stop();
  serving.join();
  EXPECT_EQ(get("/api/jobs/" + std::to_string(id)).status, 404) << "the dead job was kept";
  EXPECT_EQ(job(kept)["state"], "available") << "retention touched a live job";
}

TEST_P(AdminApiTest, ThroughputCountsFinishedJobsPerSecond) {
  for (int i = 0; i < 5; ++i) enqueue("fast");
  for (int i = 0; i < 5; ++i) {
    Json leased = lease_one("fast");
    post("/api/jobs/" + std::to_string(leased["id"].get<std::int64_t>()) + "/complete",
         {{"lease_token", leased["lease_token"]}});
  }
  // The rate covers the last 10 seconds of samples; the history keeps 10 minutes.
  double rate = 0;
  for (int i = 0; i < 200 && rate <= 0; ++i) {
    rate = get("/api/queues/fast").json["succeeded_per_s"];
    if (rate <= 0) std::this_thread::sleep_for(20ms);
  }
  double finished = 0;
  for (int i = 0; i < 100 && finished < 4.99; ++i) {
    std::this_thread::sleep_for(50ms);
    finished = 0;
    Reply history = get("/api/throughput?queue=fast");
    for (const auto& point : history.json["points"]) {
      finished += point["succeeded_per_s"].get<double>() * point["length_s"].get<double>();
    }
  }
  EXPECT_NEAR(finished, 5, 0.01);
  EXPECT_GT(rate, 0);
}

// GET /api/storage on every engine: each table's size by name, and the oldest snapshot's
// holder or null (who it is on PostgreSQL and MariaDB is their own engines' tests).
TEST_P(AdminApiTest, StorageSaysEachTablesSizeAndTheOldestSnapshot) {
  enqueue("s");
  Reply storage = get("/api/storage");
  ASSERT_EQ(storage.status, 200) << storage.body;
  ASSERT_TRUE(storage.json["sizes"].is_object()) << storage.body;
  EXPECT_FALSE(storage.json["sizes"].empty()) << storage.body;
  for (const auto& [relation, bytes] : storage.json["sizes"].items()) {
    EXPECT_TRUE(bytes.is_number_integer()) << relation;
  }
  ASSERT_TRUE(storage.json.contains("oldest_snapshot")) << storage.body;
  const Json& holder = storage.json["oldest_snapshot"];
  if (GetParam() == "sqlite") {
    EXPECT_TRUE(holder.is_null()) << storage.body;
    EXPECT_TRUE(storage.json["sizes"].contains("wal")) << storage.body;
  } else if (!holder.is_null()) {
    for (const char* field : {"kind", "pid", "client", "state", "age_s", "transactions"}) {
      EXPECT_TRUE(holder.contains(field)) << field << ": " << storage.body;
    }
  }
}

TEST_P(AdminApiTest, MetricsArePrometheusTextAndHealthzAsksTheDatabase) {
  dead_job("m");
  enqueue("m");
  enqueue("m");
  post("/api/queues/m/pause");
  Reply metrics = get("/metrics");
  ASSERT_EQ(metrics.status, 200);
  auto type = metrics.header("Content-Type");
  EXPECT_EQ(type.rfind("text/plain; version=0.0.4", 0), 0u) << type;
  for (const char* line :
       {"# TYPE readpast_jobs gauge\n", "readpast_jobs{queue=\"m\",state=\"available\"} 2\n",
        "readpast_jobs{queue=\"m\",state=\"dead\"} 1\n", "readpast_queue_paused{queue=\"m\"} 1\n",
        "readpast_queue_oldest_available_age_seconds{queue=\"m\"} ",
        "readpast_http_requests_total{code=\"201\"} 3\n", "readpast_http_requests_in_flight 1\n",
        "# TYPE readpast_storage_bytes gauge\n", "readpast_storage_bytes{relation=\""}) {
    EXPECT_NE(metrics.body.find(line), std::string::npos) << line << "\n" << metrics.body;
  }
  Reply health = get("/healthz");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.json["status"], "ok");
}

TEST_P(AdminApiTest, MetricsCountJobsWorkedThroughTheApiPastRetention) {
  dead_job("m");
  const std::int64_t id = enqueue("m");
  Json leased = lease_one("m");
  ASSERT_EQ(leased["id"], id);
  Reply done = post("/api/jobs/" + std::to_string(id) + "/complete",
                    {{"lease_token", leased["lease_token"]}});
  ASSERT_EQ(done.status, 200) << done.body;
  // The server flushes what it counted when it stops (and every metrics_interval).
  restart(options());
  for (const char* state : {"succeeded", "dead"}) {
    Reply purged = post("/api/queues/m/purge", {{"state", state}});
    ASSERT_EQ(purged.status, 200) << purged.body;
  }
  Reply metrics = get("/metrics");
  ASSERT_EQ(metrics.status, 200);
  EXPECT_EQ(metrics.body.find("readpast_jobs{queue=\"m\""), std::string::npos) << metrics.body;
  for (const char* line :
       {"# TYPE readpast_jobs_completed_total counter\n",
        "readpast_jobs_completed_total{queue=\"m\"} 1\n",
        "readpast_jobs_failed_total{queue=\"m\"} 1\n", "readpast_jobs_dead_total{queue=\"m\"} 1\n",
        "readpast_job_run_seconds_count{queue=\"m\"} 2\n",
        "readpast_job_wait_seconds_bucket{queue=\"m\",le=\"+Inf\"} 2\n",
        "readpast_lease_seconds_count{queue=\"m\"} 2\n"}) {
    EXPECT_NE(metrics.body.find(line), std::string::npos) << line << "\n" << metrics.body;
  }
}

TEST_P(AdminApiTest, WorkersListsReportedProcessesWithTheJobsTheyRun) {
  Reply none = get("/api/workers");
  ASSERT_EQ(none.status, 200) << none.body;
  EXPECT_TRUE(none.json["workers"].empty());
  EXPECT_TRUE(none.json.contains("database_time"));

  WorkerProcess process;
  process.name = "host-a/42";
  process.host = "host-a";
  process.pid = 42;
  process.queues = {"mail", "sms"};
  process.threads = 3;
  ASSERT_TRUE(queue().report_worker(process));
  const std::int64_t id = enqueue("mail");
  enqueue("mail");
  auto leased = queue().lease(LeaseRequest{"mail", "host-a/42", 1, 30s});
  ASSERT_TRUE(leased && leased->size() == 1u);
  lease_one("mail");  // leased by a worker that never reported: not listed

  Reply r = get("/api/workers");
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_EQ(r.json["workers"].size(), 1u) << r.body;
  const Json& w = r.json["workers"][0];
  EXPECT_EQ(w["name"], "host-a/42");
  EXPECT_EQ(w["host"], "host-a");
  EXPECT_EQ(w["pid"], 42);
  EXPECT_EQ(w["queues"], Json::array({"mail", "sms"}));
  EXPECT_EQ(w["threads"], 3);
  EXPECT_GE(w["heartbeat_age_s"].get<double>(), 0.0);
  EXPECT_LT(w["heartbeat_age_s"].get<double>(), 10.0);
  EXPECT_EQ(w["running"], 1);
  ASSERT_EQ(w["jobs"].size(), 1u);
  EXPECT_EQ(w["jobs"][0]["id"], id);
  EXPECT_EQ(w["jobs"][0]["queue"], "mail");
  EXPECT_GE(w["jobs"][0]["running_for_s"].get<double>(), 0.0);
  for (const char* field : {"started_at", "heartbeat_at"}) {
    EXPECT_TRUE(w[field].is_string()) << field;
  }
}

TEST_P(AdminApiTest, UnknownPathsAndMethodsAreJsonErrors) {
  Reply missing = get("/api/nothing");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.code(), "not_found");
  Reply wrong_method = get("/api/queues/q/pause");
  EXPECT_EQ(wrong_method.status, 405);
  EXPECT_EQ(wrong_method.code(), "method_not_allowed");
  EXPECT_EQ(wrong_method.header("Allow"), std::string("POST"));
}

INSTANTIATE_TEST_SUITE_P(Engines, AdminApiTest, ::testing::ValuesIn(engine_names()),
                         [](const ::testing::TestParamInfo<std::string>& engine) {
                           return engine.param;
                         });

}  // namespace
}  // namespace readpast::test
