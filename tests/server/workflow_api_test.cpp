// Progress, error history and unique windows through the HTTP API (docs/http.md), on every
// engine.
#include <string>

#include "server_fixture.hpp"

namespace readpast::test {
namespace {

class WorkflowApiTest : public ServerTest {};

TEST_P(WorkflowApiTest, ProgressIsRecordedUnderTheLeaseAndShownWithTheJob) {
  const std::int64_t id = enqueue("q");
  EXPECT_TRUE(job(id)["progress"].is_null());
  EXPECT_EQ(job(id)["errors"], Json::array());
  Json leased = lease_one("q");
  const std::string token = leased["lease_token"];
  const std::string path = "/api/jobs/" + std::to_string(id) + "/progress";
  const Json progress = {{"done", 3}, {"of", 10}, {"step", "resize"}};
  Reply r = post(path, {{"lease_token", token}, {"progress", progress}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json["id"], id);
  EXPECT_EQ(r.json["progress"], progress);
  EXPECT_EQ(job(id)["progress"], progress);
  // Any JSON value: a number, a string, null.
  for (const Json& value : {Json(0.5), Json("half"), Json(nullptr), Json::array({1, 2})}) {
    Reply any = post(path, {{"lease_token", token}, {"progress", value}});
    EXPECT_EQ(any.status, 200) << any.body;
    EXPECT_EQ(job(id)["progress"], value);
  }
}

TEST_P(WorkflowApiTest, ProgressWithAStaleTokenIs409AndChangesNothing) {
  const std::int64_t id = enqueue("q");
  Json leased = lease_one("q");
  const std::string token = leased["lease_token"];
  const std::string path = "/api/jobs/" + std::to_string(id) + "/progress";
  ASSERT_EQ(post(path, {{"lease_token", token}, {"progress", 1}}).status, 200);
  Reply stale = post(path, {{"lease_token", std::string(32, 'b')}, {"progress", 2}});
  EXPECT_EQ(stale.status, 409) << stale.body;
  EXPECT_EQ(stale.code(), "lease_lost");
  ASSERT_EQ(post("/api/jobs/" + std::to_string(id) + "/complete", {{"lease_token", token}}).status,
            200);
  Reply finished = post(path, {{"lease_token", token}, {"progress", 3}});
  EXPECT_EQ(finished.status, 409);
  EXPECT_EQ(finished.code(), "lease_lost");
  Reply missing = post("/api/jobs/999999/progress", {{"lease_token", token}, {"progress", 4}});
  EXPECT_EQ(missing.status, 409);
  EXPECT_EQ(job(id)["progress"], 1);
}

TEST_P(WorkflowApiTest, BadProgressBodiesAre400AndChangeNothing) {
  const std::int64_t id = enqueue("q");
  Json leased = lease_one("q");
  const std::string token = leased["lease_token"];
  const std::string path = "/api/jobs/" + std::to_string(id) + "/progress";
  ASSERT_EQ(post(path, {{"lease_token", token}, {"progress", "kept"}}).status, 200);
  Json deep = Json::array();
  for (int i = 0; i < 100; ++i) deep = Json::array({deep});
  for (const Json& body : {
           Json{{"lease_token", token}},                                         // no progress
           Json{{"progress", 1}},                                                // no token
           Json{{"lease_token", "zz"}, {"progress", 1}},                         // a bad token
           Json{{"lease_token", token}, {"progress", 1}, {"extra", true}},       // unknown field
           Json{{"lease_token", token}, {"progress", std::string(70000, 'x')}},  // > 64 KiB
           Json{{"lease_token", token}, {"progress", deep}},                     // too deep
       }) {
    Reply r = post(path, body);
    EXPECT_EQ(r.status, 400) << body.dump().substr(0, 80) << ": " << r.body;
    EXPECT_EQ(r.code(), "invalid_argument") << r.body;
  }
  for (const std::string& raw :
       {std::string("{"), std::string("[]"), std::string("\"x\""),
        std::string("{\"lease_token\": \"") + token + "\", \"progress\": }"}) {
    Reply r = post_raw(path, raw, "application/json");
    EXPECT_EQ(r.status, 400) << raw << ": " << r.body;
  }
  EXPECT_EQ(job(id)["progress"], "kept");
  EXPECT_EQ(job(id)["state"], "running");
}

TEST_P(WorkflowApiTest, TheJobListsEveryFailedAttempt) {
  const std::int64_t id = enqueue("q", {{"max_attempts", 2}});
  for (int attempt = 1; attempt <= 2; ++attempt) {
    Json leased = lease_one("q");
    ASSERT_TRUE(leased.is_object()) << attempt;
    Reply failed = post("/api/jobs/" + std::to_string(id) + "/fail",
                        {{"lease_token", leased["lease_token"]},
                         {"error", "bad " + std::to_string(attempt)},
                         {"retry_after", "0s"}});
    ASSERT_EQ(failed.status, 200) << failed.body;
  }
  Json dead = job(id);
  EXPECT_EQ(dead["state"], "dead");
  ASSERT_EQ(dead["errors"].size(), 2u) << dead.dump();
  EXPECT_EQ(dead["errors"][0]["attempt"], 1);
  EXPECT_EQ(dead["errors"][0]["error"], "bad 1");
  EXPECT_EQ(dead["errors"][0]["worker"], "test-worker");
  EXPECT_TRUE(dead["errors"][0]["at"].is_string());
  EXPECT_EQ(dead["errors"][1]["attempt"], 2);
  EXPECT_EQ(dead["errors"][1]["error"], "bad 2");
}

TEST_P(WorkflowApiTest, UniqueForRefusesTheKeyAfterItsJobSucceeded) {
  Reply first = post("/api/queues/q/jobs", {{"unique_key", "k"}, {"unique_for", "1h"}});
  ASSERT_EQ(first.status, 201) << first.body;
  Json leased = lease_one("q");
  ASSERT_EQ(post("/api/jobs/" + leased["id"].dump() + "/complete",
                 {{"lease_token", leased["lease_token"]}})
                .status,
            200);
  Reply again = post("/api/queues/q/jobs", {{"unique_key", "k"}});
  EXPECT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(again.json["inserted"], false);
  EXPECT_EQ(again.json["id"], first.json["id"]);
  for (const Json& bad :
       {Json{{"unique_for", "1h"}}, Json{{"unique_key", "k2"}, {"unique_for", "later"}},
        Json{{"unique_key", "k2"}, {"unique_for", "0s"}}}) {
    Reply r = post("/api/queues/q/jobs", bad);
    EXPECT_EQ(r.status, 400) << bad.dump() << ": " << r.body;
  }
  EXPECT_EQ(post("/api/queues/q/jobs", {{"unique_key", "k2"}}).status, 201);
}

INSTANTIATE_TEST_SUITE_P(Engines, WorkflowApiTest, ::testing::ValuesIn(engine_names()),
                         [](const ::testing::TestParamInfo<std::string>& engine) {
                           return engine.param;
                         });

}  // namespace
}  // namespace readpast::test
