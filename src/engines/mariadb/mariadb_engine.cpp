// The MariaDB engine (docs/mariadb.md): every operation of engines/engine.hpp as short
// transactions at READ COMMITTED over a pool of Connector/C connections.
//
// - The lease is SELECT ... FOR UPDATE SKIP LOCKED along an index in hand-out order, then one
//   UPDATE by primary key per job with a token from core, in one transaction (10.11 has no
//   UPDATE ... RETURNING); the rows come from the SELECT, so they are read once.
// - Deadlocks (1213) and lock-wait timeouts (1205) roll the transaction back and run it again
//   (kLockRetries times), never reaching the caller.
// - A connection the server closed while it sat idle is replaced, and the operation run
//   again when nothing of it can have reached the server; other connection failures are
//   kUnavailable, and new connections are then tried with backoff (50 ms doubling to 2 s),
//   the outage and the recovery logged once.
// - wait_for_work polls (no NOTIFY in MariaDB): 1 ms doubling to 25 ms, reset by every call.
#include <mysqld_error.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <limits>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <vector>

#include "core/handout_order.hpp"
#include "core/log.hpp"
#include "core/queue_list.hpp"
#include "core/schema_policy.hpp"
#include "core/url.hpp"
#include "engines/engine_registry.hpp"
#include "engines/mariadb/mariadb_connection.hpp"
#include "engines/mariadb/mariadb_dependency_round.hpp"
#include "engines/mariadb/mariadb_json_array.hpp"
#include "engines/mariadb/mariadb_statements.hpp"
#include "readpast/time.hpp"

namespace readpast::detail {
namespace {

using mariadb::Connection;
using mariadb::JsonArray;
using mariadb::Params;
using mariadb::Rows;
using mariadb::Settings;
namespace sql = mariadb::sql;
using Clock = std::chrono::steady_clock;

constexpr int kSchemaVersion = sql::migration_count;
constexpr int kLockRetries = 50;
constexpr auto kReconnectFirstBackoff = std::chrono::milliseconds(50);
constexpr auto kReconnectMaxBackoff = std::chrono::seconds(2);

TimePoint to_time(std::int64_t micros) {
  return TimePoint(Duration(micros));
}
std::optional<TimePoint> to_time(std::optional<std::int64_t> micros) {
  if (!micros) return std::nullopt;
  return to_time(*micros);
}
std::int64_t to_micros(TimePoint t) {
  return t.time_since_epoch().count();
}
std::int64_t micros(Duration d) {
  return static_cast<std::int64_t>(d.count());
}

// A row of the job columns (statements.sql), from column `first` on.
Job read_job(const Rows& rows, std::size_t r) {
  Job job;
  job.id = rows.int64(r, 0);
  job.queue = std::string(rows.text(r, 1));
  job.state = parse_job_state(rows.text(r, 2)).value_or(JobState::kAvailable);
  job.priority = static_cast<int>(rows.int64(r, 3));
  job.run_at = to_time(rows.int64(r, 4));
  job.attempts = static_cast<int>(rows.int64(r, 5));
  job.max_attempts = static_cast<int>(rows.int64(r, 6));
  if (!rows.is_null(r, 7)) {
    if (auto parsed = LeaseToken::from_hex(rows.text(r, 7))) job.lease_token = *parsed;
  }
  job.leased_by = rows.optional_text(r, 8);
  job.lease_expires_at = to_time(rows.optional_int64(r, 9));
  job.enqueued_at = to_time(rows.int64(r, 10));
  job.started_at = to_time(rows.optional_int64(r, 11));
  job.finished_at = to_time(rows.optional_int64(r, 12));
  job.unique_key = rows.optional_text(r, 13);
  job.last_error = rows.optional_text(r, 14);
  job.payload = std::string(rows.text(r, 15));
  return job;
}

class MariadbEngine final : public Engine {
 public:
  MariadbEngine(Settings settings, Logger logger)
      : settings_(std::move(settings)), logger_(std::move(logger)) {}

  // Opens the first connection, so that a bad password or database is reported at once.
  Status connect() {
    auto connection = Connection::open(settings_);
    if (!connection) return fail_with(connection.error());
    std::lock_guard lock(mu_);
    idle_.push_back(std::move(*connection));
    return {};
  }

  Result<int> migrate() override {
    return with_connection<int>(false, [&](Connection& c) -> Result<int> {
      auto locked = c.run<sql::migrate_lock>(
          c.params<sql::migrate_lock>().set(sql::migrate_lock::timeout_s, 60));
      if (!locked) return fail_with(locked.error());
      if (locked->int64(0, 0) != 1) {
        return fail_with(Error::unavailable("another process is migrating the schema"));
      }
      auto result = [&]() -> Result<int> {
        if (auto ok = c.query(sql::create_version_table::text); !ok) return fail_with(ok.error());
        Steps steps(c);
        return migrate_schema(steps, kSchemaVersion, kSchemaVersion);
      }();
      (void)c.query(sql::migrate_unlock::text);
      return result;
    });
  }

  Status check_schema() override {
    auto version = with_connection<int>(false, [&](Connection& c) { return read_version(c); });
    if (!version) return fail_with(version.error());
    return check_schema_version(*version, kSchemaVersion);
  }

  Result<std::vector<Enqueued>> enqueue(std::span<const NewJob> jobs) override {
    return write<std::vector<Enqueued>>([&](Connection& c) { return insert_jobs(c, jobs); });
  }

  // Inserts the jobs inside the caller's transaction; a job whose unique key a live job of
  // its queue holds gets that job's id instead.
  // check_windows false: the caller claimed the job's unique window itself (the jobs are
  // inserted as plain unique ones).
  static Result<std::vector<Enqueued>> insert_jobs(Connection& c, std::span<const NewJob> jobs,
                                                   bool check_windows = true) {
    if (fits_one_insert(jobs)) return insert_in_one_statement(c, jobs);
    std::vector<Enqueued> results;
    results.reserve(jobs.size());
    for (const NewJob& job : jobs) {
      if (job.unique_for && check_windows) {
        // The window first: of two enqueues racing for the key, one inserts its window row
        // and the other waits for it, then finds it (ER_DUP_ENTRY). A closed window is
        // taken over.
        using W = sql::claim_unique_window;
        auto claimed = c.run<W>(c.params<W>()
                                    .set(W::queue, job.queue)
                                    .set_bytes(W::unique_key, *job.unique_key)
                                    .set(W::until, micros(*job.unique_for)));
        if (!claimed) {
          if (c.last_errno() != ER_DUP_ENTRY) return fail_with(claimed.error());
          using T = sql::take_over_unique_window;
          auto taken = c.run<T>(c.params<T>()
                                    .set(T::queue, job.queue)
                                    .set_bytes(T::unique_key, *job.unique_key)
                                    .set(T::until, micros(*job.unique_for)));
          if (!taken) return fail_with(taken.error());
          if (c.affected_rows() != 1) {
            using H = sql::window_holder;
            auto holder = c.run<H>(
                c.params<H>().set(H::queue, job.queue).set_bytes(H::unique_key, *job.unique_key));
            if (!holder) return fail_with(holder.error());
            if (holder->empty() || holder->is_null(0, 0)) {
              return fail_with(Error::unavailable("enqueue: the unique window of key '" +
                                                  *job.unique_key +
                                                  "' changed while it was read; try again"));
            }
            results.push_back(Enqueued{holder->int64(0, 0), false});
            continue;
          }
        }
        auto one = insert_jobs(c, std::span<const NewJob>(&job, 1), false);
        if (!one) return fail_with(one.error());
        const Enqueued result = one->front();
        if (result.inserted) {
          using S = sql::set_window_job;
          auto set = c.run<S>(c.params<S>()
                                  .set(S::job_id, result.id)
                                  .set(S::queue, job.queue)
                                  .set_bytes(S::unique_key, *job.unique_key));
          if (!set) return fail_with(set.error());
        } else {
          // A live job held the key after all: no window for a job that was not enqueued.
          using D = sql::drop_unique_window;
          auto dropped = c.run<D>(
              c.params<D>().set(D::queue, job.queue).set_bytes(D::unique_key, *job.unique_key));
          if (!dropped) return fail_with(dropped.error());
        }
        results.push_back(result);
        continue;
      }
      if (job.unique_key && check_windows) {
        // An open unique window refuses the job whatever became of the window's job.
        using W = sql::find_unique_window;
        auto open = c.run<W>(
            c.params<W>().set(W::queue, job.queue).set_bytes(W::unique_key, *job.unique_key));
        if (!open) return fail_with(open.error());
        if (!open->empty() && !open->is_null(0, 0)) {
          results.push_back(Enqueued{open->int64(0, 0), false});
          continue;
        }
      }
      if (takes_part_in_a_workflow(job)) {
        auto id = insert_dependent(c, job);
        if (!id) return fail_with(id.error());
        results.push_back(Enqueued{*id, true});
        continue;
      }
      // Twice at most: an insert that collides with a holder that then finished is tried again.
      for (int attempt = 0;; ++attempt) {
        if (job.unique_key) {
          using Q = sql::find_unique_holder;
          auto found = c.run<Q>(
              c.params<Q>().set(Q::queue, job.queue).set_bytes(Q::unique_key, *job.unique_key));
          if (!found) return fail_with(found.error());
          if (!found->empty()) {
            results.push_back(Enqueued{found->int64(0, 0), false});
            break;
          }
        }
        using Q = sql::insert_job;
        auto p = c.params<Q>();
        p.set(Q::queue, job.queue)
            .set(Q::priority, job.priority)
            .set(Q::max_attempts, job.max_attempts)
            .set_bytes(Q::payload, job.payload);
        if (job.unique_key) {
          p.set_bytes(Q::unique_key, *job.unique_key);
        } else {
          p.set_null(Q::unique_key);
        }
        // run_at NULL: the server's clock plus the delay (none: now).
        if (job.delay) {
          p.set_null(Q::run_at).set(Q::delay, micros(*job.delay));
        } else if (job.run_at) {
          p.set(Q::run_at, to_micros(*job.run_at)).set(Q::delay, 0);
        } else {
          p.set_null(Q::run_at).set(Q::delay, 0);
        }
        auto inserted = c.run<Q>(p);
        if (!inserted) {
          if (c.last_errno() == ER_DUP_ENTRY && job.unique_key && attempt == 0) continue;
          return fail_with(inserted.error());
        }
        results.push_back(Enqueued{static_cast<JobId>(c.insert_id()), true});
        break;
      }
    }
    return results;
  }

