// Dependencies through the HTTP API on every engine: "after" in an enqueue body, the
// dependencies in GET /api/jobs/ID, release when the last dependency completes through the
// API (serve's maintenance tells the dependents), and the refusals of a bad "after".
#include "server_fixture.hpp"

namespace readpast::test {
namespace {

using namespace std::chrono_literals;

class DependenciesApiTest : public ServerTest {};

TEST_P(DependenciesApiTest, AJobEnqueuedAfterAnotherWaitsAndShowsBothEnds) {
  std::int64_t first = enqueue("a", {{"payload", "one"}});
  std::int64_t second = enqueue("b", {{"payload", "two"}, {"after", {first}}});
  Json waiting = job(second);
  EXPECT_EQ(waiting["state"], "waiting");
  ASSERT_EQ(waiting["after"].size(), 1u);
  EXPECT_EQ(waiting["after"][0]["id"], first);
  EXPECT_EQ(waiting["after"][0]["state"], "available");
  EXPECT_EQ(waiting["after"][0]["met"], false);
  EXPECT_EQ(job(first)["dependents"][0]["id"], second);
  EXPECT_EQ(job(first)["dependent_count"], 1);
  EXPECT_TRUE(lease_one("b").is_null()) << "a waiting job was leased";

  Json leased = lease_one("a");
  ASSERT_EQ(leased["id"], first);
  Reply done = post("/api/jobs/" + std::to_string(first) + "/complete",
                    {{"lease_token", leased["lease_token"]}});
  ASSERT_EQ(done.status, 200) << done.body;
  // The server's maintenance tells the dependent (no worker leases meanwhile).
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (job(second)["state"] != "available" && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(job(second)["state"], "available");
  EXPECT_EQ(job(second)["after"][0]["met"], true);
  Reply stats = get("/api/queues");
  ASSERT_EQ(stats.status, 200) << stats.body;
}

TEST_P(DependenciesApiTest, ABadAfterIsRefusedAndNothingIsEnqueued) {
  std::int64_t first = enqueue("a", {{"payload", "one"}});
  for (const Json& after :
       {Json{first + 100}, Json{0}, Json{"1"}, Json(5), Json{first, first}, Json{1.5}}) {
    Reply r = post("/api/queues/b/jobs", {{"payload", "x"}, {"after", after}});
    EXPECT_EQ(r.status, 400) << after.dump() << " " << r.body;
    EXPECT_FALSE(r.code().empty()) << r.body;
  }
  Reply listed = get("/api/jobs?queue=b");
  ASSERT_EQ(listed.status, 200) << listed.body;
  EXPECT_TRUE(listed.json["jobs"].empty()) << listed.body;
}

TEST_P(DependenciesApiTest, AGroupAndItsCallbackThroughTheApi) {
  std::int64_t member = enqueue("a", {{"payload", "m"}, {"group", "batch-1"}});
  std::int64_t callback = enqueue("b", {{"payload", "cb"}, {"after_group", "batch-1"}});
  EXPECT_EQ(job(callback)["state"], "waiting");
  EXPECT_EQ(job(member)["group"], "batch-1");
  Reply group = get("/api/groups/batch-1");
  ASSERT_EQ(group.status, 200) << group.body;
  EXPECT_EQ(group.json["available"], 1);
  EXPECT_EQ(group.json["waiters"], 1);
  ASSERT_EQ(group.json["members"].size(), 1u);
  EXPECT_EQ(group.json["members"][0]["id"], member);
  EXPECT_EQ(get("/api/groups/no-such").status, 404);
  EXPECT_EQ(get("/api/groups/bad%20name").status, 400);
  Reply refused = post("/api/queues/b/jobs", {{"payload", "x"}, {"after_group", "no-such"}});
  EXPECT_EQ(refused.status, 400) << refused.body;
  Reply bad_type = post("/api/queues/b/jobs", {{"payload", "x"}, {"group", 5}});
  EXPECT_EQ(bad_type.status, 400) << bad_type.body;

  Json leased = lease_one("a");
  ASSERT_EQ(leased["id"], member);
  ASSERT_EQ(post("/api/jobs/" + std::to_string(member) + "/complete",
                 {{"lease_token", leased["lease_token"]}})
                .status,
            200);
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (job(callback)["state"] != "available" && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(job(callback)["state"], "available");
}

INSTANTIATE_TEST_SUITE_P(Engines, DependenciesApiTest, ::testing::ValuesIn(engine_names()),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           return param_info.param;
                         });

}  // namespace
}  // namespace readpast::test
