#include "worker/runtime.hpp"

#include <unistd.h>

#include <algorithm>
#include <exception>
#include <functional>
#include <thread>
#include <utility>

#include "core/log.hpp"
#include "core/schedule_spec.hpp"
#include "core/snapshot_holder_text.hpp"
#include "worker/host_name.hpp"
#include "worker/refill.hpp"
#include "worker/retention_turn.hpp"

namespace readpast::worker {
namespace {

// Calls retried while the database is unavailable: from 100ms up to 2s apart.
constexpr auto kRetryMin = std::chrono::milliseconds(100);
constexpr auto kRetryMax = std::chrono::seconds(2);
// A heartbeat that failed because the database is unavailable is tried again this soon.
constexpr auto kHeartbeatRetry = std::chrono::seconds(1);
// Between extends, this often the heartbeat asks (a read) whether the leases of running jobs
// still hold, so that a cancelled job's handler is stopped (its command sent SIGTERM) within
// about this long, not at the next extend, a third of the lease later.
constexpr auto kLeaseCheck = std::chrono::milliseconds(400);
// How often a worker reports itself (the dashboard's heartbeat age) and flushes its metrics.
constexpr auto kReportInterval = std::chrono::seconds(5);
// How much of a job's error goes into a log line (a command's stderr was shown already).
constexpr std::size_t kLoggedErrorBytes = 200;
// At most this many jobs are completed by one statement.
constexpr std::size_t kMaxCompleteBatch = 1000;
// Bounds of the maintenance thread's wait for the next schedule tick.
constexpr auto kScheduleWaitMin = std::chrono::milliseconds(10);
constexpr auto kScheduleWaitMax = std::chrono::seconds(1);

std::string one_line(std::string_view text) {
  auto newline = text.find('\n');
  std::string line(text.substr(0, std::min(newline, kLoggedErrorBytes)));
  if (line.size() < text.size()) line += " ...";
  return line;
}

std::string took(std::chrono::steady_clock::duration d) {
  return format_duration(std::chrono::duration_cast<Duration>(d));
}

std::string millis(std::chrono::steady_clock::duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
}

// Joins the threads it holds when it goes out of scope, after telling them to end.
class ThreadGroup {
 public:
  explicit ThreadGroup(std::function<void()> tell_to_end) : tell_to_end_(std::move(tell_to_end)) {}
  ThreadGroup(const ThreadGroup&) = delete;
  ThreadGroup& operator=(const ThreadGroup&) = delete;
  ~ThreadGroup() { join(); }
  template <class F>
  void start(F&& f) {
    threads_.emplace_back(std::forward<F>(f));
  }
  void join() {
    if (threads_.empty()) return;
    tell_to_end_();
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

 private:
  std::function<void()> tell_to_end_;
  std::vector<std::thread> threads_;
};

}  // namespace

Runtime::Runtime(Queue& queue, WorkerOptions options, std::vector<LaneSetup> lanes)
    : queue_(queue),
      options_(std::move(options)),
      logger_(options_.logger, options_.log_level),
      outage_(logger_) {
  for (auto& setup : lanes) lanes_.emplace_back(std::move(setup));
}

Runtime::~Runtime() = default;

void Runtime::wake_everyone() {
  cv_.notify_all();
  complete_cv_.notify_all();
  timer_cv_.notify_all();
  for (Lane& lane : lanes_) {
    lane.work_cv.notify_all();
    lane.fetch_cv.notify_all();
  }
}

bool Runtime::logs(LogLevel level) const {
  return logger_.logs(level);
}

void Runtime::log(LogLevel level, std::string message,
                  std::vector<std::pair<std::string, std::string>> fields) const {
  logger_.emit(level, std::move(message), std::move(fields));
}

std::vector<std::pair<std::string, std::string>> Runtime::job_fields(const Held& held,
                                                                     std::string_view event) const {
  return {{"event", std::string(event)},
          {"job_id", std::to_string(held.job.id)},
          {"queue", held.job.queue},
          {"attempt", std::to_string(held.job.attempts)},
          {"worker", options_.worker_id}};
}

std::string Runtime::describe(const Held& held) const {
  return "job " + std::to_string(held.job.id) + " of " + held.job.queue + " (attempt " +
         std::to_string(held.job.attempts) + "/" + std::to_string(held.job.max_attempts) + ")";
}

WorkerCounters Runtime::counters() const {
  return WorkerCounters{succeeded_.load(), failed_.load(), dead_.load(),
                        released_.load(),  lost_.load(),   running_.load()};
}

void Runtime::request_stop() {
  std::string message;
  {
    std::lock_guard lock(mu_);
    const std::int64_t running = running_.load();
    if (stop_phase_ == StopPhase::kRunning) {
      stop_phase_ = StopPhase::kGraceful;
      grace_deadline_ = Clock::now() + options_.grace;
      message = running == 0 ? "stopping"
                             : "stopping: " + std::to_string(running) + " running job(s) have " +
                                   format_duration(options_.grace) +
                                   " to finish; signal again to stop them now";
    } else if (stop_phase_ == StopPhase::kGraceful) {
      stop_phase_ = StopPhase::kForced;
      grace_deadline_ = Clock::now();
      message = "stopping now: running jobs are stopped and released";
    } else {
      return;
    }
  }
  wake_everyone();
  log(LogLevel::kInfo, message, {{"event", "stopping"}});
}

void Runtime::fail_fatally(const Error& error) {
  {
    std::lock_guard lock(mu_);
    if (!fatal_error_) fatal_error_ = error;
    if (stop_phase_ == StopPhase::kRunning) {
      stop_phase_ = StopPhase::kGraceful;
      grace_deadline_ = Clock::now() + options_.grace;
    }
  }
  wake_everyone();
  log(LogLevel::kError, "stopping: " + error.message,
      {{"event", "fatal"}, {"error", error.message}});
}

void Runtime::sleep_unless_stopping(Duration duration) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, duration, [&] { return stop_phase_ != StopPhase::kRunning; });
}

