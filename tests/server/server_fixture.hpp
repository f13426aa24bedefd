// A readpast server in the test process, on a free port of 127.0.0.1, over a fresh database
// of the engine under test, and a real HTTP client (cpp-httplib) to talk to it.
//
// Thread-safety: the fixture belongs to one test's thread; client() makes a new client for
// each call, so threads of a test may each use their own.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "readpast/readpast.hpp"
#include "server/server.hpp"
#include "support/engines.hpp"

namespace readpast::test {

using Json = nlohmann::json;

// A response: its status, and its body parsed as JSON (null when it is not JSON).
struct Reply {
  int status = 0;  // 0 when the request got no response at all
  std::string body;
  Json json;
  httplib::Headers headers;

  std::string header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
  std::string code() const {  // the stable error code, or ""
    return json.is_object() && json.contains("error") ? json["error"].value("code", "") : "";
  }
};

class ServerTest : public ::testing::TestWithParam<std::string> {
 public:
  void SetUp() override {
    url_ = engine_named(GetParam()).fresh_url();
    QueueOptions queue_options;
    queue_options.init_schema = true;
    auto queue = Queue::open(url_, queue_options);
    ASSERT_TRUE(queue) << queue.error().message;
    queue_ = std::make_unique<Queue>(std::move(*queue));
    start(options());
  }

  void TearDown() override { stop(); }

  // What the server is started with; tests that need other options call restart().
  virtual server::ServerOptions options() const {
    server::ServerOptions options;
    options.listen = {"127.0.0.1", 0};
    options.sample_interval = std::chrono::milliseconds(50);
    return options;
  }

  void start(server::ServerOptions options) {
    auto server = server::Server::bind(*queue_, std::move(options));
    ASSERT_TRUE(server) << server.error().message;
    server_ = std::move(*server);
    thread_ = std::thread([this] { EXPECT_TRUE(server_->run()); });
  }

  void stop() {
    if (server_) server_->stop();
    if (thread_.joinable()) thread_.join();
    server_.reset();
  }

  void restart(server::ServerOptions options) {
    stop();
    start(std::move(options));
  }

  // The HTTP calls, for helpers outside the fixture too.
  std::unique_ptr<httplib::Client> client() const {
    auto client = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client->set_read_timeout(std::chrono::seconds(30));
    return client;
  }

  static Reply reply(const httplib::Result& result) {
    Reply r;
    if (!result) return r;
    r.status = result->status;
    r.body = result->body;
    r.headers = result->headers;
    r.json = Json::parse(result->body, nullptr, false);
    if (r.json.is_discarded()) r.json = nullptr;
    return r;
  }

  Reply get(const std::string& path, const httplib::Headers& headers = {}) const {
    return reply(client()->Get(path, headers));
  }

  // POSTs JSON (Content-Type: application/json).
  Reply post(const std::string& path, const Json& body = Json::object(),
             const httplib::Headers& headers = {}) const {
    return post_raw(path, body.dump(), "application/json", headers);
  }

  Reply post_raw(const std::string& path, const std::string& body, const std::string& type,
                 const httplib::Headers& headers = {}) const {
    return reply(client()->Post(path, headers, body, type));
  }

  // Enqueues through the API; returns the id.
  std::int64_t enqueue(const std::string& queue, const Json& job = Json::object()) const {
    Reply r = post("/api/queues/" + queue + "/jobs", job);
    EXPECT_EQ(r.status, 201) << r.body;
    return r.json.value("id", std::int64_t{0});
  }

  // Leases one job through the API; the job's JSON (null when none was handed out).
  Json lease_one(const std::string& queue, const std::string& lease = "30s") const {
    Reply r =
        post("/api/queues/" + queue + "/lease", {{"worker_id", "test-worker"}, {"lease", lease}});
    EXPECT_EQ(r.status, 200) << r.body;
    if (!r.json.is_object() || r.json["jobs"].empty()) return nullptr;
    return r.json["jobs"][0];
  }

  Json job(std::int64_t id) const { return get("/api/jobs/" + std::to_string(id)).json; }

  Queue& queue() { return *queue_; }
  int port() const { return server_->port(); }
  const std::string& db_url() const { return url_; }

 private:
  std::string url_;
  std::unique_ptr<Queue> queue_;
  std::unique_ptr<server::Server> server_;
  std::thread thread_;
};

}  // namespace readpast::test
