// The worker's side of the HTTP API on every engine: enqueue, lease and the calls fenced by
// the lease token, exactly as a worker written in any language would use them.
#include <chrono>
#include <thread>

#include "server_fixture.hpp"

namespace readpast::test {
namespace {

using namespace std::chrono_literals;

class WorkerApiTest : public ServerTest {};

TEST_P(WorkerApiTest, EnqueueLeaseCompleteThenTheTokenIsSpent) {
  std::int64_t id = enqueue("emails", {{"payload", "hello"}, {"priority", 5}});
  ASSERT_GT(id, 0);

  Json job = lease_one("emails");
  ASSERT_TRUE(job.is_object());
  EXPECT_EQ(job["id"], id);
  EXPECT_EQ(job["state"], "running");
  EXPECT_EQ(job["attempts"], 1);
  EXPECT_EQ(job["payload"], "hello");
  EXPECT_EQ(job["priority"], 5);
  EXPECT_EQ(job["leased_by"], "test-worker");
  std::string token = job["lease_token"];
  ASSERT_EQ(token.size(), 32u);

  std::string path = "/api/jobs/" + std::to_string(id);
  Reply done = post(path + "/complete", {{"lease_token", token}});
  EXPECT_EQ(done.status, 200) << done.body;
  EXPECT_EQ(done.json["state"], "succeeded");

  Reply again = post(path + "/complete", {{"lease_token", token}});
  EXPECT_EQ(again.status, 409);
  EXPECT_EQ(again.code(), "lease_lost");
  EXPECT_EQ(this->job(id)["state"], "succeeded");
}

TEST_P(WorkerApiTest, AStaleTokenIsFencedOffOnEverySettlingCall) {
  std::int64_t id = enqueue("q");
  Json first = lease_one("q", "200ms");
  ASSERT_TRUE(first.is_object());
  std::string stale = first["lease_token"];
  // The lease runs out; another worker gets the job (the lease rescues expired ones).
  Json second;
  for (int i = 0; i < 100 && !second.is_object(); ++i) {
    std::this_thread::sleep_for(50ms);
    second = lease_one("q");
  }
  ASSERT_TRUE(second.is_object());
  ASSERT_EQ(second["id"], id);
  std::string current = second["lease_token"];
  ASSERT_NE(stale, current);

  std::string path = "/api/jobs/" + std::to_string(id);
  for (const char* call : {"/complete", "/extend", "/release"}) {
    Reply r = post(path + call, {{"lease_token", stale}});
    EXPECT_EQ(r.status, 409) << call << ": " << r.body;
    EXPECT_EQ(r.code(), "lease_lost") << call;
  }
  Reply failed = post(path + "/fail", {{"lease_token", stale}, {"error", "late"}});
  EXPECT_EQ(failed.code(), "lease_lost");

  Json now = job(id);
  EXPECT_EQ(now["state"], "running");
  EXPECT_EQ(now["lease_token"], current);
  EXPECT_NE(now["last_error"], "late");
  EXPECT_EQ(post(path + "/complete", {{"lease_token", current}}).status, 200);
}

// docs/http.md: settling a job that does not exist is 409 lease_lost, as on every other
// path (the library, SQL): no lease is held on it, whether it never existed or was purged.
TEST_P(WorkerApiTest, SettlingAJobThatDoesNotExistIsLeaseLost) {
  const std::string token = "9f0c7a6e2b1d4c3f8e5a6b7c8d9e0f1a";
  for (const char* call : {"/complete", "/extend", "/release", "/fail"}) {
    Reply r = post(std::string("/api/jobs/999999") + call, {{"lease_token", token}});
    EXPECT_EQ(r.status, 409) << call << ": " << r.body;
    EXPECT_EQ(r.code(), "lease_lost") << call;
  }
}

TEST_P(WorkerApiTest, ExtendReleaseAndFailMoveTheJobAsTheLibraryDoes) {
  std::int64_t id = enqueue("q", {{"max_attempts", 2}});
  std::string path = "/api/jobs/" + std::to_string(id);

  Json leased = lease_one("q");
  Reply extended = post(path + "/extend", {{"lease_token", leased["lease_token"]}, {"lease", 60}});
  EXPECT_EQ(extended.status, 200) << extended.body;
  EXPECT_EQ(extended.json["lease"], "1m");
  Reply released =
      post(path + "/release", {{"lease_token", leased["lease_token"]}, {"delay", "0s"}});
  EXPECT_EQ(released.status, 200) << released.body;
  EXPECT_EQ(job(id)["attempts"], 0);  // a release spends no attempt

  leased = lease_one("q");
  Reply retrying = post(
      path + "/fail",
      {{"lease_token", leased["lease_token"]}, {"error", "smtp timeout"}, {"retry_after", "0s"}});
  EXPECT_EQ(retrying.status, 200) << retrying.body;
  EXPECT_EQ(retrying.json["state"], "available");
  EXPECT_EQ(job(id)["last_error"], "smtp timeout");

  leased = lease_one("q");
  ASSERT_TRUE(leased.is_object());
  Reply dead =
      post(path + "/fail", {{"lease_token", leased["lease_token"]}, {"error", "still down"}});
  EXPECT_EQ(dead.json["state"], "dead");
  EXPECT_EQ(job(id)["state"], "dead");
}

TEST_P(WorkerApiTest, BatchEnqueueIsAllOrNothing) {
  Reply ok =
      post("/api/queues/q/jobs/batch",
           {{"jobs", Json::array({{{"payload", "a"}}, {{"payload", "b"}}, Json::object()})}});
  ASSERT_EQ(ok.status, 201) << ok.body;
  ASSERT_EQ(ok.json["jobs"].size(), 3u);
  EXPECT_LT(ok.json["jobs"][0]["id"], ok.json["jobs"][1]["id"]);

  Reply bad = post("/api/queues/q/jobs/batch",
                   {{"jobs", Json::array({{{"payload", "c"}}, {{"priority", "high"}}})}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.code(), "invalid_argument");
  EXPECT_NE(bad.json["error"]["message"].get<std::string>().find("jobs[1]"), std::string::npos);
  EXPECT_EQ(get("/api/queues/q").json["available"], 3);
}

TEST_P(WorkerApiTest, PayloadsAreTextJsonOrBase64Bytes) {
  std::int64_t text = enqueue("q", {{"payload", "plain <b>text</b>"}});
  std::int64_t object = enqueue("q", {{"payload", {{"to", "a@example.com"}, {"n", 1}}}});
  std::int64_t bytes = enqueue("q", {{"payload_base64", "AP8A"}});  // 00 ff 00

  EXPECT_EQ(job(text)["payload"], "plain <b>text</b>");
  EXPECT_EQ(Json::parse(job(object)["payload"].get<std::string>()),
            Json({{"to", "a@example.com"}, {"n", 1}}));
  Json binary = job(bytes);
  EXPECT_EQ(binary["payload_encoding"], "base64");
  EXPECT_EQ(binary["payload"], "AP8A");
  auto stored = queue().get(bytes);
  ASSERT_TRUE(stored);
  EXPECT_EQ(stored->payload, std::string("\0\xff\0", 3));

  EXPECT_EQ(post("/api/queues/q/jobs", {{"payload_base64", "not base64!"}}).status, 400);
  EXPECT_EQ(post("/api/queues/q/jobs", {{"payload", "a"}, {"payload_base64", "AA=="}}).status, 400);
}

TEST_P(WorkerApiTest, UniqueKeyAndSchedulingOptions) {
  Reply first = post("/api/queues/q/jobs", {{"unique_key", "order-7"}});
  Reply second = post("/api/queues/q/jobs", {{"unique_key", "order-7"}});
  EXPECT_EQ(first.status, 201);
  EXPECT_EQ(second.status, 200);
  EXPECT_EQ(second.json["inserted"], false);
  EXPECT_EQ(second.json["id"], first.json["id"]);

  enqueue("later", {{"delay", "1h"}});
  enqueue("later", {{"run_at", "2099-01-01T00:00:00Z"}});
  Json stats = get("/api/queues/later").json;
  EXPECT_EQ(stats["available"], 2);
  EXPECT_EQ(stats["scheduled"], 2);
  EXPECT_TRUE(lease_one("later").is_null());

  Reply both = post("/api/queues/q/jobs", {{"delay", "1s"}, {"run_at", "2099-01-01T00:00:00Z"}});
  EXPECT_EQ(both.status, 400);
}

TEST_P(WorkerApiTest, LeaseHandsOutUpToMaxJobsInPriorityOrder) {
  enqueue("q", {{"payload", "low"}, {"priority", 200}});
  enqueue("q", {{"payload", "high"}, {"priority", 1}});
  enqueue("q", {{"payload", "mid"}});
  Reply r = post("/api/queues/q/lease", {{"worker_id", "w"}, {"max_jobs", 2}});
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_EQ(r.json["jobs"].size(), 2u);
  EXPECT_EQ(r.json["jobs"][0]["payload"], "high");
  EXPECT_EQ(r.json["jobs"][1]["payload"], "mid");

  EXPECT_EQ(post("/api/queues/q/lease", Json::object()).status, 400);  // worker_id required
  EXPECT_EQ(post("/api/queues/q/lease", {{"worker_id", "w"}, {"max_jobs", 0}}).status, 400);
}

INSTANTIATE_TEST_SUITE_P(Engines, WorkerApiTest, ::testing::ValuesIn(engine_names()),
                         [](const ::testing::TestParamInfo<std::string>& engine) {
                           return engine.param;
                         });

}  // namespace
}  // namespace readpast::test
