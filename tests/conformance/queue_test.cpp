#include "conformance/queue_test.hpp"

#include <sstream>
#include <thread>

#include "support/engines.hpp"

namespace readpast::test {

TimePoint now() {
  return std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
}

void throw_unexpected(const Error& error, const std::source_location& where) {
  throw UnexpectedError(std::string(where.file_name()) + ":" + std::to_string(where.line()) +
                        ": unexpected error " + std::string(to_string(error.code)) + ": " +
                        error.message);
}

void ok(Status status, std::source_location where) {
  if (!status) throw_unexpected(status.error(), where);
}

std::vector<JobId> ids_of(const std::vector<Job>& jobs) {
  std::vector<JobId> ids;
  ids.reserve(jobs.size());
  for (const auto& job : jobs) ids.push_back(job.id);
  return ids;
}

NewJob new_job(std::string queue, std::string payload) {
  NewJob job;
  job.queue = std::move(queue);
  job.payload = std::move(payload);
  return job;
}

namespace {

template <class T>
std::string opt(const std::optional<T>& value, const std::function<std::string(const T&)>& f) {
  return value ? f(*value) : std::string("null");
}

std::string quoted(const std::string& bytes) {
  std::ostringstream out;
  out << '"';
  for (unsigned char c : bytes) {
    if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
      out << c;
    } else {
      static const char* kHex = "0123456789abcdef";
      out << "\\x" << kHex[c >> 4] << kHex[c & 15];
    }
  }
  out << '"';
  return out.str();
}

}  // namespace

std::string dump(const Job& job) {
  auto time = [](const TimePoint& t) { return format_time(t); };
  auto text = [](const std::string& s) { return quoted(s); };
  std::ostringstream out;
  out << "id=" << job.id << " queue=" << job.queue << " state=" << to_string(job.state)
      << " priority=" << job.priority << " run_at=" << format_time(job.run_at)
      << " attempts=" << job.attempts << " max_attempts=" << job.max_attempts << " lease_token="
      << opt<LeaseToken>(job.lease_token, [](const LeaseToken& t) { return t.hex(); })
      << " leased_by=" << opt<std::string>(job.leased_by, text)
      << " lease_expires_at=" << opt<TimePoint>(job.lease_expires_at, time)
      << " enqueued_at=" << format_time(job.enqueued_at)
      << " started_at=" << opt<TimePoint>(job.started_at, time)
      << " finished_at=" << opt<TimePoint>(job.finished_at, time)
      << " unique_key=" << opt<std::string>(job.unique_key, text)
      << " last_error=" << opt<std::string>(job.last_error, text)
      << " payload=" << quoted(job.payload);
  return out.str();
}

std::string dump(const QueueStats& stats) {
  std::ostringstream out;
  out << stats.queue << ": available=" << stats.available << " scheduled=" << stats.scheduled
      << " running=" << stats.running << " expired=" << stats.expired
      << " succeeded=" << stats.succeeded << " dead=" << stats.dead
      << " cancelled=" << stats.cancelled;
  return out.str();
}

bool eventually(const std::function<bool()>& condition,
                std::chrono::steady_clock::duration patience) {
  auto deadline = std::chrono::steady_clock::now() + patience;
  while (true) {
    if (condition()) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void QueueTest::SetUp() {
  url_ = engine_named(GetParam()).fresh_url_to_init();
}

Queue& QueueTest::open(QueueOptions options) {
  options.init_schema = true;
  queue_.reset();
  queue_.emplace(ok(Queue::open(url_, std::move(options))));
  return *queue_;
}

Queue& QueueTest::q() {
  if (!queue_) open();
  return *queue_;
}

Queue QueueTest::open_another(QueueOptions options) {
  q();  // the schema exists before a second handle opens
  options.init_schema = false;
  return ok(Queue::open(url_, std::move(options)));
}

JobId QueueTest::enqueue(const NewJob& job) {
  auto enqueued = ok(q().enqueue(job));
  EXPECT_TRUE(enqueued.inserted);
  return enqueued.id;
}

JobId QueueTest::enqueue(std::string queue, std::string payload) {
  return enqueue(new_job(std::move(queue), std::move(payload)));
}

Job QueueTest::get(JobId id) {
  return ok(q().get(id));
}

std::vector<Job> QueueTest::lease(const std::string& queue, int max_jobs, const std::string& worker,
                                  Duration lease) {
  return ok(q().lease(LeaseRequest{queue, worker, max_jobs, lease}));
}

Job QueueTest::lease_one(const std::string& queue, const std::string& worker, Duration lease) {
  auto jobs = this->lease(queue, 1, worker, lease);
  if (jobs.size() != 1) {
    throw UnexpectedError("lease of queue " + queue + " returned " + std::to_string(jobs.size()) +
                          " jobs, expected 1");
  }
  return std::move(jobs.front());
}

namespace {

// Jobs made by the helpers below go before every other job the tests enqueue, so the
// helpers can lease them whatever else the queue holds.
constexpr int kHelperPriority = -1000;

}  // namespace

JobId QueueTest::succeeded_job(const std::string& queue) {
  auto spec = new_job(queue, "will succeed");
  spec.priority = kHelperPriority;
  JobId id = enqueue(spec);
  auto job = lease_one(queue);
  EXPECT_EQ(job.id, id) << "the helper leased another job";
  ok(q().complete(job.id, *job.lease_token));
  return id;
}

JobId QueueTest::dead_job(const std::string& queue) {
  auto spec = new_job(queue, "will die");
  spec.priority = kHelperPriority;
  spec.max_attempts = 1;
  JobId id = enqueue(spec);
  auto job = lease_one(queue);
  EXPECT_EQ(job.id, id) << "the helper leased another job";
  EXPECT_EQ(ok(q().fail(job.id, *job.lease_token, "boom")), FailOutcome::kDead);
  return id;
}

JobId QueueTest::cancelled_job(const std::string& queue) {
  JobId id = enqueue(queue, "will be cancelled");
  auto cancelled = ok(q().cancel(std::vector<JobId>{id}));
  EXPECT_EQ(cancelled, std::vector<JobId>{id});
  return id;
}

std::vector<Job> QueueTest::all_jobs() {
  std::vector<Job> jobs;
  ListRequest request;
  request.limit = 500;
  while (true) {
    auto page = ok(q().list(request));
    for (auto& job : page) jobs.push_back(std::move(job));
    if (page.size() < static_cast<std::size_t>(request.limit)) break;
    request.after_id = jobs.back().id;
  }
  return jobs;
}

std::string QueueTest::snapshot() {
  std::string out;
  for (const auto& job : all_jobs()) out += dump(job) + "\n";
  for (const auto& stats : ok(q().stats())) out += dump(stats) + "\n";
  return out;
}

INSTANTIATE_TEST_SUITE_P(Conformance, QueueTest, ::testing::ValuesIn(engine_names()),
                         [](const ::testing::TestParamInfo<std::string>& param_info) {
                           return param_info.param;
                         });

}  // namespace readpast::test
