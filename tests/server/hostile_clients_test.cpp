// `readpast serve` with a token, started as a user starts it, against clients that attack
// it (issue 17's findings), on every engine: paths spelt to slip past the token, bodies
// nested to crash the parser, bodies and headers that never end, clients that trickle or
// crowd. Each attack must be refused quickly, change nothing, and leave the server serving
// with bounded memory.
#include <gtest/gtest.h>
#include <signal.h>

#include <regex>
#include <thread>

#include "cli/cli_runner.hpp"
#include "raw_client.hpp"
#include "readpast/readpast.hpp"
#include "support/engines.hpp"
#include "support/temp_dir.hpp"

namespace readpast::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr std::string_view kToken = "hostile-test-token-0123456789";
constexpr std::int64_t kMiB = 1 << 20;

std::string request(std::string_view method, std::string_view target, bool with_token,
                    std::string_view body = "") {
  std::string text = std::string(method) + " " + std::string(target) + " HTTP/1.1\r\n";
  text += "Host: 127.0.0.1\r\n";
  if (with_token) text += "Authorization: Bearer " + std::string(kToken) + "\r\n";
  if (method != "GET") {
    text +=
        "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  }
  text += "Connection: close\r\n\r\n";
  text += body;
  return text;
}

class HostileClientsTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    url_ = engine_named(GetParam()).fresh_url();
    ASSERT_EQ(run_readpast(dir_.path(), {"--db=" + url_, "init"}).exit_code, 0);
  }

  void TearDown() override {
    if (!server_) return;
    server_->send_signal(SIGTERM);
    RunResult result = server_->wait(15s);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    EXPECT_EQ(result.err.find(kToken), std::string::npos) << "the token was logged";
  }

  // Starts `readpast serve` on a free loopback port with the token, and any more options.
  void serve(std::vector<std::string> more = {}) {
    std::vector<std::string> args = {"--db=" + url_, "serve", "--listen", "127.0.0.1:0"};
    args.insert(args.end(), more.begin(), more.end());
    server_ = std::make_unique<ReadpastProcess>(
        dir_.path(), args, environment({"READPAST_TOKEN=" + std::string(kToken)}));
    const Serving serving = wait_until_serving(*server_);
    ASSERT_TRUE(serving.port) << serving.log;
    port_ = *serving.port;
  }

  // The server answers an authorised /healthz within `timeout`.
  bool healthy(std::chrono::milliseconds timeout = 3s) const {
    auto r = raw_exchange(port_, request("GET", "/healthz", true), timeout);
    return r && r->status == 200;
  }

  std::int64_t jobs_in_database() const {
    auto queue = Queue::open(url_);
    EXPECT_TRUE(queue) << queue.error().message;
    if (!queue) return -1;
    auto stats = queue->stats();
    EXPECT_TRUE(stats);
    std::int64_t total = 0;
    for (const auto& s : *stats) total += s.available + s.running + s.succeeded + s.dead;
    return total;
  }

  TempDir dir_;
  std::string url_;
  std::unique_ptr<ReadpastProcess> server_;
  int port_ = 0;
};