  // A job enqueued after others (core/dependencies.hpp decides its state), inside the
  // caller's transaction. Its live dependencies are locked first (mark_notify), so that none
  // finishes unseen before this transaction commits; a READ COMMITTED read after that sees
  // every state as it is now.
  static Result<JobId> insert_dependent(Connection& c, const NewJob& job) {
    if (job.unique_key) {
      // An open unique window hands back its job too: an error here, as a live holder is.
      using W = sql::find_unique_window;
      auto open = c.run<W>(
          c.params<W>().set(W::queue, job.queue).set_bytes(W::unique_key, *job.unique_key));
      if (!open) return fail_with(open.error());
      if (!open->empty() && !open->is_null(0, 0)) {
        return fail_with(unique_key_held_by_error(open->int64(0, 0)));
      }
    }
    std::vector<std::optional<JobState>> states;
    for (JobId id : job.after) {
      using M = sql::mark_notify;
      if (auto ok = c.run<M>(c.params<M>().set(M::id, id)); !ok) return fail_with(ok.error());
      using S = sql::job_state;
      auto row = c.run<S>(c.params<S>().set(S::id, id));
      if (!row) return fail_with(row.error());
      states.push_back(row->empty() ? std::nullopt : parse_job_state(row->text(0, 0)));
    }
    std::optional<GroupWait> group_wait;
    if (job.after_group) {
      using G = sql::find_group;
      auto found = c.run<G>(c.params<G>().set(G::name, *job.after_group));
      if (!found) return fail_with(found.error());
      if (found->empty()) return fail_with(no_such_group_error(*job.after_group));
      group_wait = GroupWait{found->int64(0, 0), found->int64(0, 1) > 0};
    }
    auto plan = plan_dependent(job.after, states, group_wait);
    if (!plan) return fail_with(plan.error());
    if (job.group) {
      using J = sql::join_group;
      if (auto ok = c.run<J>(c.params<J>().set(J::name, *job.group)); !ok) {
        return fail_with(ok.error());
      }
    }
    auto clock = c.query(sql::server_now::text);
    if (!clock) return fail_with(clock.error());
    const std::int64_t now = clock->int64(0, 0);
    const std::int64_t delay = job.delay ? micros(*job.delay) : 0;
    std::int64_t run_at = job.run_at ? to_micros(*job.run_at) : now;
    if (plan->state == JobState::kAvailable) run_at = std::max(run_at, now + delay);
    using Q = sql::insert_dependent_job;
    auto p = c.params<Q>();
    p.set(Q::queue, job.queue)
        .set(Q::state, to_string(plan->state))
        .set(Q::priority, job.priority)
        .set(Q::run_at, run_at)
        .set(Q::max_attempts, job.max_attempts)
        .set(Q::now, now)
        .set_bytes(Q::payload, job.payload)
        .set(Q::waiting_for, plan->waiting_for)
        .set(Q::delay_us, delay);
    if (job.group) {
      p.set(Q::group_name, *job.group);
    } else {
      p.set_null(Q::group_name);
    }
    if (job.unique_key) {
      p.set_bytes(Q::unique_key, *job.unique_key);
    } else {
      p.set_null(Q::unique_key);
    }
    if (plan->state == JobState::kCancelled) {
      p.set(Q::finished_at, now).set_bytes(Q::last_error, *plan->last_error);
    } else {
      p.set_null(Q::finished_at).set_null(Q::last_error);
    }
    if (auto inserted = c.run<Q>(p); !inserted) {
      if (c.last_errno() != ER_DUP_ENTRY || !job.unique_key) return fail_with(inserted.error());
      using H = sql::find_unique_holder;
      auto found = c.run<H>(
          c.params<H>().set(H::queue, job.queue).set_bytes(H::unique_key, *job.unique_key));
      if (!found) return fail_with(found.error());
      return fail_with(unique_key_held_by_error(found->empty() ? 0 : found->int64(0, 0)));
    }
    const auto id = static_cast<JobId>(c.insert_id());
    for (const auto& [depends_on, met] : plan->edges) {
      using E = sql::insert_dependency;
      if (auto ok = c.run<E>(c.params<E>()
                                 .set(E::depends_on, depends_on)
                                 .set(E::job_id, id)
                                 .set(E::met, met ? 1 : 0));
          !ok) {
        return fail_with(ok.error());
      }
    }
    return id;
  }

  // A batch goes in as one statement (sql::insert_jobs) when no job has a unique key (each of
  // those needs its holder looked up) and the payloads, sent in hex, stay small enough for one
  // packet of the server's default max_allowed_packet.
  static bool fits_one_insert(std::span<const NewJob> jobs) {
    constexpr std::size_t kMaxBatchPayloadBytes = 1 << 20;
    if (jobs.size() < 2) return false;
    std::size_t bytes = 0;
    for (const NewJob& job : jobs) {
      if (job.unique_key || takes_part_in_a_workflow(job)) return false;
      bytes += job.payload.size();
    }
    return bytes <= kMaxBatchPayloadBytes;
  }

  static Result<std::vector<Enqueued>> insert_in_one_statement(Connection& c,
                                                               std::span<const NewJob> jobs) {
    // [queue, priority, max_attempts, run_at or null, delay, payload hex] per job. Queue names
    // are validated ([A-Za-z0-9][A-Za-z0-9_.-]*) before they reach an engine: nothing in them
    // needs escaping in a JSON string.
    JsonArray json;
    for (const NewJob& job : jobs) {
      json.open().plain_string(job.queue).number(job.priority).number(job.max_attempts);
      if (job.run_at && !job.delay) {
        json.number(to_micros(*job.run_at)).number(0);
      } else {
        json.null().number(job.delay ? micros(*job.delay) : 0);
      }
      json.hex_string(job.payload).close();
    }
    using Q = sql::insert_jobs;
    auto rows = c.run<Q>(c.params<Q>().set(Q::jobs, std::move(json).finish()));
    if (!rows) return fail_with(rows.error());
    if (rows->size() != jobs.size()) {
      return fail_with(Error::internal("enqueue: the INSERT returned " +
                                       std::to_string(rows->size()) + " ids for " +
                                       std::to_string(jobs.size()) + " jobs"));
    }
    std::vector<Enqueued> results;
    results.reserve(jobs.size());
    for (std::size_t r = 0; r < rows->size(); ++r) {
      results.push_back(Enqueued{static_cast<JobId>(rows->int64(r, 0)), true});
    }
    return results;
  }

  Result<std::vector<Job>> lease(const LeaseRequest& request) override {
    auto jobs = write<std::vector<Job>>([&](Connection& c) -> Result<std::vector<Job>> {
      using S = sql::lease_select;
      auto rows =
          c.run<S>(c.params<S>().set(S::queue, request.queue).set(S::max_jobs, request.max_jobs));
      if (!rows) return fail_with(rows.error());
      return take_selected(c, request, *rows);
    });
    if (jobs) sort_in_handout_order(*jobs);
    return jobs;
  }

