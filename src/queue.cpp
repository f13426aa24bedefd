// queue.cpp — the engine-independent rules: validation, backoff, retention and when to
// rescue expired leases. Engines only run SQL.
#include "readpast/queue.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "core/log.hpp"
#include "core/queue_metrics.hpp"
#include "core/schedule_spec.hpp"
#include "core/snapshot_holder_text.hpp"
#include "core/url.hpp"
#include "core/utf8.hpp"
#include "core/validate.hpp"
#include "engines/engine_registry.hpp"

namespace readpast {
namespace {

// How long resolve_all() waits for a resolver's lock or rows another session holds, and the
// pauses between its tries (doubling): a lease's or a settling's hold lasts milliseconds.
constexpr Duration kResolveRetryFor = std::chrono::seconds(2);
constexpr Duration kResolveRetryPause = std::chrono::milliseconds(5);
constexpr Duration kResolveRetryPauseMax = std::chrono::milliseconds(200);

}  // namespace

struct Queue::State {
  // Constant after construction.
  QueueOptions options;
  std::unique_ptr<detail::Engine> engine;
  // What this Queue counted since its last flush (thread-safe on its own).
  std::optional<detail::QueueMetrics> metrics;

  // Counts a database error of the call, then hands its result on.
  template <class T>
  Result<T> noted(Result<T> result) {
    if (!result) metrics->database_error(result.error().code);
    return result;
  }

  // Adds what was counted to the database's totals when the interval has passed; a
  // failure keeps the counts for the next try and does not fail the caller's call.
  void flush_if_due() {
    if (metrics->flush_due()) (void)flush();
  }
  Status flush() {
    auto rows = metrics->take();
    if (rows.empty()) return {};
    auto added = noted(engine->add_metrics(rows));
    if (!added) metrics->put_back(std::move(rows));
    return added;
  }

  // Guarded by mu: the jitter source and when each queue's expired leases were last
  // rescued (a steady-clock time; only used to space out rescues).
  std::mutex mu;
  std::mt19937_64 rng{std::random_device{}()};
  std::map<std::string, std::chrono::steady_clock::time_point, std::less<>> last_rescue;

  double draw_jitter() {
    std::lock_guard lock(mu);
    return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
  }

  // When lease() last resolved dependencies (guarded by mu).
  std::optional<std::chrono::steady_clock::time_point> last_resolve;
  bool resolve_due() {
    auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(mu);
    if (last_resolve && now - *last_resolve < Queue::kResolveInterval) return false;
    last_resolve = now;
    return true;
  }
  // Held by whoever runs rounds of resolve_dependencies through this Queue. An engine skips a
  // round while another session holds the database's resolver lock, and reports nothing
  // done; without this, resolve_all() could return while a lease of this same process was
  // telling one level of a chain, and a draining worker would stop with the next level
  // untold (a chain cancelled by a dead job, cli.mariadb under CI's load). resolve_all()
  // waits for it; a lease only tries it, and leaves the work to whoever holds it.
  std::mutex resolve_mu;

  // One round of resolve_dependencies for lease(): a lease waits for one short transaction
  // at most. A round that found work makes the next lease run another at once, so that the
  // leases of a busy worker keep up with the jobs finishing; an error leaves it to the next.
  void resolve_one_round() {
    std::unique_lock round(resolve_mu, std::try_to_lock);
    if (!round.owns_lock()) return;
    auto left = noted(engine->has_untold());
    if (!left || !*left) return;
    auto moved = noted(engine->resolve_dependencies());
    if (moved && *moved > 0) {
      std::lock_guard lock(mu);
      last_resolve.reset();
    }
  }

  // Tells dependents until nothing is left (Queue::resolve_dependencies). A round that told
  // nothing may have been skipped rather than found nothing: another session held the
  // resolver's lock, or a row the round takes with SKIP LOCKED (another process resolving;
  // in CI's failures, most likely a lease's locking scan passing over a finished job's row,
  // not confirmed). Returning then let a draining worker stop with a chain untold
  // (cli.mariadb under CI's load, twice); so while the engine says something is left, this
  // waits and tries again, for at most kResolveRetryFor: a session that keeps the lock
  // longer is resolving, and tells them itself. One read of has_untold() after each round
  // decides both whether another is needed and, after one that told nothing, whether to wait.
  Result<std::int64_t> resolve_all() {
    std::lock_guard rounds(resolve_mu);
    std::int64_t total = 0;
    const auto give_up = std::chrono::steady_clock::now() + kResolveRetryFor;
    Duration pause = kResolveRetryPause;
    for (auto left = noted(engine->has_untold());; left = noted(engine->has_untold())) {
      if (!left) return fail_with(left.error());
      if (!*left) return total;
      auto moved = noted(engine->resolve_dependencies());
      if (!moved) return fail_with(moved.error());
      total += *moved;
      if (*moved > 0) continue;
      // Skipped: something is left but another session held it. Read again after a pause.
      if (std::chrono::steady_clock::now() + pause > give_up) return total;
      std::this_thread::sleep_for(pause);
      pause = std::min<Duration>(pause * 2, kResolveRetryPauseMax);
    }
  }

