// The server's limits, on every engine: malformed and oversized bodies get a 4xx and change
// nothing; a silent client is disconnected; requests beyond the cap get 503 at once.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>

#include "server_fixture.hpp"

namespace readpast::test {
namespace {

using namespace std::chrono_literals;

class LimitsTest : public ServerTest {
 protected:
  server::ServerOptions options() const override {
    auto options = ServerTest::options();
    options.limits.max_body_bytes = 64 * 1024;
    options.limits.request_timeout = 300ms;
    options.limits.max_concurrent_requests = 2;
    return options;
  }

  std::int64_t jobs_in_database() {
    auto stats = queue().stats();
    EXPECT_TRUE(stats);
    std::int64_t total = 0;
    for (const auto& s : *stats) total += s.available + s.running + s.succeeded + s.dead;
    return total;
  }
};

TEST_P(LimitsTest, BadRequestsGetA4xxAndChangeNothing) {
  struct Case {
    std::string body;
    int status;
  };
  const std::vector<Case> cases = {
      {"{not json", 400},
      {"[1, 2]", 400},
      {R"({"payload": "x", "priorty": 1})", 400},  // misspelt field
      {R"({"priority": "high"})", 400},            // wrong type
      {R"({"priority": 99999999999})", 400},       // out of range
      {R"({"max_attempts": 0})", 400},
      {R"({"delay": "soon"})", 400},
      {R"({"delay": -1})", 400},
      {R"({"run_at": "tomorrow"})", 400},
      {R"({"payload": "x", "unique_key": 7})", 400},
  };
  for (const auto& c : cases) {
    Reply r = post_raw("/api/queues/q/jobs", c.body, "application/json");
    EXPECT_EQ(r.status, c.status) << c.body << " → " << r.body;
    EXPECT_EQ(r.code(), "invalid_argument") << c.body;
  }
  EXPECT_EQ(post("/api/queues/bad%20name/jobs", {{"payload", "x"}}).status, 400);
  EXPECT_EQ(post("/api/queues/q/jobs/batch", {{"jobs", Json::array()}}).status, 400);
  EXPECT_EQ(post_raw("/api/queues/q/jobs", R"({"payload": "x"})", "text/plain").status, 415);
  EXPECT_EQ(jobs_in_database(), 0);
}

TEST_P(LimitsTest, ABodyOverTheLimitIsRefusedBeforeAnyRouteRuns) {
  Json job = {{"payload", std::string(70 * 1024, 'x')}};
  Reply r = post("/api/queues/q/jobs", job);
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(r.code(), "payload_too_large");
  Reply batch = post("/api/queues/q/jobs/batch", {{"jobs", Json::array({job})}});
  EXPECT_EQ(batch.status, 413);
  EXPECT_EQ(jobs_in_database(), 0);
  // Just under the limit goes through.
  EXPECT_EQ(post("/api/queues/q/jobs", {{"payload", std::string(60 * 1024, 'x')}}).status, 201);
}

TEST_P(LimitsTest, AClientThatStopsSendingIsDisconnected) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port()));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  std::string partial = "POST /api/queues/q/jobs HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  ASSERT_EQ(::send(fd, partial.data(), partial.size(), 0), static_cast<ssize_t>(partial.size()));
  // After its 300ms timeout the server answers 400 (and keeps the connection for a next
  // request) or hangs up; either way within far less than 3s.
  const auto started = std::chrono::steady_clock::now();
  std::string received;
  bool closed = false;
  while (!closed && received.find("\r\n\r\n") == std::string::npos &&
         std::chrono::steady_clock::now() - started < 5s) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 5000) != 1) break;
    char buffer[1024];
    ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) closed = true;
    if (n > 0) received.append(buffer, static_cast<std::size_t>(n));
  }
  EXPECT_LT(std::chrono::steady_clock::now() - started, 3s);
  EXPECT_TRUE(closed || received.starts_with("HTTP/1.1 4")) << received;
  ::close(fd);
  EXPECT_EQ(jobs_in_database(), 0);
}

TEST_P(LimitsTest, RequestsBeyondTheCapGet503AtOnce) {
  auto enqueue_async = [this] {
    return std::async(std::launch::async, [this] {
      return post("/api/queues/q/jobs", {{"payload", "waits"}});
    });
  };
  std::vector<std::future<Reply>> blocked;
  {
    // Every enqueue waits while the database's write lock is held.
    const auto lock = engine_named(GetParam()).hold_write_lock(db_url());
    blocked.push_back(enqueue_async());
    blocked.push_back(enqueue_async());
    // Once both enqueues are in progress (waiting for the lock), a third request is refused.
    // Until then a probe may take a slot itself and have an enqueue refused instead: that
    // enqueue changed nothing and is sent again.
    Reply busy;
    for (int i = 0; i < 200 && busy.status != 503; ++i) {
      std::this_thread::sleep_for(20ms);
      for (auto& f : blocked) {
        if (f.wait_for(0s) == std::future_status::ready) {
          Reply refused = f.get();
          ASSERT_EQ(refused.status, 503) << refused.body;
          f = enqueue_async();
        }
      }
      std::this_thread::sleep_for(20ms);
      busy = get("/api/queues");
    }
    EXPECT_EQ(busy.status, 503) << busy.body;
    EXPECT_EQ(busy.code(), "unavailable");
    EXPECT_EQ(busy.header("Retry-After"), std::string("1"));
  }
  for (auto& f : blocked) EXPECT_EQ(f.get().status, 201);
  EXPECT_EQ(get("/api/queues").status, 200);
  EXPECT_EQ(jobs_in_database(), 2);
}

INSTANTIATE_TEST_SUITE_P(Engines, LimitsTest, ::testing::ValuesIn(engine_names()),
                         [](const ::testing::TestParamInfo<std::string>& engine) {
                           return engine.param;
                         });

}  // namespace
}  // namespace readpast::test