  Result<LimitedLease> lease_limited(const LeaseRequest& request) override {
    auto result = write<LimitedLease>([&](Connection& c) -> Result<LimitedLease> {
      LimitedLease out;
      using L = sql::lock_queue_limits;
      auto locked = c.run<L>(c.params<L>().set(L::queue, request.queue));
      if (!locked) return fail_with(locked.error());
      if (locked->empty()) {
        // Taken by another lease of the queue (nothing this time), or no row: no limits.
        using Q = sql::queue_limits;
        auto row = c.run<Q>(c.params<Q>().set(Q::queue, request.queue));
        if (!row) return fail_with(row.error());
        out.limited = !row->empty();
        return out;
      }
      QueueLimits limits;
      const bool paused = locked->int64(0, 0) != 0;
      limits.running = locked->optional_int64(0, 1);
      if (auto count = locked->optional_int64(0, 2)) {
        limits.rate = RateLimit{*count, Duration(locked->optional_int64(0, 3).value_or(1))};
      }
      out.limited = !limits.empty();
      if (!out.limited || paused) return out;
      std::optional<std::int64_t> running;
      if (limits.running) {
        using C = sql::count_running;
        auto counted =
            c.run<C>(c.params<C>().set(C::queue, request.queue).set(C::limit, *limits.running));
        if (!counted) return fail_with(counted.error());
        running = counted->int64(0, 0);
      }
      auto clock = c.run<sql::now_us>(c.params<sql::now_us>());
      if (!clock) return fail_with(clock.error());
      const std::int64_t now = clock->int64(0, 0);
      std::vector<std::int64_t> free_slots;
      if (limits.rate) {
        using F = sql::free_rate_slots;
        auto slots = c.run<F>(c.params<F>()
                                  .set(F::queue, request.queue)
                                  .set(F::before, now - micros(limits.rate->window))
                                  .set(F::limit, request.max_jobs));
        if (!slots) return fail_with(slots.error());
        for (std::size_t r = 0; r < slots->size(); ++r) free_slots.push_back(slots->int64(r, 0));
      }
      const Allowance allowance = lease_allowance(
          limits, request.max_jobs, running,
          limits.rate ? std::optional<std::int64_t>(std::ssize(free_slots)) : std::nullopt);
      if (allowance.jobs > 0) {
        using S = sql::lease_select_limited;
        auto rows = c.run<S>(c.params<S>()
                                 .set(S::queue, request.queue)
                                 .set(S::max_jobs, static_cast<int>(allowance.jobs)));
        if (!rows) return fail_with(rows.error());
        auto taken = take_selected(c, request, *rows, now);
        if (!taken) return fail_with(taken.error());
        out.jobs = std::move(*taken);
      }
      if (limits.rate && !out.jobs.empty()) {
        // The oldest slots take this lease's time (docs/workflows.md: why that is exact).
        JsonArray slots;
        for (std::size_t i = 0; i < out.jobs.size(); ++i) slots.number(free_slots[i]);
        using T = sql::stamp_rate_slots;
        auto stamped = c.run<T>(c.params<T>()
                                    .set(T::slots, std::move(slots).finish())
                                    .set(T::queue, request.queue)
                                    .set(T::now, now));
        if (!stamped) return fail_with(stamped.error());
      }
      if (allowance.binding && std::ssize(out.jobs) == allowance.jobs) {
        using D = sql::due_job_exists;
        auto due = c.run<D>(c.params<D>().set(D::queue, request.queue));
        if (!due) return fail_with(due.error());
        if (due->int64(0, 0) != 0) out.throttled = allowance.binding;
      }
      return out;
    });
    if (!result) return result;
    if (!result->limited) {
      auto jobs = lease(request);
      if (!jobs) return fail_with(jobs.error());
      result->jobs = std::move(*jobs);
      return result;
    }
    sort_in_handout_order(result->jobs);
    return result;
  }

  Result<QueueLimits> limits(std::string_view queue) override {
    return with_connection<QueueLimits>(true, [&](Connection& c) -> Result<QueueLimits> {
      using Q = sql::queue_limits;
      auto row = c.run<Q>(c.params<Q>().set(Q::queue, queue));
      if (!row) return fail_with(row.error());
      QueueLimits limits;
      if (!row->empty()) {
        limits.running = row->optional_int64(0, 1);
        if (auto count = row->optional_int64(0, 2)) {
          limits.rate = RateLimit{*count, Duration(row->optional_int64(0, 3).value_or(1))};
        }
      }
      return limits;
    });
  }

  Status set_limits(std::string_view queue, const QueueLimits& limits) override {
    return write_status([&](Connection& c) -> Status {
      using Q = sql::set_limits;
      auto p = c.params<Q>();
      p.set(Q::queue, queue);
      p.set_optional(Q::running, limits.running);
      if (limits.rate) {
        p.set(Q::rate_count, limits.rate->count).set(Q::rate_window, micros(limits.rate->window));
      } else {
        p.set_null(Q::rate_count).set_null(Q::rate_window);
      }
      auto done = c.run<Q>(p);
      if (!done) return fail_with(done.error());
      return {};
    });
  }

  Status clear_limits(std::string_view queue) override {
    return write_status([&](Connection& c) -> Status {
      using Q = sql::clear_limits;
      auto done = c.run<Q>(c.params<Q>().set(Q::queue, queue));
      if (!done) return fail_with(done.error());
      return {};
    });
  }

  // The lease's step 2 for the rows step 1 selected and locked (the last column: the time,
  // unless the caller fixed it).
  Result<std::vector<Job>> take_selected(Connection& c, const LeaseRequest& request,
                                         const Rows& selected,
                                         std::optional<std::int64_t> fixed_now = std::nullopt) {
    {
      const Rows* rows = &selected;
      std::vector<Job> leased;
      leased.reserve(rows->size());
      JsonArray leases;  // [[id, "token"], ...] for lease_take_many
      std::int64_t now = 0;
      for (std::size_t r = 0; r < rows->size(); ++r) {
        Job job = read_job(*rows, r);
        now = fixed_now.value_or(rows->int64(r, 16));
        job.state = JobState::kRunning;
        job.attempts += 1;
        job.lease_token = LeaseToken::random();
        job.leased_by = request.worker_id;
        job.lease_expires_at = to_time(now + micros(request.lease_duration));
        job.started_at = to_time(now);
        leases.lease(job.id, *job.lease_token);
        leased.push_back(std::move(job));
      }
      if (leased.size() == 1) {
        using U = sql::lease_take;
        const Job& job = leased.front();
        auto taken = c.run<U>(c.params<U>()
                                  .set(U::token, job.lease_token->hex())
                                  .set_bytes(U::worker_id, request.worker_id)
                                  .set(U::started_at, now)
                                  .set(U::lease_duration, micros(request.lease_duration))
                                  .set(U::id, job.id));
        if (!taken) return fail_with(taken.error());
      } else if (leased.size() > 1) {
        using U = sql::lease_take_many;
        auto taken = c.run<U>(c.params<U>()
                                  .set(U::leases, std::move(leases).finish())
                                  .set_bytes(U::worker_id, request.worker_id)
                                  .set(U::started_at, now)
                                  .set(U::lease_duration, micros(request.lease_duration)));
        if (!taken) return fail_with(taken.error());
        if (c.affected_rows() != leased.size()) {
          return fail_with(Error::internal("lease: the UPDATE took " +
                                           std::to_string(c.affected_rows()) + " of " +
                                           std::to_string(leased.size()) + " locked rows"));
        }
      }
      return leased;
    }
  }

  Result<std::vector<bool>> complete(std::span<const LeasedRef> refs, bool delete_row) override {
    const auto nothing = [](Params&, auto) {};
    if (!delete_row) return settle<sql::complete, sql::complete_many>(refs, nothing);
    auto accepted = settle<sql::complete_delete, sql::complete_delete_many>(refs, nothing);
    if (!accepted) return accepted;
    // complete_delete leaves a job with dependents to tell (and a lost lease): complete
    // those, so that the first is kept as succeeded (the second matches nothing again).
    std::vector<LeasedRef> kept;
    for (std::size_t i = 0; i < refs.size(); ++i) {
      if (!(*accepted)[i]) kept.push_back(refs[i]);
    }
    if (kept.empty()) return accepted;
    auto completed = settle<sql::complete, sql::complete_many>(kept, nothing);
    if (!completed) return completed;
    for (std::size_t i = 0, k = 0; i < refs.size(); ++i) {
      if (!(*accepted)[i]) (*accepted)[i] = (*completed)[k++];
    }
    return accepted;
  }