  // When lease() last tried a turn at rotating the storage (guarded by mu). A try claims the
  // turn (one upsert) at most every kRotationTry; one process of all gets it per
  // Queue::kRotationInterval. Counted from the Queue's opening, so that a process' first
  // lease, whose latency is the time its first job waits, does not pay for a turn.
  static constexpr Duration kRotationTry = std::chrono::seconds(1);
  std::chrono::steady_clock::time_point last_rotation_try = std::chrono::steady_clock::now();
  bool rotation_try_due() {
    if (options.read_only || !engine->storage_rotates()) return false;
    auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(mu);
    if (now - last_rotation_try < kRotationTry) return false;
    last_rotation_try = now;
    return true;
  }
  // One try from lease(): the lease goes on whatever happens here. An error is said, once per
  // turn (a role without the rights to rotate, say); the storage then only grows until
  // autovacuum cleans it, which is slower but correct.
  void take_rotation_turn(std::string_view by) {
    auto claimed = noted(engine->claim_task("ring", Queue::kRotationInterval, by));
    if (!claimed || !*claimed) return;
    auto rotation = noted(engine->rotate_storage());
    if (!rotation) {
      detail::emit(options.logger, LogLevel::kWarn,
                   "cannot rotate the running jobs' storage: " + rotation.error().message,
                   {{"event", "rotation_error"}, {"error", rotation.error().message}});
      return;
    }
    if (rotation->blocked_by) say_rotation_blocked(*rotation->blocked_by);
  }

  // A turn found the segment to empty held by a long transaction: the ring stops turning until
  // it ends, and its segments are cleaned by autovacuum only, which a held snapshot stops too.
  // Said once the holder's transaction is older than a rotation interval (a transaction of a
  // few seconds only delays one turn), at most every kRotationBlockedSaid per process.
  static constexpr Duration kRotationBlockedSaid = std::chrono::minutes(1);
  std::optional<std::chrono::steady_clock::time_point> rotation_blocked_said;  // guarded by mu
  void say_rotation_blocked(const SnapshotHolder& holder) {
    if (!holder.age || *holder.age < Queue::kRotationInterval) return;
    const auto now = std::chrono::steady_clock::now();
    {
      std::lock_guard lock(mu);
      if (rotation_blocked_said && now - *rotation_blocked_said < kRotationBlockedSaid) return;
      rotation_blocked_said = now;
    }
    detail::LogFields fields{{"event", "rotation_blocked"}};
    for (auto& field : detail::snapshot_holder_fields(holder)) fields.push_back(std::move(field));
    detail::emit(
        options.logger, LogLevel::kWarn,
        "the running jobs' storage cannot rotate: " + detail::snapshot_holder_text(holder) +
            " holds the segment to empty; until that transaction ends, the rows of "
            "settled jobs are reclaimed by autovacuum only (docs/postgres.md, "
            "\"Running jobs: a ring of three segments\")",
        std::move(fields));
  }

  // True when the queue's expired leases are due for a rescue; marks it done.
  bool rescue_due(std::string_view queue) {
    auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(mu);
    auto it = last_rescue.find(queue);
    if (it != last_rescue.end() && now - it->second < options.rescue_interval) return false;
    last_rescue.insert_or_assign(std::string(queue), now);
    return true;
  }

  // Whether each queue has limits, as this Queue last saw it (guarded by mu). A queue without
  // limits takes the plain lease, which hands out nothing of a limited queue (the same row
  // read as the pause test): so a stale "no limits" costs an empty lease, never a limit
  // broken, and it is looked up again when a lease comes back empty, at most once per
  // kLimitsRecheck per queue. A limited queue's lease says itself whether limits remain.
  static constexpr auto kLimitsRecheck = std::chrono::seconds(1);
  struct LimitHint {
    bool limited = false;
    std::chrono::steady_clock::time_point checked{};
  };
  std::map<std::string, LimitHint, std::less<>> limit_hints;

  bool limited(std::string_view queue) {
    std::lock_guard lock(mu);
    auto it = limit_hints.find(queue);
    return it != limit_hints.end() && it->second.limited;
  }
  // True when the queue's limits are due to be looked up again; marks them looked up.
  bool limits_recheck_due(std::string_view queue) {
    auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(mu);
    auto it = limit_hints.find(queue);
    if (it != limit_hints.end() && now - it->second.checked < kLimitsRecheck) return false;
    limit_hints.insert_or_assign(std::string(queue), LimitHint{false, now});
    return true;
  }
  void note_limited(std::string_view queue, bool is_limited) {
    auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(mu);
    limit_hints.insert_or_assign(std::string(queue), LimitHint{is_limited, now});
  }