template <class Call>
auto Runtime::retry_unavailable(std::string_view what, Call&& call, Clock::time_point give_up,
                                bool* was_unavailable) {
  Duration delay = kRetryMin;
  for (;;) {
    auto result = call();
    if (result) {
      outage_.recovered(what);
      return result;
    }
    if (!result.error().is_unavailable()) return result;
    if (was_unavailable != nullptr) *was_unavailable = true;
    outage_.failed(what, result.error());
    // Past the lease, retrying is pointless: the job is anyone's again.
    if (Clock::now() + delay >= give_up) return result;
    {
      std::unique_lock lock(mu_);
      if (cv_.wait_for(lock, delay, [&] { return stop_phase_ == StopPhase::kForced; })) {
        return result;
      }
    }
    delay = std::min<Duration>(delay * 2, kRetryMax);
  }
}

Status Runtime::run() {
  // Where the engine pushes cancellations, the heartbeat checks its leases at once instead
  // of at its next poll. Declared before the threads: it ends after they are joined.
  Subscription cancels = queue_.on_cancel([this] {
    {
      std::lock_guard lock(mu_);
      check_leases_now_ = true;
    }
    cv_.notify_all();
  });
  ThreadGroup threads([this] {
    {
      std::lock_guard lock(mu_);
      threads_exit_ = true;
    }
    wake_everyone();
  });
  {
    // Every lane's count before any fetch thread can end: a lane counted later would look
    // done to fetch_thread_ended.
    std::lock_guard lock(mu_);
    for (Lane& lane : lanes_)
      lane.fetch_threads = overlaps_leases(lane.setup.config.prefetch) ? 2 : 1;
  }
  for (std::size_t i = 0; i < lanes_.size(); ++i) {
    threads.start([this, i] { fetch_loop(i); });
    if (overlaps_leases(lanes_[i].setup.config.prefetch)) {
      threads.start([this, i] { overlap_loop(i); });
    }
    for (int t = 0; t < lanes_[i].setup.config.concurrency; ++t) {
      threads.start([this, i] { handler_loop(i); });
    }
  }
  threads.start([this] { complete_loop(); });
  threads.start([this] { heartbeat_loop(); });
  threads.start([this] { timer_loop(); });
  threads.start([this] { report_loop(); });
  if (options_.run_schedules || options_.retention_interval || options_.warn_snapshot_after) {
    threads.start([this] { maintenance_loop(); });
  }

  // Every fetcher ends (stopped, drained or failed); then every job still held is
  // settled: handlers finish, or the timer stops them when their grace runs out.
  {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return fetchers_done_ && held_.empty(); });
  }
  threads.join();
  std::lock_guard lock(mu_);
  if (fatal_error_) return fail_with(*fatal_error_);
  return {};
}

// --- fetching ---

void Runtime::fetch_loop(std::size_t index) {
  Lane& lane = lanes_[index];
  const std::string& queue = lane.setup.queue;
  Duration idle_wait = options_.idle_wait_min;
  Duration retry_wait = kRetryMin;
  for (;;) {
    {
      std::unique_lock lock(mu_);
      lane.fetch_cv.wait(lock,
                         [&] { return stop_phase_ != StopPhase::kRunning || needs_jobs(lane); });
      if (stop_phase_ != StopPhase::kRunning) break;
    }
    const Fetched fetched = fetch_once(index);
    if (fetched == Fetched::kEnd) break;
    if (fetched == Fetched::kUnavailable) {
      sleep_unless_stopping(retry_wait);
      retry_wait = std::min<Duration>(retry_wait * 2, kRetryMax);
      continue;
    }
    retry_wait = kRetryMin;
    if (fetched == Fetched::kSome) {
      idle_wait = options_.idle_wait_min;
      continue;
    }
    if (options_.drain && drained(index)) {
      log(LogLevel::kInfo, "queue " + queue + " drained", {{"event", "drained"}, {"queue", queue}});
      break;
    }
    if (options_.drain) {
      // The jobs this worker still holds may be all that is left, and their settling sends
      // no notification: lease again as soon as the last of them is settled rather than
      // after a blind wait.
      std::unique_lock lock(mu_);
      if (lane.held > 0 || lane.asking > 0) {
        const bool settled = lane.fetch_cv.wait_for(lock, idle_wait, [&] {
          return stop_phase_ != StopPhase::kRunning || (lane.held == 0 && lane.asking == 0);
        });
        if (!settled) idle_wait = std::min(idle_wait * 2, options_.idle_wait_max);
        continue;
      }
    }
    auto woken = queue_.wait_for_work(queue, idle_wait);
    if (woken) {
      outage_.recovered("waiting for jobs");
      if (!*woken) idle_wait = std::min(idle_wait * 2, options_.idle_wait_max);
    } else if (woken.error().is_unavailable()) {
      outage_.failed("waiting for jobs", woken.error());
      sleep_unless_stopping(retry_wait);
      retry_wait = std::min<Duration>(retry_wait * 2, kRetryMax);
    } else {
      fail_fatally(woken.error());
      break;
    }
  }
  release_waiting(index);
  {
    std::lock_guard lock(mu_);
    lane.fetcher_ended = true;
  }
  lane.fetch_cv.notify_all();
  fetch_thread_ended(index);
}