  Result<std::vector<FailResult>> fail(std::span<const FailItem> items) override {
    return write<std::vector<FailResult>>([&](Connection& c) -> Result<std::vector<FailResult>> {
      std::vector<FailResult> outcomes;
      outcomes.reserve(items.size());
      for (const FailItem& item : items) {
        using Q = sql::fail;
        auto p = c.params<Q>();
        p.set(Q::id, item.ref.id)
            .set(Q::token, item.ref.token.hex())
            .set_bytes(Q::error, item.error)
            .set(Q::backoff_base, micros(item.backoff_base))
            .set(Q::backoff_cap, micros(item.backoff_cap))
            .set(Q::backoff_factor, item.backoff_factor)
            .set(Q::no_retry, item.no_retry ? 1 : 0);
        if (item.retry_after) {
          p.set(Q::retry_after, micros(*item.retry_after));
        } else {
          p.set_null(Q::retry_after);
        }
        if (auto ok = c.run<Q>(p); !ok) return fail_with(ok.error());
        if (c.affected_rows() != 1) {
          outcomes.emplace_back(std::nullopt);
          continue;
        }
        // The error history, in fail's transaction (the row is locked by the UPDATE).
        using E = sql::record_error;
        if (auto ok = c.run<E>(c.params<E>().set(E::id, item.ref.id)); !ok) {
          return fail_with(ok.error());
        }
        using S = sql::job_state;
        auto state = c.run<S>(c.params<S>().set(S::id, item.ref.id));
        if (!state) return fail_with(state.error());
        outcomes.emplace_back(!state->empty() && state->text(0, 0) == "dead"
                                  ? FailOutcome::kDead
                                  : FailOutcome::kRetrying);
      }
      return outcomes;
    });
  }

  Result<std::vector<bool>> extend(std::span<const LeasedRef> refs,
                                   Duration lease_duration) override {
    return settle<sql::extend, sql::extend_many>(
        refs, [&]<class S>(Params& p, S) { p.set(S::lease_duration, micros(lease_duration)); });
  }

  Result<std::vector<bool>> release(std::span<const LeasedRef> refs, Duration delay) override {
    return settle<sql::release, sql::release_many>(
        refs, [&]<class S>(Params& p, S) { p.set(S::delay, micros(delay)); });
  }

  Result<bool> progress(const LeasedRef& ref, std::string_view json) override {
    return write<bool>([&](Connection& c) -> Result<bool> {
      using Q = sql::set_progress;
      auto done = c.run<Q>(c.params<Q>()
                               .set_bytes(Q::progress, json)
                               .set(Q::id, ref.id)
                               .set(Q::token, ref.token.hex()));
      if (!done) return fail_with(done.error());
      return c.affected_rows() == 1;
    });
  }

  Result<std::int64_t> forget_closed_windows(int limit) override {
    return write<std::int64_t>([&](Connection& c) -> Result<std::int64_t> {
      using Q = sql::forget_closed_windows;
      if (auto ok = c.run<Q>(c.params<Q>().set(Q::limit, limit)); !ok) {
        return fail_with(ok.error());
      }
      return static_cast<std::int64_t>(c.affected_rows());
    });
  }

  Result<bool> wait_for_work(std::string_view queue, Duration timeout) override {
    // No NOTIFY: poll has_due_job, 1 ms after the call and then twice as long each time up
    // to kMaxPoll. A worker calls this when it found nothing to lease, so a job added to an
    // idle queue starts within about kMaxPoll.
    constexpr auto kFirstPoll = std::chrono::milliseconds(1);
    constexpr auto kMaxPoll = std::chrono::milliseconds(25);
    const auto deadline = Clock::now() + timeout;
    Clock::duration interval = kFirstPoll;
    while (true) {
      auto due = with_connection<bool>(true, [&](Connection& c) -> Result<bool> {
        using Q = sql::has_due_job;
        auto rows = c.run<Q>(c.params<Q>().set(Q::queue, queue));
        if (!rows) return fail_with(rows.error());
        const bool is_due = !rows->empty() && rows->int64(0, 0) != 0;
        if (!is_due || rows->int64(0, 1) == 0) return is_due;
        using T = sql::queue_throttled;
        auto throttled = c.run<T>(c.params<T>().set(T::queue, queue));
        if (!throttled) return fail_with(throttled.error());
        return throttled->empty() || throttled->int64(0, 0) == 0;
      });
      if (!due) return fail_with(due.error());
      if (*due) return true;
      const auto now = Clock::now();
      if (now >= deadline) return false;
      std::this_thread::sleep_for(std::min<Clock::duration>(interval, deadline - now));
      interval = std::min<Clock::duration>(interval * 2, kMaxPoll);
    }
  }

  Result<std::int64_t> rescue_expired(std::string_view queue) override {
    // A plain read of the expired ids, then an UPDATE of those by primary key (statements.sql
    // expired_ids): no range read that could wait for other transactions' rows. In batches.
    constexpr int kRescueBatch = 1000;
    std::int64_t total = 0;
    while (true) {
      auto ids = with_connection<std::string>(true, [&](Connection& c) -> Result<std::string> {
        using Q = sql::expired_ids;
        auto rows = c.run<Q>(c.params<Q>().set(Q::queue, queue).set(Q::limit, kRescueBatch));
        if (!rows) return fail_with(rows.error());
        if (rows->empty()) return std::string();
        JsonArray json;
        for (std::size_t r = 0; r < rows->size(); ++r) json.number(rows->int64(r, 0));
        return std::move(json).finish();
      });
      if (!ids) return fail_with(ids.error());
      if (ids->empty()) return total;
      // Lock the ids still expired, record their history entries, move them: one
      // transaction, so that the entries are exactly the leases it rescued.
      auto rescued = write<std::int64_t>([&](Connection& c) -> Result<std::int64_t> {
        using L = sql::lock_expired;
        auto locked = c.run<L>(c.params<L>().set(L::ids, *ids));
        if (!locked) return fail_with(locked.error());
        if (locked->empty()) return std::int64_t{0};
        JsonArray locked_ids;
        for (std::size_t r = 0; r < locked->size(); ++r) locked_ids.number(locked->int64(r, 0));
        const std::string held = std::move(locked_ids).finish();
        using E = sql::record_rescued_errors;
        if (auto ok = c.run<E>(c.params<E>().set(E::ids, held)); !ok) {
          return fail_with(ok.error());
        }
        using Q = sql::rescue_expired;
        if (auto ok = c.run<Q>(c.params<Q>().set(Q::ids, held)); !ok) {
          return fail_with(ok.error());
        }
        return static_cast<std::int64_t>(c.affected_rows());
      });
      if (!rescued) return fail_with(rescued.error());
      total += *rescued;
      if (std::count(ids->begin(), ids->end(), ',') + 1 < kRescueBatch) return total;
    }
  }

  Result<std::vector<JobId>> cancel(std::span<const JobId> ids) override {
    return change_each<sql::cancel>(ids);
  }

  Result<std::vector<JobId>> retry(std::span<const JobId> ids) override {
    return write<std::vector<JobId>>([&](Connection& c) -> Result<std::vector<JobId>> {
      std::vector<JobId> changed;
      bool locked = false;
      for (JobId id : ids) {
        // Before: whether the job is a member that has told its group of its finish (then it
        // joins again) or not yet (then the group still counts it).
        using B = sql::job_group;
        auto before = c.run<B>(c.params<B>().set(B::id, id));
        if (!before) return fail_with(before.error());
        if (before->empty()) continue;
        const bool told = before->int64(0, 0) == 0;
        const std::optional<std::string> group = before->optional_text(0, 1);
        auto ok = c.run<sql::retry>(c.params<sql::retry>().set(sql::retry::id, id));
        if (!ok) {
          if (c.last_errno() == ER_DUP_ENTRY) continue;  // a live job holds its unique key
          return fail_with(ok.error());
        }
        if (c.affected_rows() != 1) continue;
        changed.push_back(id);
        if (group && told) {
          using J = sql::join_group;
          if (auto joined = c.run<J>(c.params<J>().set(J::name, *group)); !joined) {
            return fail_with(joined.error());
          }
        }
        // A dependent waits again for what has not succeeded (or runs now), under the
        // resolver's lock so that no round of resolve_dependencies is half seen.
        using H = sql::has_dependencies;
        auto has = c.run<H>(c.params<H>().set(H::id, id));
        if (!has) return fail_with(has.error());
        if (has->int64(0, 0) == 0) continue;
        if (!locked) {
          if (auto lock = c.query(sql::resolve_wait_lock::text); !lock) {
            return fail_with(lock.error());
          }
          locked = true;
        }
        for (auto step : {by_id<sql::remeet_dependencies>(c, id), by_id<sql::rewait>(c, id),
                          by_id<sql::renotify>(c, id)}) {
          if (!step) return fail_with(step.error());
        }
      }
      return changed;
    });
  }

  Result<Dependencies> dependencies(JobId id) override {
    return with_connection<Dependencies>(true, [&](Connection& c) -> Result<Dependencies> {
      Dependencies found;
      auto read_edges = [](const mariadb::Rows& rows, std::vector<Dependency>& into) {
        for (std::size_t r = 0; r < rows.size(); ++r) {
          const JobId other = rows.int64(r, 0);
          into.push_back(
              Dependency{other > 0 ? other : 0,
                         rows.is_null(r, 1) ? std::nullopt : parse_job_state(rows.text(r, 1)),
                         rows.int64(r, 2) != 0, rows.optional_text(r, 3)});
        }
      };
      using A = sql::dependencies_of;
      auto after = c.run<A>(c.params<A>().set(A::id, id));
      if (!after) return fail_with(after.error());
      read_edges(*after, found.after);
      using D = sql::dependents_of;
      auto dependents = c.run<D>(c.params<D>().set(D::id, id).set(D::limit, kMaxListedDependents));
      if (!dependents) return fail_with(dependents.error());
      read_edges(*dependents, found.dependents);
      using N = sql::dependent_count;
      auto count = c.run<N>(c.params<N>().set(N::id, id));
      if (!count) return fail_with(count.error());
      found.dependent_count = count->int64(0, 0);
      using B = sql::job_group;
      auto own = c.run<B>(c.params<B>().set(B::id, id));
      if (!own) return fail_with(own.error());
      if (!own->empty()) found.group = own->optional_text(0, 1);
      return found;
    });
  }