  const Backoff& backoff_for(std::string_view queue) const {
    auto it = options.queue_backoff.find(queue);
    return it == options.queue_backoff.end() ? options.backoff : it->second;
  }

  const Retention& retention_for(std::string_view queue) const {
    auto it = options.queue_retention.find(queue);
    return it == options.queue_retention.end() ? options.retention : it->second;
  }

  // One failed attempt as the engine takes it, with the backoff resolved. Backoff
  // precedence: the call's, then the job's queue's, then the default. Engines get the
  // resolved numbers and apply them to the attempt count they read under the fence.
  // nullopt when per-queue policies exist and the job vanished (to the caller: a lost lease).
  Result<std::optional<detail::FailItem>> fail_item(JobId id, const LeaseToken& token,
                                                    std::string_view error,
                                                    const FailOptions& fail_options) {
    if (token.empty()) return fail_with(Error::invalid_argument("lease token is empty"));
    if (fail_options.retry_after) {
      if (auto ok =
              detail::validate_non_negative_duration(*fail_options.retry_after, "retry_after");
          !ok) {
        return fail_with(ok.error());
      }
    }
    if (fail_options.backoff) {
      if (auto ok = fail_options.backoff->validate(); !ok) return fail_with(ok.error());
    }
    detail::FailItem item;
    item.ref = LeasedRef{id, token};
    item.error = std::string(error);
    item.retry_after = fail_options.retry_after;
    item.no_retry = fail_options.no_retry;
    const Backoff* backoff = fail_options.backoff ? &*fail_options.backoff : nullptr;
    if (backoff == nullptr && !options.queue_backoff.empty()) {
      // Per-queue policies exist: the job's queue decides (one read by primary key).
      auto job = engine->get(id);
      if (!job) return fail_with(job.error());
      if (!*job) return std::optional<detail::FailItem>{};
      backoff = &backoff_for((*job)->queue);
    }
    if (backoff == nullptr) backoff = &options.backoff;
    item.backoff_base = backoff->base;
    item.backoff_cap = backoff->cap;
    item.backoff_factor = 1.0 - backoff->jitter * draw_jitter();
    return std::optional<detail::FailItem>(std::move(item));
  }
};

namespace {

Status validate_ref(const LeaseToken& token) {
  if (token.empty()) return fail_with(Error::invalid_argument("lease token is empty"));
  return {};
}

Status lease_lost(JobId id) {
  return fail_with(Error::lease_lost("lease lost: job " + std::to_string(id) +
                                     " is no longer running under this lease token"));
}

}  // namespace

Result<Queue> Queue::open(std::string_view url, QueueOptions options) {
  auto parsed = detail::parse_database_url(url);
  if (!parsed) return fail_with(parsed.error());
  if (options.read_only && options.init_schema) {
    return fail_with(Error::invalid_argument("a read-only Queue cannot create the schema"));
  }
  if (auto ok = options.backoff.validate(); !ok) return fail_with(ok.error());
  for (const auto& [name, backoff] : options.queue_backoff) {
    if (auto ok = validate_queue_name(name); !ok) return fail_with(ok.error());
    if (auto ok = backoff.validate(); !ok) return fail_with(ok.error());
  }
  if (auto ok = options.retention.validate(); !ok) return fail_with(ok.error());
  for (const auto& [name, retention] : options.queue_retention) {
    if (auto ok = validate_queue_name(name); !ok) return fail_with(ok.error());
    if (auto ok = retention.validate(); !ok) return fail_with(ok.error());
  }
  auto engine = detail::open_engine(*parsed, options);
  if (!engine) return fail_with(engine.error());
  if (options.init_schema) {
    if (auto version = (*engine)->migrate(); !version) return fail_with(version.error());
  } else if (auto ok = (*engine)->check_schema(); !ok) {
    return fail_with(ok.error());
  }
  auto state = std::make_unique<State>();
  // A read-only Queue cannot add to the database's totals.
  state->metrics.emplace(options.read_only ? Duration::zero() : options.metrics_interval);
  state->options = std::move(options);
  state->engine = std::move(*engine);
  return Queue(std::move(state));
}

Queue::Queue(std::unique_ptr<State> state) : state_(std::move(state)) {}
Queue::Queue(Queue&&) noexcept = default;
Queue& Queue::operator=(Queue&&) noexcept = default;
Queue::~Queue() = default;

const QueueOptions& Queue::options() const noexcept {
  return state_->options;
}

Result<int> Queue::init() {
  return state_->engine->migrate();
}

Result<Enqueued> Queue::enqueue(const NewJob& job) {
  auto results = enqueue_batch(std::span<const NewJob>(&job, 1));
  if (!results) return fail_with(results.error());
  return results->front();
}

Result<std::vector<Enqueued>> Queue::enqueue_batch(std::span<const NewJob> jobs) {
  // Validate all before any reaches the database: a batch is all or nothing.
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (auto ok = detail::validate_new_job(jobs[i], state_->options.max_payload_bytes); !ok) {
      if (jobs.size() == 1) return fail_with(ok.error());
      return fail_with(Error::invalid_argument("job " + std::to_string(i + 1) +
                                               " of the batch: " + ok.error().message));
    }
  }
  if (jobs.empty()) return std::vector<Enqueued>{};
  return state_->noted(state_->engine->enqueue(jobs));
}