TEST_P(HostileClientsTest, EverySpellingOfAnApiPathNeedsTheTokenAndChangesNothing) {
  serve();
  // Each of these is /api/... to some reader; none may be served without the token.
  const std::vector<std::string> spellings = {"/api/jobs",
                                              "//api/jobs",
                                              "/%2Fapi/jobs",
                                              "//api//jobs",
                                              "/api//jobs",
                                              "/./api/jobs",
                                              "/api/./jobs",
                                              "/x/../api/jobs",
                                              "/%2e%2e/api/jobs",
                                              "/%2E/api/jobs",
                                              "/api/jobs/",
                                              "/api%2Fjobs",
                                              "/%61pi/jobs",
                                              "/api/jobs%00",
                                              "/api\\jobs",
                                              "/api/%2e/jobs",
                                              "/api/jobs?x=/..",
                                              "/api/jobs#x",
                                              "///api/jobs",
                                              "/api/jobs/%2F",
                                              "/%2fapi%2fjobs",
                                              "/api/queues",
                                              "/metrics",
                                              "/healthz",
                                              "http://127.0.0.1/api/jobs",
                                              "/api",
                                              "/api/",
                                              "/api/no-such-route",
                                              "/jobs/../api/jobs",
                                              "/assets/../api/jobs"};
  for (const auto& path : spellings) {
    auto r = raw_exchange(port_, request("GET", path, false), 5s);
    ASSERT_TRUE(r) << path;
    EXPECT_TRUE(r->status == 400 || r->status == 401) << path << " → " << r->head;
    EXPECT_EQ(r->body.find("\"jobs\""), std::string::npos) << path << " leaked " << r->body;
  }
  const std::string body = R"({"payload": "evil"})";
  for (std::string prefix : {"/", "//", "/%2F", "/./", "/x/../", "/%61"}) {
    for (std::string path : {prefix + "api/queues/evil/jobs", prefix + "api//queues/evil/jobs",
                             prefix + "api/queues/evil//jobs", prefix + "api/queues/evil/jobs/"}) {
      auto r = raw_exchange(port_, request("POST", path, false, body), 5s);
      ASSERT_TRUE(r) << path;
      EXPECT_TRUE(r->status == 400 || r->status == 401) << path << " → " << r->head;
    }
  }
  EXPECT_EQ(jobs_in_database(), 0);
  // With the token, the one canonical spelling works.
  auto ok = raw_exchange(port_, request("POST", "/api/queues/good/jobs", true, body), 5s);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 201) << ok->body;
  EXPECT_EQ(jobs_in_database(), 1);
}

TEST_P(HostileClientsTest, DeeplyNestedJsonIsRefusedWhileParsingAndTheServerLives) {
  serve();
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const std::vector<std::pair<std::string, std::string>> bodies = {
      {"/api/queues/q/jobs", R"({"payload": )" + deep + "}"},
      {"/api/queues/q/jobs/batch", R"({"jobs": [{"payload": )" + deep + "}]}"},
      {"/api/jobs/1/fail",
       R"({"lease_token": "00000000000000000000000000000000", "error": )" + deep + "}"},
      {"/api/queues/q/lease", "{\"worker_id\": " + std::string(300, '{')},
  };
  for (const auto& [path, body] : bodies) {
    auto r = raw_exchange(port_, request("POST", path, true, body), 10s);
    ASSERT_TRUE(r) << path << ": no answer (did the server crash?)";
    EXPECT_EQ(r->status, 400) << path << " → " << r->body;
  }
  // Just within the limit is fine.
  const std::string ok_body =
      R"({"payload": )" + std::string(250, '[') + std::string(250, ']') + "}";
  auto ok = raw_exchange(port_, request("POST", "/api/queues/q/jobs", true, ok_body), 10s);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 201) << ok->body;
  EXPECT_TRUE(healthy());
  EXPECT_EQ(jobs_in_database(), 1);
}

// Sends a chunked body of up to `total` bytes, stopping as soon as the server answers; the
// response, and how much was sent before it.
struct Streamed {
  std::optional<RawResponse> response;
  std::int64_t sent = 0;
};
Streamed stream_chunked(RawClient& client, std::int64_t total) {
  const std::string chunk = "100000\r\n" + std::string(0x100000, 'x') + "\r\n";
  Streamed out;
  while (out.sent < total && !client.readable()) {
    if (!client.send(chunk)) break;
    out.sent += 0x100000;
  }
  out.response = client.response(5s);
  return out;
}

