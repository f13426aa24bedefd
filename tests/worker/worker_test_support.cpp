#include <condition_variable>

#include "support/engines.hpp"
#include "worker/worker_test.hpp"

namespace readpast::test {

Logger LogEvents::logger() {
  return [this](const LogRecord& record) {
    std::lock_guard lock(mu_);
    records_.push_back(record);
  };
}

int LogEvents::count(std::string_view event) const {
  std::lock_guard lock(mu_);
  int n = 0;
  for (const auto& record : records_) {
    for (const auto& [key, value] : record.fields) {
      if (key == "event" && value == event) ++n;
    }
  }
  return n;
}

std::string LogEvents::all() const {
  std::lock_guard lock(mu_);
  std::string text;
  for (const auto& record : records_) text += record.message + "\n";
  return text;
}

RunningWorker::RunningWorker(Queue& queue, WorkerOptions options,
                             const std::function<void(Worker&)>& register_handlers)
    : worker_(queue, std::move(options)) {
  register_handlers(worker_);
  thread_ = std::thread([this] {
    Status result = worker_.run();
    std::lock_guard lock(mu_);
    result_ = std::move(result);
    cv_.notify_all();
  });
}

RunningWorker::~RunningWorker() {
  worker_.stop();
  worker_.stop();
  thread_.join();
}

Status RunningWorker::join(std::chrono::seconds patience) {
  std::unique_lock lock(mu_);
  if (!cv_.wait_for(lock, patience, [&] { return result_.has_value(); })) {
    return fail_with(Error::internal("the worker did not return within the test's patience"));
  }
  return *result_;
}

void WorkerTest::SetUp() {
  url_ = engine_named(GetParam()).fresh_url();
  reopen({});
}

Queue& WorkerTest::reopen(QueueOptions options) {
  options.init_schema = true;
  if (!options.logger) options.logger = log_.logger();
  queue_.reset();
  auto opened = Queue::open(url_, options);
  if (!opened) throw std::runtime_error("cannot open the test database: " + opened.error().message);
  queue_.emplace(std::move(*opened));
  return *queue_;
}

Queue WorkerTest::open_another(QueueOptions options) {
  auto opened = Queue::open(url_, options);
  if (!opened) throw std::runtime_error("cannot open the test database: " + opened.error().message);
  return std::move(*opened);
}

JobId WorkerTest::enqueue(const std::string& queue, std::string payload, int max_attempts,
                          std::optional<Duration> delay) {
  NewJob job;
  job.queue = queue;
  job.payload = std::move(payload);
  job.max_attempts = max_attempts;
  job.delay = delay;
  auto enqueued = q().enqueue(job);
  EXPECT_TRUE(enqueued) << enqueued.error().message;
  return enqueued ? enqueued->id : 0;
}

Job WorkerTest::get(JobId id) {
  auto job = q().get(id);
  EXPECT_TRUE(job) << job.error().message;
  return job ? *job : Job{};
}

QueueStats WorkerTest::stats(const std::string& queue) {
  auto all = q().stats(queue);
  EXPECT_TRUE(all) << all.error().message;
  if (!all || all->empty()) return QueueStats{.queue = queue};
  return all->front();
}

bool WorkerTest::wait_for_state(JobId id, JobState state) {
  return eventually([&] { return get(id).state == state; });
}

bool WorkerTest::eventually(const std::function<bool()>& condition,
                            std::chrono::milliseconds patience) {
  const auto deadline = std::chrono::steady_clock::now() + patience;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return condition();
}

WorkerOptions WorkerTest::options(bool drain) {
  WorkerOptions o;
  o.worker_id = "tester";
  o.drain = drain;
  o.lease_duration = 2s;
  o.grace = 10s;
  o.idle_wait_max = 100ms;
  o.logger = log_.logger();
  return o;
}

JobResult wait_for_cancel(const Job&, std::stop_token cancel) {
  std::mutex mu;
  std::condition_variable_any cv;
  std::unique_lock lock(mu);
  cv.wait_for(lock, cancel, 30s, [] { return false; });
  return JobResult::failure(cancel.stop_requested() ? "cancelled" : "never cancelled");
}

}  // namespace readpast::test