  Result<bool> has_untold() override {
    return with_connection<bool>(true, [](Connection& c) -> Result<bool> {
      auto rows = c.query(sql::any_notified::text);
      if (!rows) return fail_with(rows.error());
      return rows->int64(0, 0) != 0;
    });
  }

  Result<std::int64_t> resolve_dependencies() override {
    // One round, one transaction, under the 'dependencies' lock row.
    return write<std::int64_t>([&](Connection& c) -> Result<std::int64_t> {
      auto lock = c.query(sql::resolve_lock::text);
      if (!lock) return fail_with(lock.error());
      if (lock->empty()) return 0;  // another process is resolving
      return mariadb::resolve_round(c);
    });
  }

  Result<std::optional<GroupStats>> group_stats(std::string_view group) override {
    return with_connection<std::optional<GroupStats>>(
        true, [&](Connection& c) -> Result<std::optional<GroupStats>> {
          using G = sql::group_row;
          auto row = c.run<G>(c.params<G>().set(G::name, group));
          if (!row) return fail_with(row.error());
          if (row->empty()) return std::optional<GroupStats>{};
          GroupStats stats{.name = std::string(group)};
          stats.live = row->int64(0, 0);
          stats.waiters = row->int64(0, 1);
          using N = sql::group_counts;
          auto counts = c.run<N>(c.params<N>().set(N::name, group));
          if (!counts) return fail_with(counts.error());
          for (std::size_t r = 0; r < counts->size(); ++r) {
            add_group_count(stats, counts->text(r, 0), counts->int64(r, 1));
          }
          return std::optional<GroupStats>(std::move(stats));
        });
  }

  Result<std::vector<Job>> list_group(std::string_view group, JobId after_id, int limit) override {
    return with_connection<std::vector<Job>>(true, [&](Connection& c) -> Result<std::vector<Job>> {
      using L = sql::list_group;
      auto rows = c.run<L>(
          c.params<L>().set(L::name, group).set(L::after_id, after_id).set(L::limit, limit));
      if (!rows) return fail_with(rows.error());
      std::vector<Job> jobs;
      for (std::size_t r = 0; r < rows->size(); ++r) jobs.push_back(read_job(*rows, r));
      return jobs;
    });
  }

  Result<std::int64_t> retry_all(std::string_view queue, JobState state) override {
    constexpr int kRetryBatch = 1000;
    std::int64_t total = 0;
    // Keyset paging along readpast_jobs_finished_at (statements.sql, retry_candidates).
    std::int64_t after_at = std::numeric_limits<std::int64_t>::min();
    JobId after_id = 0;
    while (true) {
      auto ids = with_connection<std::vector<JobId>>(
          true, [&](Connection& c) -> Result<std::vector<JobId>> {
            using Q = sql::retry_candidates;
            auto rows = c.run<Q>(c.params<Q>()
                                     .set(Q::queue, queue)
                                     .set(Q::state, to_string(state))
                                     .set(Q::after_at, after_at)
                                     .set(Q::after_id, after_id)
                                     .set(Q::limit, kRetryBatch));
            if (!rows) return fail_with(rows.error());
            std::vector<JobId> found;
            for (std::size_t r = 0; r < rows->size(); ++r) found.push_back(rows->int64(r, 0));
            if (!rows->empty()) after_at = rows->int64(rows->size() - 1, 1);
            return found;
          });
      if (!ids) return fail_with(ids.error());
      if (ids->empty()) return total;
      auto retried = retry(*ids);
      if (!retried) return fail_with(retried.error());
      total += static_cast<std::int64_t>(retried->size());
      after_id = ids->back();
      if (ids->size() < static_cast<std::size_t>(kRetryBatch)) return total;
    }
  }

  Result<std::int64_t> purge(const PurgeRequest& request) override {
    constexpr int kPurgeBatch = 5000;
    auto now_value = now();
    if (!now_value) return fail_with(now_value.error());
    // The cutoff is fixed once, so that a long purge does not chase rows finishing now.
    const std::int64_t cutoff =
        to_micros(*now_value) - micros(request.older_than.value_or(Duration::zero()));
    std::int64_t total = 0;
    std::int64_t budget = request.limit.value_or(std::numeric_limits<int>::max());
    while (budget > 0) {
      const int batch = static_cast<int>(std::min<std::int64_t>(budget, kPurgeBatch));
      auto deleted = write<std::int64_t>([&](Connection& c) -> Result<std::int64_t> {
        using Q = sql::purge;
        auto ok = c.run<Q>(c.params<Q>()
                               .set(Q::queue, request.queue)
                               .set(Q::state, to_string(request.state))
                               .set(Q::finished_before, cutoff)
                               .set(Q::limit, batch));
        if (!ok) return fail_with(ok.error());
        return static_cast<std::int64_t>(c.affected_rows());
      });
      if (!deleted) return fail_with(deleted.error());
      total += *deleted;
      budget -= *deleted;
      if (*deleted < batch) break;
    }
    return total;
  }

  Result<std::vector<QueueStats>> stats(std::optional<std::string_view> queue) override {
    return with_connection<std::vector<QueueStats>>(
        true, [&](Connection& c) -> Result<std::vector<QueueStats>> {
          Result<Rows> rows;
          if (queue) {
            using Q = sql::stats_queue;
            rows = c.run<Q>(c.params<Q>().set(Q::queue, *queue));
          } else {
            rows = c.query(sql::stats_all::text);
          }
          if (!rows) return fail_with(rows.error());
          std::vector<QueueStats> result;
          for (std::size_t r = 0; r < rows->size(); ++r) {
            std::string name(rows->text(r, 0));
            if (result.empty() || result.back().queue != name) result.push_back({.queue = name});
            QueueStats& q = result.back();
            if (rows->text(r, 1) == "limits") {
              set_limits_row(q, rows->optional_int64(r, 2), rows->optional_int64(r, 3),
                             rows->optional_int64(r, 4));
              continue;
            }
            if (rows->text(r, 1) == "paused") {
              q.paused = true;
              continue;
            }
            const JobState state = parse_job_state(rows->text(r, 1)).value_or(JobState::kAvailable);
            set_state_counts(q, state, rows->int64(r, 2), rows->int64(r, 3));
            if (state == JobState::kAvailable) {
              if (auto age = rows->optional_int64(r, 4)) q.oldest_available_age = Duration(*age);
            }
          }
          return result;
        });
  }

  Result<std::vector<Job>> list(const ListRequest& request) override {
    // Finished states are found through finished_state (statements.sql, list_finished_state).
    const bool finished = request.state && is_finished(*request.state);
    if (request.queue && request.state) {
      return finished ? list_in_order<sql::list_queue_finished_state,
                                      sql::list_queue_finished_state_desc>(request)
                      : list_in_order<sql::list_queue_state, sql::list_queue_state_desc>(request);
    }
    if (request.queue) return list_in_order<sql::list_queue, sql::list_queue_desc>(request);
    if (request.state) {
      return finished
                 ? list_in_order<sql::list_finished_state, sql::list_finished_state_desc>(request)
                 : list_in_order<sql::list_state, sql::list_state_desc>(request);
    }
    return list_in_order<sql::list_all, sql::list_all_desc>(request);
  }

  template <class Asc, class Desc>
  Result<std::vector<Job>> list_in_order(const ListRequest& request) {
    if (request.order == ListOrder::kNewestFirst) return list_with<Desc>(request);
    return list_with<Asc>(request);
  }

  template <class Q>
  Result<std::vector<Job>> list_with(const ListRequest& request) {
    return with_connection<std::vector<Job>>(true, [&](Connection& c) -> Result<std::vector<Job>> {
      auto p = c.params<Q>();
      p.set(Q::after_id, request.after_id.value_or(0))
          .set(Q::before_id, request.before_id.value_or(std::numeric_limits<std::int64_t>::max()))
          .set(Q::limit, request.limit)
          .set(Q::scheduled, request.view == ListView::kScheduled ? 1 : 0)
          .set(Q::retrying, request.view == ListView::kRetrying ? 1 : 0)
          .set(Q::expired, request.view == ListView::kExpired ? 1 : 0);
      if (request.search) {
        p.set(Q::search, *request.search);
      } else {
        p.set_null(Q::search);
      }
      if constexpr (requires { Q::queue; }) p.set(Q::queue, *request.queue);
      if constexpr (requires { Q::state; }) p.set(Q::state, to_string(*request.state));
      auto rows = c.run<Q>(p);
      if (!rows) return fail_with(rows.error());
      std::vector<Job> jobs;
      jobs.reserve(rows->size());
      for (std::size_t r = 0; r < rows->size(); ++r) jobs.push_back(read_job(*rows, r));
      return jobs;
    });
  }