Result<std::vector<Job>> Queue::lease(const LeaseRequest& request) {
  if (auto ok = detail::validate_lease_request(request); !ok) return fail_with(ok.error());
  if (state_->rescue_due(request.queue)) {
    auto rescued = state_->noted(state_->engine->rescue_expired(request.queue));
    if (!rescued) return fail_with(rescued.error());
    state_->metrics->rescued(request.queue, *rescued);
  }
  // Jobs that waited for others become available here, even when only workers run.
  if (!state_->options.read_only && state_->resolve_due()) state_->resolve_one_round();
  if (state_->rotation_try_due()) state_->take_rotation_turn(request.worker_id);
  const auto sent = std::chrono::steady_clock::now();
  bool limited = state_->limited(request.queue);
  Result<std::vector<Job>> jobs = std::vector<Job>{};
  if (!limited) {
    jobs = state_->noted(state_->engine->lease(request));
    if (jobs && jobs->empty() && state_->limits_recheck_due(request.queue)) {
      auto limits = state_->noted(state_->engine->limits(request.queue));
      if (!limits) return fail_with(limits.error());
      limited = !limits->empty();
      state_->note_limited(request.queue, limited);
    }
  }
  if (limited) {
    auto taken = state_->noted(state_->engine->lease_limited(request));
    if (!taken) return fail_with(taken.error());
    state_->note_limited(request.queue, taken->limited);
    if (taken->throttled) state_->metrics->throttled(request.queue, *taken->throttled);
    jobs = std::move(taken->jobs);
  }
  if (jobs) {
    state_->metrics->leased(
        request.queue, *jobs, request.lease_duration,
        std::chrono::duration_cast<Duration>(std::chrono::steady_clock::now() - sent));
  }
  return jobs;
}

Status Queue::complete(JobId id, const LeaseToken& token) {
  LeasedRef ref{id, token};
  auto accepted = complete_batch(std::span<const LeasedRef>(&ref, 1));
  if (!accepted) return fail_with(accepted.error());
  if (!accepted->front()) return lease_lost(id);
  return {};
}

Result<std::vector<bool>> Queue::complete_batch(std::span<const LeasedRef> refs) {
  for (const auto& ref : refs) {
    if (auto ok = validate_ref(ref.token); !ok) return fail_with(ok.error());
  }
  if (refs.empty()) return std::vector<bool>{};
  // Only the default retention decides this (the call does not know the jobs' queues); a
  // queue whose own retention is zero has its succeeded jobs removed by the next
  // retention pass.
  const bool delete_row = state_->options.retention.succeeded == Duration::zero();
  auto accepted = state_->noted(state_->engine->complete(refs, delete_row));
  if (!accepted) return accepted;
  for (std::size_t i = 0; i < refs.size() && i < accepted->size(); ++i) {
    state_->metrics->settled(
        refs[i].id, (*accepted)[i] ? detail::Outcome::kCompleted : detail::Outcome::kLeaseLost);
  }
  state_->flush_if_due();
  return accepted;
}

Result<FailOutcome> Queue::fail(JobId id, const LeaseToken& token, std::string_view error,
                                const FailOptions& options) {
  auto outcomes = fail_batch(std::span<const FailRequest>(
      std::array<FailRequest, 1>{FailRequest{id, token, std::string(error), options}}));
  if (!outcomes) return fail_with(outcomes.error());
  if (!outcomes->front()) return fail_with(lease_lost(id).error());
  return *outcomes->front();
}

Result<std::vector<std::optional<FailOutcome>>> Queue::fail_batch(
    std::span<const FailRequest> items) {
  std::vector<detail::FailItem> engine_items;
  std::vector<std::size_t> sent;  // index in items of each engine item
  engine_items.reserve(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    auto item = state_->fail_item(items[i].id, items[i].token, items[i].error, items[i].options);
    if (!item) return fail_with(item.error());
    if (*item) {
      engine_items.push_back(std::move(**item));
      sent.push_back(i);
    }
  }
  std::vector<std::optional<FailOutcome>> results(items.size());
  if (!engine_items.empty()) {
    auto outcomes = state_->noted(state_->engine->fail(engine_items));
    if (!outcomes) return fail_with(outcomes.error());
    for (std::size_t k = 0; k < sent.size() && k < outcomes->size(); ++k) {
      results[sent[k]] = (*outcomes)[k];
    }
  }
  for (std::size_t i = 0; i < items.size(); ++i) {
    const auto outcome = !results[i]                         ? detail::Outcome::kLeaseLost
                         : *results[i] == FailOutcome::kDead ? detail::Outcome::kDead
                                                             : detail::Outcome::kFailed;
    state_->metrics->settled(items[i].id, outcome);
  }
  state_->flush_if_due();
  return results;
}