void Runtime::overlap_loop(std::size_t index) {
  Lane& lane = lanes_[index];
  for (;;) {
    {
      std::unique_lock lock(mu_);
      lane.fetch_cv.wait(lock, [&] {
        return stop_phase_ != StopPhase::kRunning || lane.fetcher_ended ||
               should_overlap(lane.setup.config.concurrency, lane.setup.config.prefetch,
                              unfinished(lane), lane.ready.size(), lane.settling, lane.asking,
                              lane.full);
      });
      if (stop_phase_ != StopPhase::kRunning || lane.fetcher_ended) break;
    }
    // Unavailable or not full: lane.full is false now, so this waits for the fetcher's next
    // full lease; the fetcher alone backs off and waits for work.
    if (fetch_once(index) == Fetched::kEnd) break;
  }
  fetch_thread_ended(index);
}

void Runtime::fetch_thread_ended(std::size_t index) {
  {
    std::lock_guard lock(mu_);
    Lane& lane = lanes_[index];
    if (--lane.fetch_threads > 0) return;
    fetchers_done_ = std::all_of(lanes_.begin(), lanes_.end(),
                                 [](const Lane& l) { return l.fetch_threads == 0; });
  }
  cv_.notify_all();
}

Runtime::Fetched Runtime::fetch_once(std::size_t index) {
  Lane& lane = lanes_[index];
  int want = 0;
  {
    std::lock_guard lock(mu_);
    if (stop_phase_ != StopPhase::kRunning || lane.fetcher_ended) return Fetched::kEnd;
    const QueueConfig& config = lane.setup.config;
    want =
        std::min(free_slots(config.concurrency, config.prefetch, unfinished(lane), lane.settling),
                 lease_size(config.concurrency, config.prefetch, lane.full));
    if (want <= 0) return Fetched::kSome;
    lane.asking += want;
  }
  lane.fetch_cv.notify_all();  // a lease in flight: the second fetcher may overlap it
  const auto asked_at = Clock::now();
  auto jobs = queue_.lease(
      LeaseRequest{lane.setup.queue, options_.worker_id, want, options_.lease_duration});
  std::vector<Held*> leased_while_stopping;
  {
    std::lock_guard lock(mu_);
    lane.asking -= want;
    lane.full = jobs && std::cmp_equal(jobs->size(), want);
    // Once the fetcher has ended (and released what waited), nothing joins lane.ready.
    const bool stopping = stop_phase_ != StopPhase::kRunning || lane.fetcher_ended;
    if (jobs) {
      for (Job& job : *jobs) {
        auto held = std::make_unique<Held>();
        held->job = std::move(job);
        held->lane = index;
        held->lease_expires = asked_at + options_.lease_duration;
        Held* raw = held.get();
        held_.emplace(raw, std::move(held));
        ++lane.held;
        if (stopping) {
          mark_settling(*raw);
          leased_while_stopping.push_back(raw);
        } else {
          lane.ready.push_back(raw);
        }
      }
    }
  }
  // What a short lease did not take is free again: the other fetcher may want it.
  lane.fetch_cv.notify_all();
  if (!jobs) {
    if (!jobs.error().is_unavailable()) {
      fail_fatally(jobs.error());
      return Fetched::kEnd;
    }
    outage_.failed("leasing", jobs.error());
    return Fetched::kUnavailable;
  }
  outage_.recovered("leasing");
  if (jobs->empty()) return Fetched::kNone;
  lane.work_cv.notify_all();
  if (!leased_while_stopping.empty()) {
    // Leased just as the stop came: hand them straight back, no attempt spent.
    for (Held* held : leased_while_stopping) release(*held, "leased as the worker stopped");
    return Fetched::kEnd;
  }
  return Fetched::kSome;
}

int Runtime::unfinished(const Lane& lane) {
  return lane.held - lane.settling + lane.asking;
}

bool Runtime::needs_jobs(const Lane& lane) const {
  return should_lease(lane.setup.config.concurrency, lane.setup.config.prefetch, unfinished(lane),
                      lane.ready.size(), lane.settling);
}

void Runtime::mark_settling(Held& held) {
  held.phase = JobPhase::kSettling;
  ++lanes_[held.lane].settling;
}