  Result<std::optional<std::pair<JobId, JobId>>> id_bounds() override {
    using Bounds = std::optional<std::pair<JobId, JobId>>;
    return with_connection<Bounds>(true, [&](Connection& c) -> Result<Bounds> {
      auto rows = c.query(sql::id_bounds::text);
      if (!rows) return fail_with(rows.error());
      if (rows->size() == 0) return Bounds{};
      auto low = rows->optional_int64(0, 0);
      auto high = rows->optional_int64(0, 1);
      if (!low || !high) return Bounds{};
      return Bounds{std::pair<JobId, JobId>(*low, *high)};
    });
  }

  Result<std::vector<JobId>> remove(std::span<const JobId> ids) override {
    return change_each<sql::delete_finished>(ids);
  }

  Result<std::vector<FinishedCounts>> finished_since(
      TimePoint since, std::optional<std::string_view> queue) override {
    using Counts = std::vector<FinishedCounts>;
    return with_connection<Counts>(true, [&](Connection& c) -> Result<Counts> {
      // Every queue: one range per queue (statements.sql, job_queues).
      auto queues = queue ? Result<std::vector<std::string>>({std::string(*queue)}) : job_queues(c);
      if (!queues) return fail_with(queues.error());
      Counts counts;
      for (const std::string& name : *queues) {
        using Q = sql::finished_since_queue;
        auto rows = c.run<Q>(c.params<Q>().set(Q::queue, name).set(Q::since, to_micros(since)));
        if (!rows) return fail_with(rows.error());
        for (std::size_t r = 0; r < rows->size(); ++r) {
          counts.push_back({std::string(rows->text(r, 0)), rows->int64(r, 1), rows->int64(r, 2)});
        }
      }
      return counts;
    });
  }

  static Result<std::vector<std::string>> job_queues(Connection& c) {
    auto rows = c.query(sql::job_queues::text);
    if (!rows) return fail_with(rows.error());
    std::vector<std::string> queues;
    for (std::size_t r = 0; r < rows->size(); ++r) queues.emplace_back(rows->text(r, 0));
    return queues;
  }

  Status set_paused(std::string_view queue, bool paused) override {
    auto done = write<bool>([&](Connection& c) -> Result<bool> {
      Result<Rows> ok;
      if (paused) {
        ok = c.run<sql::pause>(c.params<sql::pause>().set(sql::pause::queue, queue));
      } else {
        ok = c.run<sql::resume>(c.params<sql::resume>().set(sql::resume::queue, queue));
      }
      if (!ok) return fail_with(ok.error());
      return true;
    });
    if (!done) return fail_with(done.error());
    return {};
  }

  Result<bool> upsert_schedule(const Schedule& schedule) override {
    return write<bool>([&](Connection& c) -> Result<bool> {
      using F = sql::find_schedule;
      auto existed = c.run<F>(c.params<F>().set(F::name, schedule.name));
      if (!existed) return fail_with(existed.error());
      using Q = sql::upsert_schedule;
      auto ok = c.run<Q>(c.params<Q>()
                             .set(Q::name, schedule.name)
                             .set(Q::queue, schedule.queue)
                             .set(Q::spec, schedule.spec)
                             .set_bytes(Q::payload, schedule.payload)
                             .set(Q::priority, schedule.priority)
                             .set(Q::max_attempts, schedule.max_attempts));
      if (!ok) return fail_with(ok.error());
      return existed->empty();
    });
  }

  Result<std::vector<Schedule>> list_schedules() override {
    return with_connection<std::vector<Schedule>>(
        true, [&](Connection& c) -> Result<std::vector<Schedule>> {
          auto rows = c.query(sql::list_schedules::text);
          if (!rows) return fail_with(rows.error());
          std::vector<Schedule> schedules;
          for (std::size_t r = 0; r < rows->size(); ++r) {
            Schedule s;
            s.name = std::string(rows->text(r, 0));
            s.queue = std::string(rows->text(r, 1));
            s.spec = std::string(rows->text(r, 2));
            s.payload = std::string(rows->text(r, 3));
            s.priority = static_cast<int>(rows->int64(r, 4));
            s.max_attempts = static_cast<int>(rows->int64(r, 5));
            s.created_at = to_time(rows->int64(r, 6));
            s.last_tick = to_time(rows->optional_int64(r, 7));
            s.last_job = rows->optional_int64(r, 8);
            schedules.push_back(std::move(s));
          }
          return schedules;
        });
  }

  Result<bool> delete_schedule(std::string_view name) override {
    return write<bool>([&](Connection& c) -> Result<bool> {
      using Q = sql::delete_schedule;
      if (auto ok = c.run<Q>(c.params<Q>().set(Q::name, name)); !ok) return fail_with(ok.error());
      return c.affected_rows() == 1;
    });
  }

  Result<std::optional<JobId>> enqueue_tick(std::string_view name, TimePoint tick) override {
    return write<std::optional<JobId>>([&](Connection& c) -> Result<std::optional<JobId>> {
      using T = sql::take_tick;
      if (auto ok = c.run<T>(c.params<T>().set(T::tick, to_micros(tick)).set(T::name, name)); !ok) {
        return fail_with(ok.error());
      }
      if (c.affected_rows() != 1) return std::optional<JobId>{};
      using S = sql::schedule_job;
      auto rows = c.run<S>(c.params<S>().set(S::name, name));
      if (!rows) return fail_with(rows.error());
      if (rows->empty()) return std::optional<JobId>{};
      NewJob job;
      job.queue = std::string(rows->text(0, 0));
      job.payload = std::string(rows->text(0, 1));
      job.priority = static_cast<int>(rows->int64(0, 2));
      job.max_attempts = static_cast<int>(rows->int64(0, 3));
      job.run_at = tick;
      job.unique_key = schedule_job_key(name, tick);
      auto inserted = insert_jobs(c, std::span<const NewJob>(&job, 1));
      if (!inserted) return fail_with(inserted.error());
      if (!inserted->front().inserted) return std::optional<JobId>{};
      const JobId id = inserted->front().id;
      using R = sql::record_tick_job;
      if (auto ok = c.run<R>(c.params<R>().set(R::job_id, id).set(R::name, name)); !ok) {
        return fail_with(ok.error());
      }
      return std::optional<JobId>(id);
    });
  }

  Result<std::optional<JobId>> enqueue_schedule_now(std::string_view name) override {
    return write<std::optional<JobId>>([&](Connection& c) -> Result<std::optional<JobId>> {
      using S = sql::schedule_job;
      auto rows = c.run<S>(c.params<S>().set(S::name, name));
      if (!rows) return fail_with(rows.error());
      if (rows->empty()) return std::optional<JobId>{};
      NewJob job;
      job.queue = std::string(rows->text(0, 0));
      job.payload = std::string(rows->text(0, 1));
      job.priority = static_cast<int>(rows->int64(0, 2));
      job.max_attempts = static_cast<int>(rows->int64(0, 3));
      auto inserted = insert_jobs(c, std::span<const NewJob>(&job, 1));
      if (!inserted) return fail_with(inserted.error());
      return std::optional<JobId>(inserted->front().id);
    });
  }

  Result<bool> claim_task(std::string_view task, Duration interval, std::string_view by) override {
    return write<bool>([&](Connection& c) -> Result<bool> {
      using N = sql::task_next_run;
      auto rows = c.run<N>(c.params<N>().set(N::task, task));
      if (!rows) return fail_with(rows.error());
      if (rows->empty()) {
        using I = sql::insert_task;
        auto ok = c.run<I>(c.params<I>()
                               .set(I::task, task)
                               .set(I::interval, micros(interval))
                               .set_bytes(I::claimed_by, by));
        if (!ok) {
          if (c.last_errno() == ER_DUP_ENTRY) return false;
          return fail_with(ok.error());
        }
        return true;
      }
      if (rows->int64(0, 0) == 0) return false;
      using Q = sql::claim_task;
      auto ok = c.run<Q>(c.params<Q>()
                             .set(Q::interval, micros(interval))
                             .set_bytes(Q::claimed_by, by)
                             .set(Q::task, task));
      if (!ok) return fail_with(ok.error());
      return true;
    });
  }

  Status add_metrics(std::span<const MetricSample> rows) override {
    return write_status([&](Connection& c) -> Status {
      using Q = sql::add_metric;
      for (const MetricSample& row : rows) {
        auto ok = c.run<Q>(c.params<Q>()
                               .set(Q::name, row.name)
                               .set(Q::queue, row.queue)
                               .set(Q::label, row.label)
                               .set(Q::label_value, row.label_value)
                               .set(Q::value, row.value));
        if (!ok) return fail_with(ok.error());
      }
      return {};
    });
  }