Status Queue::extend(JobId id, const LeaseToken& token, Duration lease_duration) {
  LeasedRef ref{id, token};
  auto accepted = extend_batch(std::span<const LeasedRef>(&ref, 1), lease_duration);
  if (!accepted) return fail_with(accepted.error());
  if (!accepted->front()) return lease_lost(id);
  return {};
}

Result<std::vector<bool>> Queue::extend_batch(std::span<const LeasedRef> refs,
                                              Duration lease_duration) {
  if (auto ok = detail::validate_positive_duration(lease_duration, "lease duration"); !ok) {
    return fail_with(ok.error());
  }
  for (const auto& ref : refs) {
    if (auto ok = validate_ref(ref.token); !ok) return fail_with(ok.error());
  }
  if (refs.empty()) return std::vector<bool>{};
  auto held = state_->noted(state_->engine->extend(refs, lease_duration));
  if (!held) return held;
  for (std::size_t i = 0; i < refs.size() && i < held->size(); ++i) {
    if (!(*held)[i]) state_->metrics->settled(refs[i].id, detail::Outcome::kLeaseLost);
  }
  return held;
}

Result<std::vector<bool>> Queue::leases_held(std::span<const LeasedRef> refs) {
  for (const auto& ref : refs) {
    if (auto ok = validate_ref(ref.token); !ok) return fail_with(ok.error());
  }
  if (refs.empty()) return std::vector<bool>{};
  return state_->noted(state_->engine->held(refs));
}

Status Queue::release(JobId id, const LeaseToken& token, Duration delay) {
  if (auto ok = validate_ref(token); !ok) return ok;
  if (auto ok = detail::validate_non_negative_duration(delay, "release delay"); !ok) return ok;
  LeasedRef ref{id, token};
  auto accepted =
      state_->noted(state_->engine->release(std::span<const LeasedRef>(&ref, 1), delay));
  if (!accepted) return fail_with(accepted.error());
  if (!accepted->front()) {
    state_->metrics->settled(id, detail::Outcome::kLeaseLost);
    return lease_lost(id);
  }
  state_->metrics->forget(id);
  return {};
}

Status Queue::progress(JobId id, const LeaseToken& token, std::string_view json) {
  if (auto ok = validate_ref(token); !ok) return ok;
  if (auto ok = detail::validate_progress(json); !ok) return ok;
  auto held = state_->noted(state_->engine->progress(LeasedRef{id, token}, json));
  if (!held) return fail_with(held.error());
  if (!*held) return lease_lost(id);
  return {};
}

Result<bool> Queue::wait_for_work(std::string_view queue, Duration timeout) {
  if (auto ok = validate_queue_name(queue); !ok) return fail_with(ok.error());
  if (auto ok = detail::validate_non_negative_duration(timeout, "timeout"); !ok) {
    return fail_with(ok.error());
  }
  return state_->noted(state_->engine->wait_for_work(queue, timeout));
}

Subscription Queue::on_cancel(std::function<void()> notify) {
  return state_->engine->on_cancel(std::move(notify));
}

Result<std::int64_t> Queue::rescue_expired(std::string_view queue) {
  if (auto ok = validate_queue_name(queue); !ok) return fail_with(ok.error());
  auto rescued = state_->noted(state_->engine->rescue_expired(queue));
  if (rescued) state_->metrics->rescued(queue, *rescued);
  return rescued;
}

Result<std::int64_t> Queue::rescue_expired_all() {
  auto stats = state_->engine->stats(std::nullopt);
  if (!stats) return fail_with(stats.error());
  std::int64_t total = 0;
  for (const QueueStats& s : *stats) {
    if (s.expired == 0) continue;
    auto rescued = state_->noted(state_->engine->rescue_expired(s.queue));
    if (!rescued) return fail_with(rescued.error());
    state_->metrics->rescued(s.queue, *rescued);
    total += *rescued;
  }
  return total;
}

Result<std::vector<JobId>> Queue::cancel(std::span<const JobId> ids) {
  if (ids.empty()) return std::vector<JobId>{};
  auto cancelled = state_->engine->cancel(ids);
  if (!cancelled) return cancelled;
  if (auto told = state_->resolve_all(); !told) return fail_with(told.error());
  return cancelled;
}

