// Who may talk to the server, on every engine: the bearer token, the Host check against DNS
// rebinding, and the refusal of cross-site requests. A refused request changes nothing.
#include "server_fixture.hpp"

namespace readpast::test {
namespace {

constexpr const char* kToken = "s3cret-token-of-some-length";

class TokenTest : public ServerTest {
 protected:
  server::ServerOptions options() const override {
    auto options = ServerTest::options();
    options.token = kToken;
    return options;
  }
  static httplib::Headers bearer(const std::string& token) {
    return {{"Authorization", "Bearer " + token}};
  }
};

TEST_P(TokenTest, EveryRequestForDataNeedsTheToken) {
  for (const char* path : {"/api/queues", "/api/jobs", "/metrics", "/healthz"}) {
    Reply none = get(path);
    EXPECT_EQ(none.status, 401) << path;
    EXPECT_EQ(none.code(), "unauthorized") << path;
    EXPECT_EQ(none.header("WWW-Authenticate"), std::string("Bearer"));
    EXPECT_EQ(get(path, bearer("wrong-token-of-some-length")).status, 401) << path;
    EXPECT_EQ(get(path, bearer(std::string(kToken) + "x")).status, 401) << path;
    EXPECT_EQ(get(path, bearer(std::string(kToken).substr(1))).status, 401) << path;
    EXPECT_EQ(get(path, bearer(kToken)).status, 200) << path;
  }
  EXPECT_EQ(get("/api/queues", {{"Authorization", kToken}}).status, 401);  // no "Bearer "

  Reply refused = post("/api/queues/q/jobs", {{"payload", "x"}});
  EXPECT_EQ(refused.status, 401);
  Reply accepted = post("/api/queues/q/jobs", {{"payload", "x"}}, bearer(kToken));
  EXPECT_EQ(accepted.status, 201) << accepted.body;
  auto stats = queue().stats("q");
  ASSERT_TRUE(stats);
  EXPECT_EQ(stats->at(0).available, 1);
}

TEST_P(TokenTest, TheDashboardFilesHoldNoDataAndAreServedWithoutIt) {
  Reply page = get("/");
  EXPECT_EQ(page.status, 200);
  EXPECT_NE(page.body.find("<!doctype html>"), std::string::npos);
  EXPECT_EQ(get("/assets/app.js").status, 200);
  EXPECT_EQ(get("/jobs/1").status, 200);
}

INSTANTIATE_TEST_SUITE_P(Engines, TokenTest, ::testing::ValuesIn(engine_names()),
                         [](const ::testing::TestParamInfo<std::string>& engine) {
                           return engine.param;
                         });

class CrossSiteTest : public ServerTest {
 protected:
  std::string origin() const { return "http://127.0.0.1:" + std::to_string(port()); }
};

TEST_P(CrossSiteTest, RequestsFromOtherSitesChangeNothing) {
  std::int64_t id = enqueue("q");
  std::string cancel = "/api/jobs/" + std::to_string(id) + "/cancel";

  Reply other_origin = post(cancel, Json::object(), {{"Origin", "http://evil.example"}});
  EXPECT_EQ(other_origin.status, 403);
  EXPECT_EQ(other_origin.code(), "forbidden");
  Reply other_port = post(cancel, Json::object(), {{"Origin", "http://127.0.0.1:1"}});
  EXPECT_EQ(other_port.status, 403);
  Reply opaque = post(cancel, Json::object(), {{"Origin", "null"}});
  EXPECT_EQ(opaque.status, 403);
  Reply fetch_metadata = post(cancel, Json::object(), {{"Sec-Fetch-Site", "cross-site"}});
  EXPECT_EQ(fetch_metadata.status, 403);
  // What an HTML form on another site can send: no JSON content type.
  for (const char* type : {"application/x-www-form-urlencoded", "text/plain"}) {
    Reply form = post_raw(cancel, "a=b", type);
    EXPECT_EQ(form.status, 415) << type;
    EXPECT_EQ(form.code(), "unsupported_media_type");
  }
  // (cpp-httplib refuses a malformed multipart body itself, before the guard sees it.)
  Reply multipart = post_raw(cancel, "a=b", "multipart/form-data");
  EXPECT_GE(multipart.status, 400);
  EXPECT_LT(multipart.status, 500);
  EXPECT_EQ(job(id)["state"], "available");

  // The dashboard's own requests: same origin, JSON.
  Reply own =
      post(cancel, Json::object(), {{"Origin", origin()}, {"Sec-Fetch-Site", "same-origin"}});
  EXPECT_EQ(own.status, 200) << own.body;
  EXPECT_EQ(job(id)["state"], "cancelled");
}

TEST_P(CrossSiteTest, ALoopbackServerAnswersOnlyLoopbackHostNames) {
  Reply rebound = get("/api/queues", {{"Host", "attacker.example:" + std::to_string(port())}});
  EXPECT_EQ(rebound.status, 403);
  EXPECT_EQ(rebound.code(), "forbidden");
  EXPECT_EQ(get("/", {{"Host", "attacker.example"}}).status, 403);
  EXPECT_EQ(get("/api/queues", {{"Host", "localhost:" + std::to_string(port())}}).status, 200);
  EXPECT_EQ(get("/api/queues", {{"Host", "[::1]:" + std::to_string(port())}}).status, 200);
}

INSTANTIATE_TEST_SUITE_P(Engines, CrossSiteTest, ::testing::ValuesIn(engine_names()),
                         [](const ::testing::TestParamInfo<std::string>& engine) {
                           return engine.param;
                         });

TEST(ServerOptions, AnAddressBeyondLoopbackNeedsAToken) {
  server::ServerOptions options;
  options.listen = {"0.0.0.0", 0};
  auto refused = server::validate(options);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kInvalidArgument);
  EXPECT_NE(refused.error().message.find("token"), std::string::npos);
  options.token = "short";
  EXPECT_FALSE(server::validate(options));
  options.token = kToken;
  EXPECT_TRUE(server::validate(options));
  options.listen = {"::1", 0};
  options.token.reset();
  EXPECT_TRUE(server::validate(options));
}

}  // namespace
}  // namespace readpast::test