  Result<std::vector<MetricSample>> metrics() override {
    return with_connection<std::vector<MetricSample>>(
        true, [&](Connection& c) -> Result<std::vector<MetricSample>> {
          auto rows = c.query(sql::read_metrics::text);
          if (!rows) return fail_with(rows.error());
          std::vector<MetricSample> samples;
          samples.reserve(rows->size());
          for (std::size_t r = 0; r < rows->size(); ++r) {
            samples.push_back(MetricSample{
                std::string(rows->text(r, 0)), std::string(rows->text(r, 1)),
                std::string(rows->text(r, 2)), std::string(rows->text(r, 3)), rows->int64(r, 4)});
          }
          return samples;
        });
  }

  Status upsert_worker(const WorkerProcess& worker, Duration forget_after) override {
    return write_status([&](Connection& c) -> Status {
      using Q = sql::upsert_worker;
      auto ok = c.run<Q>(c.params<Q>()
                             .set_bytes(Q::name, worker.name)
                             .set_bytes(Q::host, worker.host)
                             .set(Q::pid, worker.pid)
                             .set(Q::queues, join_queue_names(worker.queues))
                             .set(Q::threads, worker.threads));
      if (!ok) return fail_with(ok.error());
      using F = sql::forget_stale_workers;
      if (auto forgot = c.run<F>(c.params<F>().set(F::forget_us, micros(forget_after))); !forgot) {
        return fail_with(forgot.error());
      }
      return {};
    });
  }

  Status delete_worker(std::string_view name) override {
    return write_status([&](Connection& c) -> Status {
      using Q = sql::delete_worker;
      if (auto ok = c.run<Q>(c.params<Q>().set_bytes(Q::name, name)); !ok) {
        return fail_with(ok.error());
      }
      return {};
    });
  }

  Result<std::vector<WorkerProcess>> list_workers() override {
    return with_connection<std::vector<WorkerProcess>>(
        true, [&](Connection& c) -> Result<std::vector<WorkerProcess>> {
          auto rows = c.query(sql::list_workers::text);
          if (!rows) return fail_with(rows.error());
          std::vector<WorkerProcess> workers;
          for (std::size_t r = 0; r < rows->size(); ++r) {
            WorkerProcess worker;
            worker.name = std::string(rows->text(r, 0));
            worker.host = std::string(rows->text(r, 1));
            worker.pid = rows->int64(r, 2);
            worker.queues = split_queue_names(rows->text(r, 3));
            worker.threads = static_cast<int>(rows->int64(r, 4));
            worker.started_at = to_time(rows->int64(r, 5));
            worker.heartbeat_at = to_time(rows->int64(r, 6));
            workers.push_back(std::move(worker));
          }
          return workers;
        });
  }

  Result<StorageHealth> storage_health() override {
    return with_connection<StorageHealth>(true, [&](Connection& c) -> Result<StorageHealth> {
      StorageHealth health;
      auto oldest = c.query(sql::oldest_transaction::text);
      if (oldest) {
        if (oldest->size() == 1) {
          SnapshotHolder holder;
          holder.kind = "connection";
          holder.pid = oldest->optional_int64(0, 0);
          holder.client = oldest->optional_text(0, 1).value_or("");
          holder.state = oldest->optional_text(0, 2).value_or("");
          if (auto us = oldest->optional_int64(0, 3)) holder.age = Duration(*us);
          health.oldest_snapshot = std::move(holder);
        }
      } else if (c.last_errno() != ER_SPECIFIC_ACCESS_DENIED_ERROR) {
        // Without the PROCESS privilege INNODB_TRX is closed: no holder is known.
        return fail_with(oldest.error());
      }
      auto sizes = c.query(sql::storage_sizes::text);
      if (!sizes) return fail_with(sizes.error());
      for (std::size_t r = 0; r < sizes->size(); ++r) {
        health.sizes.push_back(
            {.relation = std::string(sizes->text(r, 0)), .bytes = sizes->int64(r, 1)});
      }
      return health;
    });
  }

  Result<TimePoint> now() override {
    return with_connection<TimePoint>(true, [&](Connection& c) -> Result<TimePoint> {
      auto rows = c.query(sql::server_now::text);
      if (!rows) return fail_with(rows.error());
      return to_time(rows->int64(0, 0));
    });
  }

  Result<std::vector<bool>> held(std::span<const LeasedRef> refs) override {
    JsonArray leases;
    for (const LeasedRef& ref : refs) leases.lease(ref.id, ref.token);
    const std::string json = std::move(leases).finish();
    return with_connection<std::vector<bool>>(
        true, [&](Connection& c) -> Result<std::vector<bool>> {
          using Q = sql::held_many;
          auto rows = c.run<Q>(c.params<Q>().set(Q::refs, json));
          if (!rows) return fail_with(rows.error());
          std::set<std::pair<JobId, std::string>> matched;
          for (std::size_t r = 0; r < rows->size(); ++r) {
            matched.emplace(rows->int64(r, 0), std::string(rows->text(r, 1)));
          }
          std::vector<bool> held;
          held.reserve(refs.size());
          for (const LeasedRef& ref : refs)
            held.push_back(matched.contains({ref.id, ref.token.hex()}));
          return held;
        });
  }

  Result<std::optional<Job>> get(JobId id) override {
    return with_connection<std::optional<Job>>(
        true, [&](Connection& c) -> Result<std::optional<Job>> {
          auto rows = c.run<sql::get>(c.params<sql::get>().set(sql::get::id, id));
          if (!rows) return fail_with(rows.error());
          if (rows->empty()) return std::optional<Job>{};
          Job job = read_job(*rows, 0);
          job.progress = rows->optional_text(0, 16);
          using E = sql::job_errors;
          auto errors = c.run<E>(c.params<E>().set(E::id, id));
          if (!errors) return fail_with(errors.error());
          for (std::size_t r = 0; r < errors->size(); ++r) {
            job.errors.push_back(JobError{static_cast<int>(errors->int64(r, 0)),
                                          to_time(errors->int64(r, 1)), errors->optional_text(r, 2),
                                          std::string(errors->text(r, 3))});
          }
          return std::optional<Job>(std::move(job));
        });
  }

 private:
  // Migrations as MariaDB runs them: each script, then its row in readpast_schema_version.
  class Steps final : public MigrationSteps {
   public:
    explicit Steps(Connection& c) : c_(c) {}
    Result<int> version() override { return read_version(c_); }
    Status apply(int number) override {
      if (auto ok = c_.query(sql::migrations[static_cast<std::size_t>(number - 1)], true); !ok) {
        return fail_with(ok.error());
      }
      using Q = sql::record_version;
      if (auto ok = c_.run<Q>(c_.params<Q>().set(Q::version, number)); !ok) {
        return fail_with(ok.error());
      }
      return {};
    }

   private:
    Connection& c_;
  };

  static Result<int> read_version(Connection& c) {
    auto has = c.query(sql::has_version_table::text);
    if (!has) return fail_with(has.error());
    if (has->int64(0, 0) == 0) return 0;
    auto version = c.query(sql::schema_version::text);
    if (!version) return fail_with(version.error());
    return static_cast<int>(version->int64(0, 0));
  }

  // A connection on loan; back to the pool on destruction unless it broke.
  class Borrowed {
   public:
    Borrowed(MariadbEngine& engine, std::unique_ptr<Connection> c, bool reused)
        : engine_(&engine), c_(std::move(c)), reused_(reused) {}
    Borrowed(Borrowed&&) noexcept = default;
    Borrowed& operator=(Borrowed&&) = delete;
    ~Borrowed() {
      if (c_) engine_->give_back(std::move(c_));
    }
    Connection& operator*() const { return *c_; }
    bool reused() const { return reused_; }

   private:
    MariadbEngine* engine_;
    std::unique_ptr<Connection> c_;
    bool reused_;
  };

  void log(LogLevel level, std::string line) const { emit(logger_, level, std::move(line)); }

  Result<Borrowed> acquire() {
    {
      std::lock_guard lock(mu_);
      if (!idle_.empty()) {
        auto c = std::move(idle_.back());
        idle_.pop_back();
        return Borrowed(*this, std::move(c), true);
      }
      if (outage_ && Clock::now() < next_attempt_) {
        return fail_with(Error::unavailable(outage_reason_));
      }
    }
    auto c = Connection::open(settings_);
    std::lock_guard lock(mu_);
    if (!c) {
      if (!outage_) {
        outage_ = true;
        backoff_ = kReconnectFirstBackoff;
        log(LogLevel::kWarn, c.error().message + "; reconnecting with backoff");
      } else {
        backoff_ = std::min<Clock::duration>(backoff_ * 2, kReconnectMaxBackoff);
      }
      outage_reason_ = c.error().message;
      next_attempt_ = Clock::now() + backoff_;
      return fail_with(c.error());
    }
    if (outage_) {
      outage_ = false;
      log(LogLevel::kInfo, "reconnected to " + settings_.redacted);
    }
    return Borrowed(*this, std::move(*c), false);
  }