Result<std::vector<JobId>> Queue::retry(std::span<const JobId> ids) {
  if (ids.empty()) return std::vector<JobId>{};
  return state_->engine->retry(ids);
}

Result<std::vector<JobId>> Queue::remove(std::span<const JobId> ids) {
  if (ids.empty()) return std::vector<JobId>{};
  return state_->engine->remove(ids);
}

Result<std::int64_t> Queue::retry_all(std::string_view queue, JobState state) {
  if (auto ok = validate_queue_name(queue); !ok) return fail_with(ok.error());
  if (state != JobState::kDead && state != JobState::kCancelled) {
    return fail_with(Error::invalid_argument("only dead or cancelled jobs can be retried"));
  }
  return state_->engine->retry_all(queue, state);
}

Result<std::int64_t> Queue::purge(const PurgeRequest& request) {
  if (auto ok = validate_queue_name(request.queue); !ok) return fail_with(ok.error());
  if (!is_finished(request.state)) {
    return fail_with(
        Error::invalid_argument("purge removes succeeded, dead or cancelled jobs only, not " +
                                std::string(to_string(request.state)) + " ones"));
  }
  if (request.older_than) {
    if (auto ok = detail::validate_non_negative_duration(*request.older_than, "older-than"); !ok) {
      return fail_with(ok.error());
    }
  }
  if (request.limit && *request.limit < 1) {
    return fail_with(Error::invalid_argument("purge limit must be at least 1"));
  }
  return state_->engine->purge(request);
}

Result<std::int64_t> Queue::apply_retention(std::string_view queue, int limit) {
  if (limit < 1) return fail_with(Error::invalid_argument("retention limit must be at least 1"));
  const Retention& retention = state_->retention_for(queue);
  const std::array<std::pair<JobState, std::optional<Duration>>, 3> ages = {{
      {JobState::kSucceeded, retention.succeeded},
      {JobState::kCancelled, retention.cancelled},
      {JobState::kDead, retention.dead},
  }};
  std::int64_t total = 0;
  for (const auto& [state, age] : ages) {
    if (!age) continue;  // kept until purged by hand
    auto removed = purge(PurgeRequest{
        .queue = std::string(queue), .state = state, .older_than = age, .limit = limit});
    if (!removed) return fail_with(removed.error());
    total += *removed;
  }
  // Closed unique windows are only ever read as "closed": forgetting them changes nothing
  // a caller sees, so they are not counted.
  if (!state_->options.read_only) {
    if (auto forgotten = state_->engine->forget_closed_windows(limit); !forgotten) {
      return fail_with(forgotten.error());
    }
  }
  return total;
}

Status Queue::pause(std::string_view queue) {
  if (auto ok = validate_queue_name(queue); !ok) return ok;
  return state_->engine->set_paused(queue, true);
}

Status Queue::resume(std::string_view queue) {
  if (auto ok = validate_queue_name(queue); !ok) return ok;
  return state_->engine->set_paused(queue, false);
}

Status Queue::set_limits(std::string_view queue, const QueueLimits& limits) {
  if (auto ok = validate_queue_name(queue); !ok) return ok;
  if (auto ok = validate_limits(limits); !ok) return ok;
  if (limits.empty()) {
    return fail_with(Error::invalid_argument("no limit given: set a running limit or a rate"));
  }
  auto done = state_->noted(state_->engine->set_limits(queue, limits));
  if (done) state_->note_limited(queue, true);
  return done;
}

Status Queue::clear_limits(std::string_view queue) {
  if (auto ok = validate_queue_name(queue); !ok) return ok;
  auto done = state_->noted(state_->engine->clear_limits(queue));
  if (done) state_->note_limited(queue, false);
  return done;
}

Result<QueueLimits> Queue::limits(std::string_view queue) {
  if (auto ok = validate_queue_name(queue); !ok) return fail_with(ok.error());
  return state_->noted(state_->engine->limits(queue));
}

Result<bool> Queue::add_schedule(const Schedule& schedule) {
  if (auto ok = validate_schedule_name(schedule.name); !ok) return fail_with(ok.error());
  NewJob job;
  job.queue = schedule.queue;
  job.payload = schedule.payload;
  job.priority = schedule.priority;
  job.max_attempts = schedule.max_attempts;
  if (auto ok = detail::validate_new_job(job, state_->options.max_payload_bytes); !ok) {
    return fail_with(ok.error());
  }
  auto spec = detail::ScheduleSpec::parse(schedule.spec);
  if (!spec) return fail_with(spec.error());
  return state_->engine->upsert_schedule(schedule);
}

Result<std::vector<Schedule>> Queue::list_schedules() {
  return state_->engine->list_schedules();
}