bool Runtime::drained(std::size_t index) {
  Lane& lane = lanes_[index];
  {
    std::lock_guard lock(mu_);
    if (lane.held > 0 || lane.asking > 0) return false;
  }
  // Jobs this worker finished may have made waiting jobs of the queue available: tell them
  // now rather than at a later lease, which --drain would not make. A failure leaves it to
  // whoever leases next.
  (void)queue_.resolve_dependencies();
  auto stats = queue_.stats(lane.setup.queue);
  if (!stats) {
    if (stats.error().is_unavailable()) {
      outage_.failed("reading stats", stats.error());
    } else {
      log(LogLevel::kWarn,
          "cannot read the stats of queue " + lane.setup.queue + ": " + stats.error().message);
    }
    return false;
  }
  outage_.recovered("reading stats");
  return std::all_of(stats->begin(), stats->end(),
                     [](const QueueStats& s) { return s.available == 0 && s.running == 0; });
}

void Runtime::release_waiting(std::size_t index) {
  std::vector<Held*> waiting;
  {
    std::lock_guard lock(mu_);
    Lane& lane = lanes_[index];
    waiting.assign(lane.ready.begin(), lane.ready.end());
    lane.ready.clear();
    for (Held* held : waiting) mark_settling(*held);
  }
  for (Held* held : waiting) release(*held, "not started before the worker stopped");
}

// --- running ---

void Runtime::handler_loop(std::size_t index) {
  Lane& lane = lanes_[index];
  const QueueConfig& config = lane.setup.config;
  // A job taken in the turn of the lock that queued the last one's completion.
  Held* next = nullptr;
  for (;;) {
    Held* held = std::exchange(next, nullptr);
    bool wake_fetcher = false;
    if (held == nullptr) {
      std::unique_lock lock(mu_);
      // No new job starts once stopping: the fetcher releases what is left.
      lane.work_cv.wait(lock, [&] { return threads_exit_ || may_start(lane); });
      if (threads_exit_) return;
      held = start_next(lane);
      wake_fetcher = needs_jobs(lane);
    }
    if (wake_fetcher) lane.fetch_cv.notify_all();
    // The job is constant while held: read it without the lock. timeout_for is the
    // user's code: never call it under the lock.
    std::optional<Duration> timeout =
        config.timeout_for ? config.timeout_for(held->job) : std::nullopt;
    if (!timeout) timeout = config.timeout;
    if (timeout) {
      bool earlier = false;
      {
        std::lock_guard lock(mu_);
        held->timeout = *timeout;
        held->timeout_at = held->started + *timeout;
        earlier = *held->timeout_at < timer_next_;
      }
      if (earlier) timer_cv_.notify_one();  // the timer learns the new deadline
    }
    if (logs(LogLevel::kDebug)) {
      log(LogLevel::kDebug, describe(*held) + " started", job_fields(*held, "job_started"));
    }
    JobResult result = call_handler(lane.setup, *held);
    Abort abort;
    bool completing = false;
    {
      std::lock_guard lock(mu_);
      mark_settling(*held);
      abort = held->abort;
      --running_;
      // A success goes to the completer, and the thread takes its next job, in this one turn
      // of the lock: with short jobs, the lock's three turns a job, which eight threads and
      // the completer share, cost more than the jobs (docs/benchmarks.md, run 55). Any other
      // outcome settles by a call of its own first: the next job must not start before it.
      if (abort == Abort::kNone && result.kind() == JobResult::Kind::kSuccess) {
        to_complete_.push_back(Completion{held});
        completing = true;
        if (!threads_exit_ && may_start(lane)) next = start_next(lane);
      }
      // With prefetch its slot is free now, before its settling call returns (refill.hpp).
      wake_fetcher = needs_jobs(lane);
    }
    if (wake_fetcher) lane.fetch_cv.notify_all();
    if (completing) {
      complete_cv_.notify_one();
    } else {
      settle(*held, result, abort);
    }
  }
}

bool Runtime::may_start(const Lane& lane) const {
  return stop_phase_ == StopPhase::kRunning && !lane.ready.empty();
}

Runtime::Held* Runtime::start_next(Lane& lane) {
  Held* held = lane.ready.front();
  lane.ready.pop_front();
  held->phase = JobPhase::kRunning;
  held->started = Clock::now();
  ++running_;
  return held;
}

JobResult Runtime::call_handler(const LaneSetup& setup, const Held& held) {
  try {
    return setup.handler(held.job, held.stop.get_token());
  } catch (const std::exception& e) {
    return JobResult::failure(e.what());
  } catch (...) {
    return JobResult::failure("the handler threw an exception that is not a std::exception");
  }
}