  void give_back(std::unique_ptr<Connection> c) {
    std::lock_guard lock(mu_);
    if (c->broken()) {
      // The server went away: the idle connections are likely gone too.
      idle_.clear();
      return;
    }
    idle_.push_back(std::move(c));
  }

  // Runs body(connection), in a transaction when `transaction`; deadlocks and lock-wait
  // timeouts run it again, and so does a stale idle connection when nothing can have been
  // done (read_only, or the transaction never began).
  template <class T, class Body>
  Result<T> run_body(bool transaction, bool read_only, Body&& body) {
    for (int attempt = 0;; ++attempt) {
      auto borrowed = acquire();
      if (!borrowed) return fail_with(borrowed.error());
      Connection& c = **borrowed;
      bool began = false;
      Result<T> result = [&]() -> Result<T> {
        if (transaction) {
          if (auto ok = c.query("START TRANSACTION"); !ok) return fail_with(ok.error());
          began = true;
        }
        Result<T> r = body(c);
        if (!r) return r;
        if (transaction) {
          if (auto ok = c.query("COMMIT"); !ok) return fail_with(ok.error());
        }
        return r;
      }();
      if (result) return result;
      const unsigned number = c.last_errno();
      if (transaction && began && !c.broken()) (void)c.query("ROLLBACK");
      if (mariadb::is_retryable_lock_error(number) && attempt < kLockRetries) {
        std::this_thread::sleep_for(std::chrono::microseconds(500 * (1 + attempt % 8)));
        continue;
      }
      // A stale idle connection: run again when nothing can have been done (a read, or a
      // transaction that never began); a lone write may have committed before the loss.
      if (c.broken() && borrowed->reused() && (read_only || (transaction && !began)) &&
          attempt == 0) {
        continue;
      }
      return result;
    }
  }

  template <class T, class Body>
  Result<T> write(Body&& body) {
    return run_body<T>(true, false, std::forward<Body>(body));
  }

  // write() for a body that only succeeds or fails (a Status).
  template <class Body>
  Status write_status(Body&& body) {
    auto done = write<bool>([&](Connection& c) -> Result<bool> {
      if (Status ok = body(c); !ok) return fail_with(ok.error());
      return true;
    });
    if (!done) return fail_with(done.error());
    return {};
  }

  // read_only: a single read, run again on a fresh connection after a stale one.
  template <class T, class Body>
  Result<T> with_connection(bool read_only, Body&& body) {
    return run_body<T>(false, read_only, std::forward<Body>(body));
  }

  // Settles refs with the fenced statement One (:id, :token) or, for a batch, Many (:refs);
  // bind_rest(params, statement) sets the statement's other parameters. Returns, per ref,
  // whether its lease was still held.
  template <class One, class Many, class BindRest>
  Result<std::vector<bool>> settle(std::span<const LeasedRef> refs, BindRest&& bind_rest) {
    if (refs.size() > 1) {
      // Every ref in one statement, kept only when every ref matched (the usual case: 3 round
      // trips for the batch instead of one per job). Otherwise rolled back and settled one by
      // one below, which tells the refused refs apart.
      JsonArray leases;
      for (const LeasedRef& ref : refs) leases.lease(ref.id, ref.token);
      const std::string json = std::move(leases).finish();
      auto all = write<bool>([&](Connection& c) -> Result<bool> {
        auto p = c.params<Many>();
        p.set(Many::refs, json);
        bind_rest(p, Many{});
        if (auto ok = c.run<Many>(p); !ok) return fail_with(ok.error());
        if (c.affected_rows() == refs.size()) return true;
        // The COMMIT that follows finds no transaction: nothing of this one is kept.
        if (auto ok = c.query("ROLLBACK"); !ok) return fail_with(ok.error());
        return false;
      });
      if (!all) return fail_with(all.error());
      if (*all) return std::vector<bool>(refs.size(), true);
    }
    // One statement alone commits by itself (autocommit): no transaction round trips.
    const bool single = refs.size() == 1;
    return run_body<std::vector<bool>>(!single, false,
                                       [&](Connection& c) -> Result<std::vector<bool>> {
                                         std::vector<bool> accepted;
                                         accepted.reserve(refs.size());
                                         for (const LeasedRef& ref : refs) {
                                           auto p = c.params<One>();
                                           p.set(One::id, ref.id).set(One::token, ref.token.hex());
                                           bind_rest(p, One{});
                                           if (auto ok = c.run<One>(p); !ok)
                                             return fail_with(ok.error());
                                           accepted.push_back(c.affected_rows() == 1);
                                         }
                                         return accepted;
                                       });
  }

  // Statement Q on one job (:id) inside the caller's transaction; returns how many rows it
  // changed.
  template <class Q>
  static Result<std::uint64_t> by_id(Connection& c, JobId id) {
    if (auto ok = c.run<Q>(c.params<Q>().set(Q::id, id)); !ok) return fail_with(ok.error());
    return c.affected_rows();
  }

  // One statement Q (:id) per id in one transaction; returns the ids it changed. A
  // change refused by the unique key (retry of a job whose key a live job holds) is none.
  template <class Q>
  Result<std::vector<JobId>> change_each(std::span<const JobId> ids) {
    return write<std::vector<JobId>>([&](Connection& c) -> Result<std::vector<JobId>> {
      std::vector<JobId> changed;
      for (JobId id : ids) {
        auto ok = c.run<Q>(c.params<Q>().set(Q::id, id));
        if (!ok) {
          if (c.last_errno() == ER_DUP_ENTRY) continue;
          return fail_with(ok.error());
        }
        if (c.affected_rows() == 1) changed.push_back(id);
      }
      return changed;
    });
  }

  // Constant after construction.
  const Settings settings_;
  const Logger logger_;

  std::mutex mu_;
  std::vector<std::unique_ptr<Connection>> idle_;  // guarded by mu_
  // The outage, guarded by mu_: while one is under way, a new connection is tried only
  // from next_attempt_ on.
  bool outage_ = false;
  std::string outage_reason_;
  Clock::duration backoff_ = kReconnectFirstBackoff;
  Clock::time_point next_attempt_{};
};

Result<unsigned> parse_unsigned(const DatabaseUrl& url, std::string_view key, unsigned fallback) {
  auto it = url.params.find(key);
  if (it == url.params.end()) return fallback;
  unsigned value = 0;
  auto [end, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), value);
  if (ec != std::errc() || end != it->second.data() + it->second.size()) {
    return fail_with(Error::invalid_argument("bad URL '" + url.redacted + "': " + std::string(key) +
                                             " must be a whole number"));
  }
  return value;
}

}  // namespace

Result<std::unique_ptr<Engine>> open_mariadb_engine(const DatabaseUrl& url,
                                                    const QueueOptions& options) {
  Settings settings;
  settings.redacted = url.redacted;
  auto param = [&](std::string_view key) -> std::string {
    auto it = url.params.find(key);
    return it == url.params.end() ? std::string() : it->second;
  };
  settings.host = param("host");
  settings.user = param("user");
  settings.database = param("database");
  settings.socket = param("socket");
  if (url.params.contains("password")) settings.password = param("password");
  auto port = parse_unsigned(url, "port", 3306);
  if (!port) return fail_with(port.error());
  settings.port = *port;
  auto timeout = parse_unsigned(url, "connect_timeout", 10);
  if (!timeout) return fail_with(timeout.error());
  settings.connect_timeout_s = *timeout;
  if (*timeout == 0) {
    return fail_with(Error::invalid_argument("bad URL '" + url.redacted +
                                             "': connect_timeout is seconds, at least 1"));
  }
  // A duration, as on PostgreSQL; Connector/C counts its read and write timeouts in whole
  // seconds, so it is rounded up.
  if (auto it = url.params.find("reply_timeout"); it != url.params.end()) {
    auto reply = parse_duration(it->second);
    if (!reply || *reply <= Duration::zero()) {
      return fail_with(Error::invalid_argument(
          "bad URL '" + url.redacted +
          "': reply_timeout must be a duration of more than zero (e.g. 30s, 5m)"));
    }
    const auto seconds = std::chrono::ceil<std::chrono::seconds>(*reply).count();
    settings.reply_timeout_s =
        static_cast<unsigned>(std::min<std::int64_t>(seconds, std::numeric_limits<int>::max()));
  }
  auto engine = std::make_unique<MariadbEngine>(std::move(settings), options.logger);
  if (auto ok = engine->connect(); !ok) return fail_with(ok.error());
  return std::unique_ptr<Engine>(std::move(engine));
}

const EngineEntry& mariadb_engine_entry() {
  static constexpr EngineEntry kMariadb{"mariadb", open_mariadb_engine};
  return kMariadb;
}

}  // namespace readpast::detail