Status Queue::remove_schedule(std::string_view name) {
  if (auto ok = validate_schedule_name(name); !ok) return ok;
  auto removed = state_->engine->delete_schedule(name);
  if (!removed) return fail_with(removed.error());
  if (!*removed) {
    return fail_with(Error::not_found("no schedule named '" + std::string(name) + "'"));
  }
  return {};
}

Result<JobId> Queue::run_schedule(std::string_view name) {
  if (auto ok = validate_schedule_name(name); !ok) return fail_with(ok.error());
  auto id = state_->engine->enqueue_schedule_now(name);
  if (!id) return fail_with(id.error());
  if (!*id) return fail_with(Error::not_found("no schedule named '" + std::string(name) + "'"));
  return **id;
}

Result<std::vector<ScheduledJob>> Queue::enqueue_due(std::optional<TimePoint> now) {
  if (!now) {
    auto db_now = state_->engine->now();
    if (!db_now) return fail_with(db_now.error());
    now = *db_now;
  }
  auto schedules = state_->engine->list_schedules();
  if (!schedules) return fail_with(schedules.error());
  std::vector<ScheduledJob> enqueued;
  for (const Schedule& schedule : *schedules) {
    auto spec = detail::ScheduleSpec::parse(schedule.spec);
    if (!spec) {
      // Written by hand into the table, or by a newer readpast: skip it, say so.
      detail::emit(state_->options.logger, LogLevel::kWarn,
                   "schedule " + schedule.name + " skipped: " + spec.error().message,
                   {{"schedule", schedule.name}});
      continue;
    }
    auto tick = spec->latest_at_or_before(*now);
    if (!tick || *tick <= schedule.last_tick.value_or(schedule.created_at)) continue;
    auto id = state_->engine->enqueue_tick(schedule.name, *tick);
    if (!id) return fail_with(id.error());
    if (*id) enqueued.push_back(ScheduledJob{schedule.name, *tick, **id});
  }
  return enqueued;
}

Result<bool> Queue::claim_task(std::string_view task, Duration interval, std::string_view by) {
  if (task.empty() || task.size() > 256) {
    return fail_with(Error::invalid_argument("task name must be 1 to 256 bytes long"));
  }
  if (auto ok = detail::validate_positive_duration(interval, "task interval"); !ok) {
    return fail_with(ok.error());
  }
  return state_->noted(
      state_->engine->claim_task(task, interval, by.substr(0, detail::kMaxWorkerIdBytes)));
}

Result<StorageRotation> Queue::rotate_storage() {
  if (state_->options.read_only) {
    return fail_with(Error::invalid_argument("a read-only Queue cannot rotate storage"));
  }
  return state_->noted(state_->engine->rotate_storage());
}

Result<TimePoint> Queue::now() {
  return state_->engine->now();
}

Result<std::vector<FinishedCounts>> Queue::finished_since(TimePoint since,
                                                          std::optional<std::string_view> queue) {
  if (queue) {
    if (auto ok = validate_queue_name(*queue); !ok) return fail_with(ok.error());
  }
  return state_->engine->finished_since(since, queue);
}

Result<StorageHealth> Queue::storage_health() {
  auto health = state_->engine->storage_health();
  if (!health) return health;
  // By name in byte order on every engine (MariaDB's collation orders '_' after letters).
  std::sort(health->sizes.begin(), health->sizes.end(),
            [](const StorageSize& a, const StorageSize& b) { return a.relation < b.relation; });
  return health;
}

Result<std::vector<QueueStats>> Queue::stats(std::optional<std::string_view> queue) {
  if (queue) {
    if (auto ok = validate_queue_name(*queue); !ok) return fail_with(ok.error());
  }
  return state_->engine->stats(queue);
}

Result<std::vector<Job>> Queue::list(const ListRequest& request) {
  auto page = list_page(request);
  if (!page) return fail_with(page.error());
  return std::move(page->jobs);
}