void Runtime::settle(Held& held, const JobResult& result, Abort abort) {
  switch (abort) {
    case Abort::kLeaseLost: {
      ++lost_;
      log(LogLevel::kWarn,
          describe(held) + ": lease lost (cancelled, or taken over by another worker); " +
              "stopped it, result discarded",
          job_fields(held, "lease_lost"));
      forget(held);
      return;
    }
    case Abort::kShutdown:
      release(held, "stopped at shutdown after " + took(Clock::now() - held.started));
      return;
    case Abort::kTimedOut: {
      std::string error = "timed out after " + format_duration(held.timeout);
      if (!result.error().empty() && result.kind() != JobResult::Kind::kSuccess) {
        error += ": " + result.error();
      }
      record_failure(held, std::move(error), std::nullopt, false);
      return;
    }
    case Abort::kNone:
      break;
  }
  switch (result.kind()) {
    case JobResult::Kind::kSuccess:
      // handler_loop queues its completions itself; this is for any other caller.
      {
        std::lock_guard lock(mu_);
        to_complete_.push_back(Completion{&held});
      }
      complete_cv_.notify_one();
      return;
    case JobResult::Kind::kFailure:
      record_failure(held, result.error(), result.retry_delay(), false);
      return;
    case JobResult::Kind::kDiscard:
      record_failure(held, result.error(), std::nullopt, true);
      return;
  }
}

void Runtime::record_failure(Held& held, std::string error, std::optional<Duration> retry_after,
                             bool no_retry) {
  const QueueConfig& config = lanes_[held.lane].setup.config;
  FailOptions fail_options;
  fail_options.retry_after = retry_after;
  fail_options.backoff = config.backoff;
  if (!retry_after && config.retry_delay) {
    // The user's function; never called under the lock.
    Duration delay = config.retry_delay(held.job);
    fail_options.retry_after = std::clamp(delay, Duration::zero(), kMaxDuration);
  }
  fail_options.no_retry =
      no_retry || (config.max_attempts && held.job.attempts >= *config.max_attempts);
  Clock::time_point give_up;
  {
    std::lock_guard lock(mu_);
    give_up = held.lease_expires;
  }
  bool was_unavailable = false;
  auto failed = retry_unavailable(
      "recording a failure",
      [&] { return queue_.fail(held.job.id, *held.job.lease_token, error, fail_options); }, give_up,
      &was_unavailable);
  const std::string who = describe(held);
  auto fields = job_fields(held, "job_failed");
  fields.emplace_back("error", one_line(error));
  if (!failed && failed.error().is_lease_lost() && was_unavailable) {
    // The first send may have committed before its reply was lost: look.
    // Still our token but no longer running: nothing but our fail ends a lease that way
    // before it expires (a cancel makes it cancelled, a new lease changes the token).
    auto job = queue_.get(held.job.id);
    if (job && job->lease_token == held.job.lease_token &&
        (job->state == JobState::kAvailable || job->state == JobState::kDead)) {
      failed = job->state == JobState::kDead ? FailOutcome::kDead : FailOutcome::kRetrying;
    }
  }
  if (!failed) {
    if (failed.error().is_lease_lost()) {
      ++lost_;
      log(LogLevel::kWarn,
          who +
              " failed, but its lease was lost (cancelled, or taken over by another worker); "
              "result discarded",
          job_fields(held, "lease_lost"));
    } else {
      log(LogLevel::kError,
          who + ": cannot record its failure: " + failed.error().message +
              (failed.error().is_unavailable() ? "; it runs again once its lease expires" : ""),
          fields);
    }
    forget(held);
    return;
  }
  ++failed_;
  if (*failed == FailOutcome::kDead) {
    ++dead_;
    fields[0].second = "job_dead";
    log(LogLevel::kError, who + " failed and is dead (no retry): " + one_line(error), fields);
  } else {
    log(LogLevel::kWarn, who + " failed, will retry: " + one_line(error), fields);
  }
  forget(held);
}

void Runtime::release(Held& held, std::string_view why) {
  Clock::time_point give_up;
  {
    std::lock_guard lock(mu_);
    give_up = held.lease_expires;
  }
  auto released = retry_unavailable(
      "releasing a job", [&] { return queue_.release(held.job.id, *held.job.lease_token); },
      give_up);
  if (released) {
    ++released_;
    log(LogLevel::kInfo, describe(held) + " " + std::string(why) + ": released",
        job_fields(held, "job_released"));
  } else if (!released.error().is_lease_lost()) {
    log(LogLevel::kWarn, describe(held) + ": cannot release: " + released.error().message,
        job_fields(held, "job_released"));
  }
  forget(held);
}

void Runtime::forget(Held& held) {
  Lane& lane = lanes_[held.lane];
  bool wake_fetcher = false;
  bool last = false;
  {
    std::lock_guard lock(mu_);
    --lane.held;
    if (held.phase == JobPhase::kSettling) --lane.settling;
    held_.erase(&held);  // destroys `held`
    wake_fetcher = needs_jobs(lane);
    last = fetchers_done_ && held_.empty();
  }
  if (wake_fetcher) lane.fetch_cv.notify_all();
  if (last) cv_.notify_all();
}

void Runtime::forget_all(std::span<const Completion> batch) {
  std::vector<std::unique_ptr<Held>> gone;
  gone.reserve(batch.size());
  std::vector<bool> touched(lanes_.size(), false);
  std::vector<std::size_t> to_wake;
  bool last = false;
  {
    std::lock_guard lock(mu_);
    for (const Completion& c : batch) {
      Lane& lane = lanes_[c.held->lane];
      touched[c.held->lane] = true;
      --lane.held;
      if (c.held->phase == JobPhase::kSettling) --lane.settling;
      // Destroyed after the lock is released, below.
      gone.push_back(std::move(held_.extract(c.held).mapped()));
    }
    for (std::size_t i = 0; i < lanes_.size(); ++i) {
      if (touched[i] && needs_jobs(lanes_[i])) to_wake.push_back(i);
    }
    last = fetchers_done_ && held_.empty();
  }
  for (std::size_t i : to_wake) lanes_[i].fetch_cv.notify_all();
  if (last) cv_.notify_all();
}

