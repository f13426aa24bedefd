// GET, PUT and DELETE /api/queues/Q/limits (docs/http.md "Global limits") on every engine: the
// limits reach every client, show in /api/queues, and bad bodies change nothing.
#include "server_fixture.hpp"

namespace readpast::test {
namespace {

class QueueLimitsApiTest : public ServerTest {
 protected:
  Reply put(const std::string& path, const Json& body) const {
    return reply(client()->Put(path, body.dump(), "application/json"));
  }
  Reply del(const std::string& path, const Json& body = Json::object()) const {
    return reply(client()->Delete(path, body.dump(), "application/json"));
  }
};

TEST_P(QueueLimitsApiTest, PutGetAndDeleteLimitsAndLeasesObeyThem) {
  for (int i = 0; i < 5; ++i) enqueue("mail");
  Reply none = get("/api/queues/mail/limits");
  ASSERT_EQ(none.status, 200) << none.body;
  EXPECT_EQ(none.json, (Json{{"queue", "mail"}, {"running", nullptr}, {"rate", nullptr}}));

  Reply set = put("/api/queues/mail/limits", {{"running", 2}});
  ASSERT_EQ(set.status, 200) << set.body;
  EXPECT_EQ(set.json["running"], 2);
  set = put("/api/queues/mail/limits", {{"rate", "100/1s"}});
  EXPECT_EQ(set.json, (Json{{"queue", "mail"}, {"running", 2}, {"rate", "100/1s"}}))
      << "setting the rate dropped the running limit";

  Reply leased = post("/api/queues/mail/lease", {{"worker_id", "w"}, {"max_jobs", 5}});
  ASSERT_EQ(leased.status, 200) << leased.body;
  EXPECT_EQ(leased.json["jobs"].size(), 2u) << "the HTTP lease went past the running limit";
  EXPECT_EQ(queue().limits("mail")->running, 2) << "not in the database";

  Json stats = get("/api/queues/mail").json;
  EXPECT_EQ(stats["limits"], (Json{{"running", 2}, {"rate", "100/1s"}}));
  Json all = get("/api/queues").json;
  ASSERT_EQ(all["queues"].size(), 1u);
  EXPECT_EQ(all["queues"][0]["limits"]["rate"], "100/1s");

  Reply cleared = del("/api/queues/mail/limits");
  ASSERT_EQ(cleared.status, 200) << cleared.body;
  EXPECT_EQ(cleared.json, (Json{{"queue", "mail"}, {"running", nullptr}, {"rate", nullptr}}));
  leased = post("/api/queues/mail/lease", {{"worker_id", "w"}, {"max_jobs", 5}});
  EXPECT_EQ(leased.json["jobs"].size(), 3u) << "cleared limits still held back the lease";
}

TEST_P(QueueLimitsApiTest, BadLimitBodiesAre400AndChangeNothing) {
  ASSERT_EQ(put("/api/queues/q/limits", {{"running", 3}}).status, 200);
  for (const Json& body :
       {Json{{"running", 0}}, Json{{"running", -1}}, Json{{"running", "3"}}, Json{{"rate", "5/0s"}},
        Json{{"rate", "x/1s"}}, Json{{"rate", "5/"}}, Json{{"rate", "/1s"}}, Json{{"rate", 5}},
        Json::object(), Json{{"running", 1}, {"burst", 2}}, Json{{"running", 2000000000}}}) {
    Reply r = put("/api/queues/q/limits", body);
    EXPECT_EQ(r.status, 400) << body.dump() << " " << r.body;
    EXPECT_EQ(r.json["error"]["code"], "invalid_argument") << r.body;
  }
  EXPECT_EQ(del("/api/queues/q/limits", {{"running", 1}}).status, 400)
      << "DELETE takes an empty body";
  EXPECT_EQ(put("/api/queues/bad%20name/limits", {{"running", 1}}).status, 400);
  EXPECT_EQ(get("/api/queues/q/limits").json["running"], 3) << "a refused body changed the limits";
  EXPECT_EQ(post("/api/queues/q/limits", {{"running", 1}}).status, 405);
}

INSTANTIATE_TEST_SUITE_P(Engines, QueueLimitsApiTest, ::testing::ValuesIn(engine_names()),
                         [](const ::testing::TestParamInfo<std::string>& engine) {
                           return engine.param;
                         });

}  // namespace
}  // namespace readpast::test