// Invariant of the scan window (ListRequest::scan_limit): the engine is asked for one range
// of at most scan_limit consecutive ids, taken from the end the order starts at; when that
// window stops short of the request's range (and of the table), the page's resume_id is
// the window's last id, so the next request goes on from there and no id is skipped.
Result<JobPage> Queue::list_page(const ListRequest& request) {
  if (request.queue) {
    if (auto ok = validate_queue_name(*request.queue); !ok) return fail_with(ok.error());
  }
  if (request.limit < 1 || request.limit > 100000) {
    return fail_with(Error::invalid_argument("list limit must be between 1 and 100000"));
  }
  if (request.search && (request.search->empty() || request.search->size() > kMaxListSearchBytes)) {
    return fail_with(Error::invalid_argument("list search text must be 1 to " +
                                             std::to_string(kMaxListSearchBytes) + " bytes"));
  }
  if (request.search && (request.search->find('\0') != std::string::npos ||
                         !detail::is_valid_utf8(*request.search))) {
    return fail_with(Error::invalid_argument("list search text must be UTF-8 without NUL bytes"));
  }
  if (request.scan_limit && (*request.scan_limit < 1 || *request.scan_limit > kMaxListScanLimit)) {
    return fail_with(Error::invalid_argument("list scan limit must be between 1 and " +
                                             std::to_string(kMaxListScanLimit)));
  }
  ListRequest range = request;
  if (request.view) {
    const JobState implied =
        *request.view == ListView::kExpired ? JobState::kRunning : JobState::kAvailable;
    if (request.state && *request.state != implied) {
      return fail_with(Error::invalid_argument(
          "list view " + std::string(to_string(*request.view)) + " is part of state " +
          std::string(to_string(implied)) + ", not " + std::string(to_string(*request.state))));
    }
    range.state = implied;
  }
  std::optional<JobId> window_end;  // the window's last id when it stops short
  // Windowed: what no index range answers (options.hpp, ListRequest::scan_limit).
  const bool windowed = request.view || request.search || (request.state && !request.queue);
  if (request.scan_limit && windowed) {
    auto bounds = state_->engine->id_bounds();
    if (!bounds) return fail_with(bounds.error());
    if (!*bounds) return JobPage{};
    const auto [low, high] = **bounds;
    const JobId scan = *request.scan_limit;
    if (request.order == ListOrder::kNewestFirst) {
      const JobId upper = std::min(request.before_id.value_or(high + 1), high + 1);
      const JobId lower = std::max<JobId>(request.after_id.value_or(0), low - 1);
      if (upper <= lower + 1) return JobPage{};
      if (upper - scan - 1 > lower) {
        range.after_id = upper - scan - 1;
        window_end = upper - scan;
      }
      range.before_id = upper;
    } else {
      const JobId lower = std::max<JobId>(request.after_id.value_or(0), low - 1);
      const JobId upper =
          std::min(request.before_id.value_or(std::numeric_limits<JobId>::max()), high + 1);
      if (upper <= lower + 1) return JobPage{};
      if (lower + scan + 1 < upper) {
        range.before_id = lower + scan + 1;
        window_end = lower + scan;
      }
      range.after_id = lower;
    }
  }
  auto jobs = state_->engine->list(range);
  if (!jobs) return fail_with(jobs.error());
  JobPage page;
  page.jobs = std::move(*jobs);
  if (page.jobs.size() == static_cast<std::size_t>(request.limit)) {
    page.resume_id = page.jobs.back().id;
  } else {
    page.resume_id = window_end;
  }
  return page;
}

Result<Dependencies> Queue::dependencies(JobId id) {
  auto job = get(id);
  if (!job) return fail_with(job.error());
  return state_->engine->dependencies(id);
}

Result<std::int64_t> Queue::resolve_dependencies() {
  return state_->resolve_all();
}

Result<GroupStats> Queue::group_stats(std::string_view group) {
  if (auto ok = validate_group_name(group); !ok) return fail_with(ok.error());
  auto stats = state_->engine->group_stats(group);
  if (!stats) return fail_with(stats.error());
  if (!*stats) return fail_with(Error::not_found("no group named '" + std::string(group) + "'"));
  return std::move(**stats);
}

Result<std::vector<Job>> Queue::list_group(std::string_view group, JobId after_id, int limit) {
  if (auto ok = validate_group_name(group); !ok) return fail_with(ok.error());
  if (limit < 1 || limit > 1000) {
    return fail_with(Error::invalid_argument("list limit must be between 1 and 1000"));
  }
  return state_->engine->list_group(group, after_id, limit);
}

Result<Job> Queue::get(JobId id) {
  auto job = state_->engine->get(id);
  if (!job) return fail_with(job.error());
  if (!*job) return fail_with(Error::not_found("no job with id " + std::to_string(id)));
  return std::move(**job);
}

Status Queue::flush_metrics() {
  if (!state_->metrics->enabled()) return {};
  return state_->flush();
}

Result<std::vector<MetricSample>> Queue::metrics() {
  return state_->engine->metrics();
}

Status Queue::report_worker(const WorkerProcess& worker) {
  if (worker.name.empty() || worker.name.size() > detail::kMaxWorkerIdBytes) {
    return fail_with(Error::invalid_argument("worker name must be 1 to " +
                                             std::to_string(detail::kMaxWorkerIdBytes) + " bytes"));
  }
  for (const auto& queue : worker.queues) {
    if (auto ok = validate_queue_name(queue); !ok) return ok;
  }
  return state_->noted(state_->engine->upsert_worker(worker, kForgetWorkerAfter));
}

Status Queue::forget_worker(std::string_view name) {
  return state_->noted(state_->engine->delete_worker(name));
}

Result<std::vector<WorkerProcess>> Queue::workers() {
  return state_->engine->list_workers();
}

}  // namespace readpast