// --- completing ---

void Runtime::complete_loop() {
  for (;;) {
    std::vector<Completion> batch;
    Clock::time_point give_up = Clock::time_point::max();
    {
      std::unique_lock lock(mu_);
      complete_cv_.wait(lock, [&] { return !to_complete_.empty() || threads_exit_; });
      if (to_complete_.empty()) return;
      if (to_complete_.size() <= kMaxCompleteBatch) {
        batch.swap(to_complete_);
      } else {
        auto end = to_complete_.begin() + static_cast<std::ptrdiff_t>(kMaxCompleteBatch);
        batch.assign(to_complete_.begin(), end);
        to_complete_.erase(to_complete_.begin(), end);
      }
      for (const Completion& c : batch) give_up = std::min(give_up, c.held->lease_expires);
    }
    std::vector<LeasedRef> refs;
    refs.reserve(batch.size());
    for (const Completion& c : batch) refs.push_back({c.held->job.id, *c.held->job.lease_token});
    bool was_unavailable = false;
    auto accepted = retry_unavailable(
        "completing jobs", [&] { return queue_.complete_batch(refs); }, give_up, &was_unavailable);
    for (std::size_t i = 0; i < batch.size(); ++i) {
      Held& held = *batch[i].held;
      bool done = accepted && (*accepted)[i];
      if (accepted && !done && was_unavailable) {
        // Lease lost after an outage: the first send may have committed before its reply
        // was lost. The row says: succeeded under our token (or deleted, when succeeded
        // jobs are not kept) means it was ours.
        auto job = queue_.get(held.job.id);
        done = (job && job->state == JobState::kSucceeded &&
                job->lease_token == held.job.lease_token) ||
               (!job && job.error().code == ErrorCode::kNotFound &&
                queue_.options().retention.succeeded == Duration::zero());
      }
      if (done) {
        ++succeeded_;
        if (logs(LogLevel::kDebug)) {
          const auto duration = Clock::now() - held.started;
          auto fields = job_fields(held, "job_succeeded");
          fields.emplace_back("duration_ms", millis(duration));
          log(LogLevel::kDebug, describe(held) + " succeeded in " + took(duration),
              std::move(fields));
        }
      } else if (accepted) {
        ++lost_;
        log(LogLevel::kWarn,
            describe(held) +
                " finished, but its lease was lost (cancelled, or taken over by another "
                "worker); result discarded",
            job_fields(held, "lease_lost"));
      } else {
        log(LogLevel::kError,
            describe(held) + ": cannot record its success: " + accepted.error().message +
                (accepted.error().is_unavailable() ? "; it runs again once its lease expires" : ""),
            job_fields(held, "job_succeeded"));
      }
    }
    forget_all(batch);
  }
}

// --- leases and time limits ---

void Runtime::heartbeat_loop() {
  const Duration interval =
      std::max<Duration>(options_.lease_duration / 3, std::chrono::milliseconds(50));
  auto next_extend = Clock::now() + interval;
  auto next_check = Clock::now() + kLeaseCheck;
  std::unique_lock lock(mu_);
  while (!threads_exit_) {
    cv_.wait_until(lock, std::min(next_extend, next_check),
                   [&] { return threads_exit_ || check_leases_now_; });
    if (threads_exit_) return;
    check_leases_now_ = false;
    const auto now = Clock::now();
    // Extends renew every lease; checks in between only read whether running jobs' leases
    // still hold.
    const bool extending = now >= next_extend;
    if (extending) next_extend = now + interval;
    next_check = now + kLeaseCheck;
    std::vector<LeasedRef> refs;
    std::vector<const Held*> owners;  // owners[i] held refs[i] when the call was made
    refs.reserve(held_.size());
    owners.reserve(held_.size());
    for (const auto& [key, held] : held_) {
      if (!extending && held->phase != JobPhase::kRunning) continue;
      refs.push_back({held->job.id, *held->job.lease_token});
      owners.push_back(key);
    }
    if (refs.empty()) continue;
    lock.unlock();
    auto answer =
        extending ? queue_.extend_batch(refs, options_.lease_duration) : queue_.leases_held(refs);
    const std::string_view kind = extending ? "extending leases" : "checking leases";
    lock.lock();
    if (!answer) {
      if (answer.error().is_unavailable()) {
        outage_.failed(kind, answer.error());
        if (extending) next_extend = std::min(next_extend, Clock::now() + kHeartbeatRetry);
      } else {
        lock.unlock();
        log(LogLevel::kError, "error " + std::string(kind) + ": " + answer.error().message);
        lock.lock();
      }
      continue;
    }
    outage_.recovered(kind);
    std::vector<std::stop_source> to_stop;
    std::vector<Held*> lost_waiting;
    for (std::size_t i = 0; i < refs.size() && i < answer->size(); ++i) {
      // Settled and gone meanwhile (or its address reused by another job): skip it.
      auto it = held_.find(owners[i]);
      if (it == held_.end() || it->second->job.id != refs[i].id ||
          *it->second->job.lease_token != refs[i].token) {
        continue;
      }
      Held& held = *it->second;
      if ((*answer)[i]) {
        if (extending) held.lease_expires = now + options_.lease_duration;
      } else if (held.phase == JobPhase::kRunning && held.abort == Abort::kNone) {
        // Settling jobs are left alone: their own call reports what happened.
        held.abort = Abort::kLeaseLost;
        to_stop.push_back(held.stop);
      } else if (held.phase == JobPhase::kWaiting) {
        // Cancelled before a handler took it: drop it from the lane's queue.
        auto& ready = lanes_[held.lane].ready;
        ready.erase(std::remove(ready.begin(), ready.end(), &held), ready.end());
        mark_settling(held);
        lost_waiting.push_back(&held);
      }
    }
    lock.unlock();
    for (auto& stop : to_stop) stop.request_stop();
    for (Held* held : lost_waiting) {
      ++lost_;
      log(LogLevel::kInfo, describe(*held) + ": lease lost before it started; dropped",
          job_fields(*held, "lease_lost"));
      forget(*held);
    }
    lock.lock();
  }
}