TEST_P(HostileClientsTest, AnEndlessChunkedBodyWithoutTheTokenIsAnsweredBeforeItIsRead) {
  serve();
  const std::int64_t rss_before = peak_rss_bytes(server_->pid());
  const auto started = Clock::now();
  RawClient client(port_);
  ASSERT_TRUE(
      client.send("POST /api/queues/q/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                  "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"));
  Streamed result = stream_chunked(client, 300 * kMiB);
  ASSERT_TRUE(result.response) << "no answer after " << result.sent << " bytes";
  EXPECT_EQ(result.response->status, 401);
  EXPECT_LT(Clock::now() - started, 10s);
  EXPECT_LT(peak_rss_bytes(server_->pid()) - rss_before, 128 * kMiB);
  EXPECT_TRUE(healthy());
  EXPECT_EQ(jobs_in_database(), 0);
}

TEST_P(HostileClientsTest, AChunkedBodyWithTheTokenStopsAtTheBodyLimit) {
  serve({"--max-body", "1MiB"});
  const std::int64_t rss_before = peak_rss_bytes(server_->pid());
  RawClient client(port_);
  ASSERT_TRUE(
      client.send("POST /api/queues/q/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                  "Authorization: Bearer " +
                  std::string(kToken) +
                  "\r\nContent-Type: application/json\r\n"
                  "Transfer-Encoding: chunked\r\n\r\n"));
  Streamed result = stream_chunked(client, 300 * kMiB);
  ASSERT_TRUE(result.response) << "no answer after " << result.sent << " bytes";
  EXPECT_EQ(result.response->status, 413) << result.response->body;
  EXPECT_LT(result.sent, 64 * kMiB);
  EXPECT_LT(peak_rss_bytes(server_->pid()) - rss_before, 128 * kMiB);
  // A declared length over the limit is refused from the head alone.
  auto declared = raw_exchange(port_,
                               "POST /api/queues/q/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                               "Authorization: Bearer " +
                                   std::string(kToken) +
                                   "\r\nContent-Type: application/json\r\n"
                                   "Content-Length: 314572800\r\n\r\n",
                               5s);
  ASSERT_TRUE(declared);
  EXPECT_EQ(declared->status, 413);
  EXPECT_TRUE(healthy());
  EXPECT_EQ(jobs_in_database(), 0);
}

TEST_P(HostileClientsTest, EndlessHeadersAreCutOffAtTheLimit) {
  serve();
  const std::int64_t rss_before = peak_rss_bytes(server_->pid());
  const auto started = Clock::now();
  RawClient client(port_);
  ASSERT_TRUE(client.send("GET /api/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\n"));
  const std::string line = "X-Filler: " + std::string(1000, 'a') + "\r\n";
  std::string block;
  for (int i = 0; i < 1000; ++i) block += line;  // ~1 MB
  std::int64_t sent = 0;
  while (sent < 160 * 1000 * 1000 && !client.readable()) {
    if (!client.send(block)) break;
    sent += static_cast<std::int64_t>(block.size());
  }
  auto r = client.response(5s);
  ASSERT_TRUE(r) << "no answer after " << sent << " bytes of headers";
  EXPECT_EQ(r->status, 431) << r->head;
  EXPECT_LT(Clock::now() - started, 10s);
  EXPECT_LT(peak_rss_bytes(server_->pid()) - rss_before, 128 * kMiB);

  // Many small headers: the count limit.
  std::string many = "GET /api/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  for (int i = 0; i < 150; ++i) many += "X-" + std::to_string(i) + ": 1\r\n";
  auto counted = raw_exchange(port_, many + "\r\n", 5s);
  ASSERT_TRUE(counted);
  EXPECT_EQ(counted->status, 431) << counted->body;
  // A second Host or Authorization header is refused, not resolved one way or the other.
  auto twice = raw_exchange(port_,
                            "GET /api/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\n"
                            "Authorization: Bearer " +
                                std::string(kToken) + "\r\n\r\n",
                            5s);
  ASSERT_TRUE(twice);
  EXPECT_EQ(twice->status, 400);
  EXPECT_TRUE(healthy());
}

TEST_P(HostileClientsTest, SlowClientsDoNotStopOthersAndAreCutOffAtTheRequestDeadline) {
  serve({"--timeout", "4s"});
  std::vector<std::unique_ptr<RawClient>> slow;
  for (int i = 0; i < 60; ++i) {
    slow.push_back(std::make_unique<RawClient>(port_));
    ASSERT_TRUE(slow.back()->connected());
    ASSERT_TRUE(slow.back()->send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"));
  }
  // Each slow client sends a header line every 500ms, far more often than any per-read
  // timeout would allow; /healthz must answer meanwhile.
  const auto started = Clock::now();
  while (Clock::now() - started < 3s) {
    for (auto& client : slow) client->send("X-Slow: 1\r\n");
    const auto asked = Clock::now();
    EXPECT_TRUE(healthy(3s));
    EXPECT_LT(Clock::now() - asked, 3s);
    std::this_thread::sleep_for(500ms);
  }
  // The deadline covers the whole request: the trickle is cut off at 4s however often a
  // byte arrives.
  int closed = 0;
  const auto cutoff = Clock::now() + 5s;
  for (auto& client : slow) {
    while (Clock::now() < cutoff && !client->readable(100ms)) client->send("X-Slow: 1\r\n");
    if (client->closed_within(100ms)) ++closed;
  }
  EXPECT_EQ(closed, 60);
  EXPECT_TRUE(healthy());
}

TEST_P(HostileClientsTest, ThreeHundredConnectionsAtOnceAreAllAnswered) {
  serve();
  std::vector<std::unique_ptr<RawClient>> clients;
  for (int i = 0; i < 300; ++i) {
    clients.push_back(std::make_unique<RawClient>(port_));
    ASSERT_TRUE(clients.back()->connected()) << i;
  }
  for (std::size_t i = 0; i < clients.size(); ++i) {
    ASSERT_TRUE(clients[i]->send(request("GET", "/api/queues", i % 2 == 0)));
  }
  const auto started = Clock::now();
  int answered = 0;
  for (std::size_t i = 0; i < clients.size(); ++i) {
    auto r = clients[i]->response(10s);
    ASSERT_TRUE(r) << "connection " << i << " hangs";
    const int want = i % 2 == 0 ? 200 : 401;
    EXPECT_TRUE(r->status == want || r->status == 503) << i << ": " << r->head;
    ++answered;
  }
  EXPECT_EQ(answered, 300);
  EXPECT_LT(Clock::now() - started, 10s);
}

TEST_P(HostileClientsTest, ConnectionsBeyondTheCapGet503) {
  serve({"--max-connections", "20"});
  std::vector<std::unique_ptr<RawClient>> idle;
  for (int i = 0; i < 20; ++i) idle.push_back(std::make_unique<RawClient>(port_));
  // Let the server accept all 20 before the next ones arrive.
  std::this_thread::sleep_for(300ms);
  for (int i = 0; i < 30; ++i) {
    auto r = raw_exchange(port_, request("GET", "/healthz", true), 5s);
    ASSERT_TRUE(r) << i;
    EXPECT_EQ(r->status, 503) << r->body;
    EXPECT_NE(r->head.find("Retry-After: 1"), std::string::npos) << r->head;
  }
  idle.clear();
  bool served = false;
  for (int i = 0; i < 50 && !served; ++i) {
    std::this_thread::sleep_for(50ms);
    served = healthy();
  }
  EXPECT_TRUE(served);
}

TEST_P(HostileClientsTest, HealthzFailsWhenTheJobsCannotBeRead) {
  // The database answers and its schema version reads, but the jobs cannot be read.
  engine_named(GetParam()).make_jobs_unreadable(url_);
  serve();
  auto data = raw_exchange(port_, request("GET", "/api/jobs", true), 5s);
  ASSERT_TRUE(data);
  EXPECT_GE(data->status, 500) << data->body;
  auto r = raw_exchange(port_, request("GET", "/healthz", true), 5s);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503) << r->body;
}

TEST_P(HostileClientsTest, TheTokenIsScrubbedFromTheErrorAWorkerStores) {
  serve();
  auto enqueued = raw_exchange(port_, request("POST", "/api/queues/q/jobs", true, "{}"), 5s);
  ASSERT_TRUE(enqueued);
  ASSERT_EQ(enqueued->status, 201);
  auto leased = raw_exchange(
      port_, request("POST", "/api/queues/q/lease", true, R"({"worker_id": "w"})"), 5s);
  ASSERT_TRUE(leased);
  const std::regex fields("\"id\":([0-9]+).*\"lease_token\":\"([0-9a-f]{32})\"");
  std::smatch match;
  ASSERT_TRUE(std::regex_search(leased->body, match, fields)) << leased->body;
  const std::string id = match[1].str();
  const std::string body = R"({"lease_token": ")" + match[2].str() +
                           R"(", "error": "env dump: READPAST_TOKEN=)" + std::string(kToken) +
                           R"(", "no_retry": true})";
  auto failed = raw_exchange(port_, request("POST", "/api/jobs/" + id + "/fail", true, body), 5s);
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->status, 200) << failed->body;
  auto job = Queue::open(url_)->get(std::stoll(id));
  ASSERT_TRUE(job);
  EXPECT_EQ(job->last_error.value_or(""), "env dump: READPAST_TOKEN=[redacted]");
}

INSTANTIATE_TEST_SUITE_P(Engines, HostileClientsTest, ::testing::ValuesIn(engine_names()),
                         [](const ::testing::TestParamInfo<std::string>& engine) {
                           return engine.param;
                         });

}  // namespace
}  // namespace readpast::test
