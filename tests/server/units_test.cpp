// The server's small pure pieces: listen addresses, the router, body fields, the token
// comparison and base64.
#include <gtest/gtest.h>

#include "json/job_json.hpp"
#include "server/guard.hpp"
#include "server/json_body.hpp"
#include "server/listen_address.hpp"
#include "server/router.hpp"

namespace readpast::server {
namespace {

TEST(ServerUnitListenAddress, ParsesHostAndPortAndKnowsLoopback) {
  auto v4 = parse_listen_address("127.0.0.1:8080");
  ASSERT_TRUE(v4);
  EXPECT_EQ(v4->host, "127.0.0.1");
  EXPECT_EQ(v4->port, 8080);
  auto v6 = parse_listen_address("[::1]:0");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->to_string(), "[::1]:0");
  for (const char* bad : {"8080", ":8080", "::1:80", "[nope]:80", "a:99999", "a:x", "a:"}) {
    EXPECT_FALSE(parse_listen_address(bad)) << bad;
  }
  for (const char* loopback : {"127.0.0.1", "127.1.2.3", "::1", "localhost"}) {
    EXPECT_TRUE(is_loopback_host(loopback)) << loopback;
  }
  for (const char* open : {"0.0.0.0", "::", "10.0.0.1", "example.com", "128.0.0.1"}) {
    EXPECT_FALSE(is_loopback_host(open)) << open;
  }
}

TEST(ServerUnitRouter, MatchesSegmentsAndParameters) {
  Router router;
  router.add("GET", "/api/jobs/{id}", [](const HttpRequest& r) {
    return HttpResponse{200, "text/plain", std::string(r.param("id")), {}};
  });
  router.add("POST", "/api/jobs/{id}/retry", [](const HttpRequest&) {
    return HttpResponse{200, "text/plain", "retried", {}};
  });
  auto request = [](std::string method, std::string path) {
    HttpRequest r;
    r.method = std::move(method);
    r.path = std::move(path);
    return r;
  };
  HttpRequest get = request("GET", "/api/jobs/42/");
  EXPECT_EQ(router.dispatch(get).body, "42");
  HttpRequest post = request("POST", "/api/jobs/42/retry");
  EXPECT_EQ(router.dispatch(post).body, "retried");
  HttpRequest wrong = request("DELETE", "/api/jobs/42");
  HttpResponse refused = router.dispatch(wrong);
  EXPECT_EQ(refused.status, 405);
  HttpRequest missing = request("GET", "/api/jobs/42/retry/now");
  EXPECT_EQ(router.dispatch(missing).status, 404);
}

TEST(ServerUnitJsonBody, ReadsTypedFieldsAndRefusesTheRest) {
  auto body = JsonBody::parse(R"({"d": "1m30s", "n": 2.5, "i": 7, "t": "2026-11-22T10:00:00Z"})");
  ASSERT_TRUE(body);
  EXPECT_EQ(body->duration("d").value(), std::chrono::seconds(90));
  EXPECT_EQ(body->duration("n").value(), std::chrono::milliseconds(2500));
  EXPECT_EQ(body->int_in("i", 1, 10).value(), 7);
  EXPECT_FALSE(body->int_in("i", 8, 10));
  EXPECT_TRUE(body->time("t").value());
  EXPECT_FALSE(body->text("i"));
  EXPECT_FALSE(body->only({"d", "n", "i"}));
  EXPECT_EQ(body->text("absent").value(), std::nullopt);
  EXPECT_TRUE(JsonBody::parse("  "));
  EXPECT_FALSE(JsonBody::parse("[]"));
  EXPECT_FALSE(JsonBody::parse("{"));
}

TEST(ServerUnitGuard, ConstantTimeEqualAndHostPorts) {
  EXPECT_TRUE(constant_time_equal("abcdefgh", "abcdefgh"));
  EXPECT_FALSE(constant_time_equal("abcdefg", "abcdefgh"));
  EXPECT_FALSE(constant_time_equal("abcdefghabcdefgh", "abcdefgh"));
  EXPECT_FALSE(constant_time_equal("", "abcdefgh"));
  EXPECT_FALSE(constant_time_equal("", ""));
  EXPECT_EQ(host_without_port("[::1]:8080"), "::1");
  EXPECT_EQ(host_without_port("localhost:8080"), "localhost");
  EXPECT_EQ(host_without_port("localhost"), "localhost");
}

TEST(ServerUnitJson, Base64RoundTrips) {
  for (std::string bytes : {std::string(), std::string("f"), std::string("fo"), std::string("foo"),
                            std::string("\0\xff\x10\x80", 4)}) {
    auto decoded = json::base64_decode(json::base64_encode(bytes));
    ASSERT_TRUE(decoded);
    EXPECT_EQ(*decoded, bytes);
  }
  EXPECT_EQ(json::base64_decode("AB==").value(), std::string(1, '\0'));
  for (const char* bad : {"A", "AB=C", "A===", "****"}) {
    EXPECT_FALSE(json::base64_decode(bad)) << bad;
  }
}

}  // namespace
}  // namespace readpast::server