void Runtime::timer_loop() {
  std::unique_lock lock(mu_);
  while (!threads_exit_) {
    const auto now = Clock::now();
    std::optional<Clock::time_point> next;
    auto consider = [&](Clock::time_point t) { next = next ? std::min(*next, t) : t; };
    std::vector<std::stop_source> to_stop;
    std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>> messages;
    for (auto& [key, entry] : held_) {
      Held& held = *entry;
      if (held.phase != JobPhase::kRunning || held.abort != Abort::kNone) continue;
      if (held.timeout_at && *held.timeout_at <= now) {
        held.abort = Abort::kTimedOut;
        to_stop.push_back(held.stop);
        messages.emplace_back(
            describe(held) + " timed out after " + format_duration(held.timeout) + "; stopping it",
            job_fields(held, "job_timed_out"));
        continue;
      }
      if (stop_phase_ != StopPhase::kRunning && grace_deadline_ <= now) {
        held.abort = Abort::kShutdown;
        to_stop.push_back(held.stop);
        messages.emplace_back(describe(held) + ": grace period over; stopping it",
                              job_fields(held, "job_stopped"));
        continue;
      }
      if (held.timeout_at) consider(*held.timeout_at);
      if (stop_phase_ != StopPhase::kRunning) consider(grace_deadline_);
    }
    if (!to_stop.empty()) {
      lock.unlock();
      for (auto& stop : to_stop) stop.request_stop();
      for (auto& [message, fields] : messages) log(LogLevel::kInfo, message, std::move(fields));
      lock.lock();
      continue;
    }
    // Woken by a job whose timeout falls before `next`, a stop request, the end.
    timer_next_ = next.value_or(Clock::time_point::max());
    if (next) {
      timer_cv_.wait_until(lock, *next);
    } else {
      timer_cv_.wait(lock);
    }
  }
}

// --- the process's heartbeat and metrics ---

WorkerProcess Runtime::describe_process() const {
  WorkerProcess process;
  process.name = options_.worker_id;
  process.host = host_name();
  process.pid = ::getpid();
  for (const Lane& lane : lanes_) {
    process.queues.push_back(lane.setup.queue);
    process.threads += lane.setup.config.concurrency;
  }
  return process;
}

void Runtime::report_loop() {
  const WorkerProcess process = describe_process();
  std::unique_lock lock(mu_);
  while (!threads_exit_) {
    lock.unlock();
    // Both are best effort: an outage is logged by the calls that need the database.
    (void)queue_.report_worker(process);
    (void)queue_.flush_metrics();
    lock.lock();
    cv_.wait_for(lock, kReportInterval, [&] { return threads_exit_; });
  }
  lock.unlock();
  // Every job is settled by now: what they counted goes out before the process does.
  (void)queue_.flush_metrics();
  (void)queue_.forget_worker(process.name);
}

// --- maintenance: schedules, retention and the snapshot watch ---

