// The schedules routes on every engine: GET /api/schedules with each schedule's ticks, and
// POST /api/schedules/NAME/run ("run now"), which enqueues one job and moves no tick. Run now
// changes something, so it is guarded like every other POST: the token, the JSON content
// type, no cross-site origin; a refused or unknown run changes nothing.
#include "server_fixture.hpp"

namespace readpast::test {
namespace {

class SchedulesApiTest : public ServerTest {
 protected:
  void add(const std::string& name, const std::string& queue, const std::string& spec,
           const std::string& payload = "{\"kind\":\"daily\"}") {
    Schedule s;
    s.name = name;
    s.queue = queue;
    s.spec = spec;
    s.payload = payload;
    s.priority = 5;
    s.max_attempts = 3;
    auto created = this->queue().add_schedule(s);
    ASSERT_TRUE(created) << created.error().message;
  }
  std::int64_t jobs_of(const std::string& q) {
    auto stats = queue().stats(q);
    EXPECT_TRUE(stats);
    if (!stats || stats->empty()) return 0;
    return stats->front().available + stats->front().running;
  }
};

TEST_P(SchedulesApiTest, TheListShowsEachSchedulesSpecZoneAndTicks) {
  add("nightly", "reports", "0 3 * * *");
  add("standup", "team", "CRON_TZ=Europe/Berlin 0 9 * * mon-fri");
  add("raw", "bytes", "every 1h", std::string("\xff\x00", 2));
  Reply r = get("/api/schedules");
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_TRUE(r.json["now"].is_string());
  const Json& list = r.json["schedules"];
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[0]["name"], "nightly");
  EXPECT_EQ(list[0]["queue"], "reports");
  EXPECT_EQ(list[0]["spec"], "0 3 * * *");
  EXPECT_EQ(list[0]["time_zone"], "UTC");
  EXPECT_EQ(list[0]["payload"], "{\"kind\":\"daily\"}");
  EXPECT_EQ(list[0]["payload_encoding"], "utf8");
  EXPECT_EQ(list[0]["priority"], 5);
  EXPECT_EQ(list[0]["max_attempts"], 3);
  EXPECT_TRUE(list[0]["last_tick"].is_null());
  ASSERT_TRUE(list[0]["next_tick"].is_string());
  auto next = parse_time(list[0]["next_tick"].get<std::string>());
  ASSERT_TRUE(next);
  auto db_now = parse_time(r.json["now"].get<std::string>());
  ASSERT_TRUE(db_now);
  EXPECT_GT(*next, *db_now);
  EXPECT_LE(*next - *db_now, std::chrono::hours(24));
  EXPECT_EQ(list[0]["next_tick"].get<std::string>().substr(10), "T03:00:00.000000Z");
  EXPECT_EQ(list[1]["name"], "raw");
  EXPECT_EQ(list[1]["payload_encoding"], "base64");
  EXPECT_EQ(list[1]["payload"], "/wA=");
  EXPECT_EQ(list[2]["time_zone"], "Europe/Berlin");

  // Once a tick was enqueued, it is the last tick.
  auto ticked = queue().enqueue_due(*next + std::chrono::seconds(1));
  ASSERT_TRUE(ticked);
  Json after = get("/api/schedules").json["schedules"][0];
  EXPECT_EQ(after["last_tick"], list[0]["next_tick"]);
}

TEST_P(SchedulesApiTest, RunNowEnqueuesOneJobFromTheScheduleAndMovesNoTick) {
  add("nightly", "reports", "0 3 * * *");
  Json before = get("/api/schedules").json["schedules"][0];
  Reply r = post("/api/schedules/nightly/run");
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(r.json["schedule"], "nightly");
  const std::int64_t id = r.json["id"];
  Json job = this->job(id);
  EXPECT_EQ(job["queue"], "reports");
  EXPECT_EQ(job["state"], "available");
  EXPECT_EQ(job["payload"], "{\"kind\":\"daily\"}");
  EXPECT_EQ(job["priority"], 5);
  EXPECT_EQ(job["max_attempts"], 3);
  EXPECT_TRUE(job["unique_key"].is_null());
  EXPECT_EQ(lease_one("reports")["id"], id) << "the job is due at once";
  Json after = get("/api/schedules").json["schedules"][0];
  EXPECT_EQ(after["last_tick"], before["last_tick"]);
  EXPECT_EQ(after["next_tick"], before["next_tick"]);
  EXPECT_EQ(post("/api/schedules/nightly/run").status, 201);
  EXPECT_EQ(jobs_of("reports"), 2);
}

TEST_P(SchedulesApiTest, BadOrUnknownRunsAreRefusedAndChangeNothing) {
  add("nightly", "reports", "0 3 * * *");
  Reply missing = post("/api/schedules/nighlty/run");
  EXPECT_EQ(missing.status, 404) << missing.body;
  EXPECT_EQ(missing.code(), "not_found");
  EXPECT_NE(missing.body.find("no schedule named 'nighlty'"), std::string::npos);
  EXPECT_EQ(post("/api/schedules/bad%20name/run").status, 400);
  EXPECT_EQ(post("/api/schedules/nightly/run", {{"priority", 1}}).status, 400)
      << "unknown fields are refused";
  EXPECT_EQ(post_raw("/api/schedules/nightly/run", "{}", "text/plain").status, 415);
  EXPECT_EQ(post("/api/schedules/nightly/run", Json::object(), {{"Origin", "http://evil.example"}})
                .status,
            403);
  EXPECT_EQ(get("/api/schedules/nightly/run").status, 405);
  EXPECT_EQ(jobs_of("reports"), 0);
}

class SchedulesTokenTest : public SchedulesApiTest {
 protected:
  server::ServerOptions options() const override {
    auto options = ServerTest::options();
    options.token = "s3cret-token-of-some-length";
    return options;
  }
};

TEST_P(SchedulesTokenTest, SchedulesNeedTheTokenAndTheirPagesDoNot) {
  add("nightly", "reports", "0 3 * * *");
  const httplib::Headers bearer = {{"Authorization", "Bearer s3cret-token-of-some-length"}};
  EXPECT_EQ(get("/api/schedules").status, 401);
  EXPECT_EQ(post("/api/schedules/nightly/run").status, 401);
  EXPECT_EQ(post("/api/schedules/missing/run").status, 401) << "401 before 404";
  EXPECT_EQ(jobs_of("reports"), 0);
  EXPECT_EQ(get("/api/schedules", bearer).status, 200);
  EXPECT_EQ(post("/api/schedules/nightly/run", Json::object(), bearer).status, 201);
  EXPECT_EQ(jobs_of("reports"), 1);
  for (const char* page : {"/schedules", "/workers"}) {
    Reply r = get(page);
    EXPECT_EQ(r.status, 200) << page;
    EXPECT_NE(r.body.find("<!doctype html>"), std::string::npos) << page;
  }
}

auto schedules_engine_name = [](const ::testing::TestParamInfo<std::string>& engine) {
  return engine.param;
};
INSTANTIATE_TEST_SUITE_P(Engines, SchedulesApiTest, ::testing::ValuesIn(engine_names()),
                         schedules_engine_name);
INSTANTIATE_TEST_SUITE_P(Engines, SchedulesTokenTest, ::testing::ValuesIn(engine_names()),
                         schedules_engine_name);

}  // namespace
}  // namespace readpast::test