void Runtime::maintenance_loop() {
  auto next_schedule = Clock::now();
  // Per lane: each queue's claim returns at its own time (after the passes of the queues
  // before it), and its next try is counted from then (retention_turn.hpp).
  std::vector<Clock::time_point> next_retention(lanes_.size(), Clock::now());
  // The first look comes one interval after the start, not at it: a worker's start (and a
  // short `work --drain`) pays no read of the catalog, and a holder worth a warning has held
  // that long anyway.
  std::optional<SnapshotWatch> snapshot_watch;
  auto next_snapshot_watch = Clock::now();
  if (options_.warn_snapshot_after) {
    snapshot_watch.emplace(*options_.warn_snapshot_after);
    next_snapshot_watch += snapshot_watch_interval();
  }
  for (;;) {
    {
      std::unique_lock lock(mu_);
      auto wake = Clock::time_point::max();
      if (options_.run_schedules) wake = std::min(wake, next_schedule);
      if (options_.retention_interval) {
        wake = std::min(wake, *std::min_element(next_retention.begin(), next_retention.end()));
      }
      if (snapshot_watch) wake = std::min(wake, next_snapshot_watch);
      cv_.wait_until(lock, wake,
                     [&] { return threads_exit_ || stop_phase_ != StopPhase::kRunning; });
      if (threads_exit_ || stop_phase_ != StopPhase::kRunning) return;
    }
    const auto now = Clock::now();
    if (options_.run_schedules && now >= next_schedule) {
      next_schedule = now + kScheduleWaitMax;
      auto enqueued = queue_.enqueue_due();
      if (!enqueued) {
        if (enqueued.error().is_unavailable()) {
          outage_.failed("enqueuing scheduled jobs", enqueued.error());
        } else {
          log(LogLevel::kWarn, "cannot enqueue scheduled jobs: " + enqueued.error().message,
              {{"event", "schedule_error"}, {"error", enqueued.error().message}});
        }
      } else {
        outage_.recovered("enqueuing scheduled jobs");
        for (const ScheduledJob& job : *enqueued) {
          log(LogLevel::kInfo,
              "schedule " + job.schedule + ": enqueued job " + std::to_string(job.id) + " for " +
                  format_time(job.tick),
              {{"event", "schedule_tick"},
               {"schedule", job.schedule},
               {"job_id", std::to_string(job.id)},
               {"tick", format_time(job.tick)}});
        }
        // Wake for the next tick of any schedule, if it comes within a second.
        if (auto schedules = queue_.list_schedules()) {
          const TimePoint wall =
              std::chrono::time_point_cast<Duration>(std::chrono::system_clock::now());
          for (const Schedule& schedule : *schedules) {
            auto spec = detail::ScheduleSpec::parse(schedule.spec);
            if (!spec) continue;
            if (auto tick = spec->next_after(wall)) {
              const auto wait =
                  std::clamp<Clock::duration>(*tick - wall, kScheduleWaitMin, kScheduleWaitMax);
              next_schedule = std::min(next_schedule, now + wait);
            }
          }
        }
      }
    }
    if (options_.retention_interval) run_retention(next_retention);
    if (snapshot_watch && Clock::now() >= next_snapshot_watch) {
      next_snapshot_watch = watch_snapshots(*snapshot_watch);
    }
  }
}

Duration Runtime::snapshot_watch_interval() const {
  // A turn per interval of all processes, at most one a second: the claim is one upsert, the
  // look a read of pg_stat_activity and the catalog.
  return std::max<Duration>(*options_.warn_snapshot_after, std::chrono::seconds(1));
}

Runtime::Clock::time_point Runtime::watch_snapshots(SnapshotWatch& watch) {
  const Duration interval = snapshot_watch_interval();
  auto claimed = queue_.claim_task("snapshot_watch", interval, options_.worker_id);
  const auto next = Clock::now() + interval;
  if (!claimed || !*claimed) return next;  // another's turn, or the database is away
  auto health = queue_.storage_health();
  if (!health) {
    log(LogLevel::kWarn, "cannot read the storage's health: " + health.error().message,
        {{"event", "snapshot_watch_error"}, {"error", health.error().message}});
    return next;
  }
  if (auto warning = watch.observe(*health, Clock::now())) {
    std::vector<std::pair<std::string, std::string>> fields{{"event", "snapshot_held"}};
    for (auto& field : detail::snapshot_holder_fields(*health->oldest_snapshot)) {
      fields.push_back(std::move(field));
    }
    log(LogLevel::kWarn, std::move(*warning), std::move(fields));
  }
  return next;
}

void Runtime::run_retention(std::vector<Clock::time_point>& next_retention) {
  const Duration interval = *options_.retention_interval;
  for (std::size_t i = 0; i < lanes_.size(); ++i) {
    if (Clock::now() < next_retention[i]) continue;
    const std::string& queue = lanes_[i].setup.queue;
    auto turn =
        take_retention_turn(queue_, queue, interval, options_.worker_id, [this](Duration d) {
          std::unique_lock lock(mu_);
          return !cv_.wait_for(lock, d,
                               [&] { return threads_exit_ || stop_phase_ != StopPhase::kRunning; });
        });
    if (!turn) {
      // Try again in one interval, as after a turn.
      next_retention[i] = Clock::now() + interval;
      if (turn.error().is_unavailable()) {
        outage_.failed("retention of " + queue, turn.error());
      } else {
        log(LogLevel::kWarn, "retention of " + queue + " stopped: " + turn.error().message,
            {{"event", "retention_error"}, {"queue", queue}, {"error", turn.error().message}});
      }
      continue;
    }
    next_retention[i] = turn->claim_returned + interval;
    outage_.recovered("retention of " + queue);
    if (turn->removed > 0) {
      log(LogLevel::kInfo,
          "retention: removed " + std::to_string(turn->removed) + " finished job(s) of " + queue,
          {{"event", "retention"}, {"queue", queue}, {"removed", std::to_string(turn->removed)}});
    }
  }
}

}  // namespace readpast::worker
