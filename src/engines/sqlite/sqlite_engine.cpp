#include "engines/sqlite/sqlite_engine.hpp"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <limits>
#include <mutex>
#include <thread>
#include <tuple>
#include <vector>

#include "core/handout_order.hpp"
#include "core/queue_list.hpp"
#include "engines/sqlite/sqlite_connection.hpp"
#include "engines/sqlite/sqlite_schema.hpp"
#include "engines/sqlite/sqlite_statements.hpp"

namespace readpast::detail {
namespace {

using sqlite::Connection;
using sqlite::ImmediateTransaction;
using sqlite::Statement;
namespace sql = sqlite::sql;

std::int64_t now_micros() {
  return std::chrono::time_point_cast<std::chrono::microseconds>(std::chrono::system_clock::now())
      .time_since_epoch()
      .count();
}

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

// Reads a row selected with READPAST_SQLITE_JOB_COLUMNS.
Job read_job(const Statement& row) {
  Job job;
  job.id = row.int64(0);
  job.queue = row.text(1);
  job.state = parse_job_state(row.text(2)).value_or(JobState::kAvailable);
  job.priority = static_cast<int>(row.int64(3));
  job.run_at = to_time(row.int64(4));
  job.attempts = static_cast<int>(row.int64(5));
  job.max_attempts = static_cast<int>(row.int64(6));
  if (auto token = row.optional_text(7)) {
    if (auto parsed = LeaseToken::from_hex(*token)) job.lease_token = *parsed;
  }
  job.leased_by = row.optional_text(8);
  job.lease_expires_at = to_time(row.optional_int64(9));
  job.enqueued_at = to_time(row.int64(10));
  job.started_at = to_time(row.optional_int64(11));
  job.finished_at = to_time(row.optional_int64(12));
  job.unique_key = row.optional_text(13);
  job.last_error = row.optional_text(14);
  job.payload = row.blob(15);
  return job;
}

// Runs a statement to completion; returns the number of rows it produced.
Result<int> run(Statement& statement) {
  int rows = 0;
  while (true) {
    auto more = statement.step();
    if (!more) return fail_with(more.error());
    if (!*more) return rows;
    ++rows;
  }
}

class SqliteEngine final : public Engine {
 public:
  explicit SqliteEngine(Connection::Settings settings) : settings_(std::move(settings)) {}

  Result<int> migrate() override {
    auto connection = acquire();
    if (!connection) return fail_with(connection.error());
    return sqlite::migrate(*connection->get());
  }

  Status check_schema() override {
    auto connection = acquire();
    if (!connection) return fail_with(connection.error());
    auto version = sqlite::schema_version(*connection->get());
    if (!version) return fail_with(version.error());
    return {};
  }

  Result<std::vector<Enqueued>> enqueue(std::span<const NewJob> jobs) override {
    return write<std::vector<Enqueued>>(
        [&](Connection& c, std::int64_t now) { return insert_jobs(c, now, jobs); });
  }

  // Inserts the jobs inside the caller's write transaction; a job whose unique key a live
  // job of its queue holds gets that job's id instead.
  static Result<std::vector<Enqueued>> insert_jobs(Connection& c, std::int64_t now,
                                                   std::span<const NewJob> jobs) {
    std::vector<Enqueued> results;
    results.reserve(jobs.size());
    for (const NewJob& job : jobs) {
      if (takes_part_in_a_workflow(job)) {
        auto id = insert_dependent(c, now, job);
        if (!id) return fail_with(id.error());
        results.push_back(Enqueued{*id, true});
        continue;
      }
      // An open unique window, or a live job with the key, refuses the job: that job's id.
      auto holder = key_holder(c, now, job);
      if (!holder) return fail_with(holder.error());
      if (*holder) {
        results.push_back(Enqueued{**holder, false});
        continue;
      }
      std::int64_t run_at = now;
      if (job.run_at) run_at = to_micros(*job.run_at);
      if (job.delay) run_at = now + job.delay->count();
      using Q = sql::insert_job;
      auto insert = c.prepare(Q::text);
      if (!insert) return fail_with(insert.error());
      Statement& s = **insert;
      s.bind(Q::queue, std::string_view(job.queue));
      s.bind(Q::priority, job.priority);
      s.bind(Q::run_at, run_at);
      s.bind(Q::max_attempts, job.max_attempts);
      s.bind(Q::now, now);
      if (job.unique_key) {
        s.bind(Q::unique_key, std::string_view(*job.unique_key));
      } else {
        s.bind_null(Q::unique_key);
      }
      s.bind_blob(Q::payload, job.payload);
      if (auto done = s.step(); !done) return fail_with(done.error());
      const JobId id = c.last_insert_rowid();
      if (job.unique_for) {
        using W = sql::open_unique_window;
        auto open = c.prepare(W::text);
        if (!open) return fail_with(open.error());
        Statement& w = **open;
        w.bind(W::queue, std::string_view(job.queue));
        w.bind(W::unique_key, std::string_view(*job.unique_key));
        w.bind(W::job_id, id);
        w.bind(W::until, now + job.unique_for->count());
        if (auto ok = run(w); !ok) return fail_with(ok.error());
      }
      results.push_back(Enqueued{id, true});
    }
    return results;
  }

  // The job that the new job's unique key hands back, inside the caller's transaction: the
  // one whose unique window is open, else the live one (waiting, available or running) that
  // holds the key; nullopt when neither (or no key).
  static Result<std::optional<JobId>> key_holder(Connection& c, std::int64_t now,
                                                 const NewJob& job) {
    if (!job.unique_key) return std::optional<JobId>{};
    using W = sql::find_unique_window;
    auto window = c.prepare(W::text);
    if (!window) return fail_with(window.error());
    (*window)->bind(W::queue, std::string_view(job.queue));
    (*window)->bind(W::unique_key, std::string_view(*job.unique_key));
    (*window)->bind(W::now, now);
    auto open = (*window)->step();
    if (!open) return fail_with(open.error());
    if (*open) return std::optional<JobId>((*window)->int64(0));
    using Q = sql::find_unique_holder;
    auto find = c.prepare(Q::text);
    if (!find) return fail_with(find.error());
    (*find)->bind(Q::queue, std::string_view(job.queue));
    (*find)->bind(Q::unique_key, std::string_view(*job.unique_key));
    auto found = (*find)->step();
    if (!found) return fail_with(found.error());
    if (*found) return std::optional<JobId>((*find)->int64(0));
    return std::optional<JobId>{};
  }

  // A job enqueued after others (core/dependencies.hpp decides its state), inside the
  // caller's write transaction. Its unique key, when held, is an error: the job it would
  // hand back was not enqueued after these dependencies.
  static Result<JobId> insert_dependent(Connection& c, std::int64_t now, const NewJob& job) {
    auto holder = key_holder(c, now, job);
    if (!holder) return fail_with(holder.error());
    if (*holder) return fail_with(unique_key_held_by_error(**holder));
    std::vector<std::optional<JobState>> states;
    for (JobId id : job.after) {
      using Q = sql::dependency_state;
      auto read = c.prepare(Q::text);
      if (!read) return fail_with(read.error());
      (*read)->bind(Q::id, id);
      auto row = (*read)->step();
      if (!row) return fail_with(row.error());
      states.push_back(*row ? parse_job_state((*read)->text(0)) : std::nullopt);
    }
    std::optional<GroupWait> group_wait;
    if (job.after_group) {
      using G = sql::find_group;
      auto find = c.prepare(G::text);
      if (!find) return fail_with(find.error());
      (*find)->bind(G::name, std::string_view(*job.after_group));
      auto row = (*find)->step();
      if (!row) return fail_with(row.error());
      if (!*row) return fail_with(no_such_group_error(*job.after_group));
      group_wait = GroupWait{(*find)->int64(0), (*find)->int64(1) > 0};
    }
    auto plan = plan_dependent(job.after, states, group_wait);
    if (!plan) return fail_with(plan.error());
    if (job.group) {
      using J = sql::join_group;
      auto join = c.prepare(J::text);
      if (!join) return fail_with(join.error());
      (*join)->bind(J::name, std::string_view(*job.group));
      if (auto ok = run(**join); !ok) return fail_with(ok.error());
    }
    using Q = sql::insert_dependent_job;
    auto insert = c.prepare(Q::text);
    if (!insert) return fail_with(insert.error());
    Statement& s = **insert;
    s.bind(Q::queue, std::string_view(job.queue));
    s.bind(Q::state, to_string(plan->state));
    s.bind(Q::priority, job.priority);
    const std::int64_t delay = job.delay ? job.delay->count() : 0;
    std::int64_t run_at = job.run_at ? to_micros(*job.run_at) : now;
    if (plan->state == JobState::kAvailable) run_at = std::max(run_at, now + delay);
    s.bind(Q::run_at, run_at);
    s.bind(Q::max_attempts, job.max_attempts);
    s.bind(Q::now, now);
    if (job.unique_key) {
      s.bind(Q::unique_key, std::string_view(*job.unique_key));
    } else {
      s.bind_null(Q::unique_key);
    }
    s.bind_blob(Q::payload, job.payload);
    s.bind(Q::waiting_for, plan->waiting_for);
    s.bind(Q::delay_us, delay);
    if (job.group) {
      s.bind(Q::group_name, std::string_view(*job.group));
    } else {
      s.bind_null(Q::group_name);
    }
    if (plan->state == JobState::kCancelled) {
      s.bind(Q::finished_at, now);
      s.bind(Q::last_error, std::string_view(*plan->last_error));
    } else {
      s.bind_null(Q::finished_at);
      s.bind_null(Q::last_error);
    }
    if (auto done = s.step(); !done) return fail_with(done.error());
    const JobId id = c.last_insert_rowid();
    for (const auto& [depends_on, met] : plan->edges) {
      using E = sql::insert_dependency;
      auto edge = c.prepare(E::text);
      if (!edge) return fail_with(edge.error());
      (*edge)->bind(E::depends_on, depends_on);
      (*edge)->bind(E::job_id, id);
      (*edge)->bind(E::met, met ? 1 : 0);
      if (auto ok = run(**edge); !ok) return fail_with(ok.error());
    }
    for (JobId depends_on : plan->to_notify) {
      auto mark = c.prepare(sql::mark_notify::text);
      if (!mark) return fail_with(mark.error());
      (*mark)->bind(sql::mark_notify::id, depends_on);
      if (auto ok = run(**mark); !ok) return fail_with(ok.error());
    }
    return id;
  }

  Result<std::vector<Job>> lease(const LeaseRequest& request) override {
    auto jobs = write<std::vector<Job>>([&](Connection& c,
                                            std::int64_t now) -> Result<std::vector<Job>> {
      // lease_one is lease for one job, with the same parameters.
      using Q = sql::lease;
      static_assert(Q::worker_id == sql::lease_one::worker_id && Q::now == sql::lease_one::now &&
                    Q::lease_duration == sql::lease_one::lease_duration &&
                    Q::queue == sql::lease_one::queue && Q::max_jobs == sql::lease_one::max_jobs);
      auto lease = c.prepare(request.max_jobs == 1 ? sql::lease_one::text : Q::text);
      if (!lease) return fail_with(lease.error());
      Statement& s = **lease;
      s.bind(Q::worker_id, std::string_view(request.worker_id));
      s.bind(Q::now, now);
      s.bind(Q::lease_duration, static_cast<std::int64_t>(request.lease_duration.count()));
      s.bind(Q::queue, std::string_view(request.queue));
      s.bind(Q::max_jobs, request.max_jobs);
      std::vector<Job> leased;
      while (true) {
        auto row = s.step();
        if (!row) return fail_with(row.error());
        if (!*row) break;
        leased.push_back(read_job(s));
      }
      return leased;
    });
    if (jobs) sort_in_handout_order(*jobs);
    return jobs;
  }

  Result<LimitedLease> lease_limited(const LeaseRequest& request) override {
    auto result = write<LimitedLease>([&](Connection& c, std::int64_t now) -> Result<LimitedLease> {
      // One writer at a time (BEGIN IMMEDIATE): what this transaction counts cannot change
      // under it, so no lock of the queues row is needed as on the other engines.
      auto read_limits = c.prepare(sql::queue_limits::text);
      if (!read_limits) return fail_with(read_limits.error());
      Statement& q = **read_limits;
      q.bind(sql::queue_limits::queue, std::string_view(request.queue));
      auto found = q.step();
      if (!found) return fail_with(found.error());
      LimitedLease out;
      QueueLimits limits;
      bool paused = false;
      if (*found) {
        paused = q.int64(0) != 0;
        limits.running = q.optional_int64(1);
        if (auto count = q.optional_int64(2)) {
          limits.rate = RateLimit{*count, Duration(q.optional_int64(3).value_or(1))};
        }
      }
      out.limited = !limits.empty();
      if (paused || !out.limited) return out;
      std::optional<std::int64_t> running;
      if (limits.running) {
        auto count = c.prepare(sql::count_running::text);
        if (!count) return fail_with(count.error());
        (*count)->bind(sql::count_running::queue, std::string_view(request.queue));
        (*count)->bind(sql::count_running::limit, *limits.running);
        if (auto ok = (*count)->step(); !ok) return fail_with(ok.error());
        running = (*count)->int64(0);
      }
      std::vector<std::int64_t> free_slots;
      if (limits.rate) {
        auto slots = c.prepare(sql::free_rate_slots::text);
        if (!slots) return fail_with(slots.error());
        Statement& f = **slots;
        f.bind(sql::free_rate_slots::queue, std::string_view(request.queue));
        f.bind(sql::free_rate_slots::before, now - limits.rate->window.count());
        f.bind(sql::free_rate_slots::limit, request.max_jobs);
        while (true) {
          auto row = f.step();
          if (!row) return fail_with(row.error());
          if (!*row) break;
          free_slots.push_back(f.int64(0));
        }
      }
      const Allowance allowance = lease_allowance(
          limits, request.max_jobs, running,
          limits.rate ? std::optional<std::int64_t>(std::ssize(free_slots)) : std::nullopt);
      if (allowance.jobs > 0) {
        using Q = sql::lease_under_limits;
        auto lease = c.prepare(Q::text);
        if (!lease) return fail_with(lease.error());
        Statement& s = **lease;
        s.bind(Q::worker_id, std::string_view(request.worker_id));
        s.bind(Q::now, now);
        s.bind(Q::lease_duration, static_cast<std::int64_t>(request.lease_duration.count()));
        s.bind(Q::queue, std::string_view(request.queue));
        s.bind(Q::max_jobs, allowance.jobs);
        while (true) {
          auto row = s.step();
          if (!row) return fail_with(row.error());
          if (!*row) break;
          out.jobs.push_back(read_job(s));
        }
      }
      if (limits.rate) {
        // The oldest slots take this lease's time: the ring keeps the times of the queue's
        // latest rate_count leases (docs/workflows.md explains why that is exact).
        for (std::size_t i = 0; i < out.jobs.size(); ++i) {
          auto stamp = c.prepare(sql::stamp_rate_slot::text);
          if (!stamp) return fail_with(stamp.error());
          (*stamp)->bind(sql::stamp_rate_slot::queue, std::string_view(request.queue));
          (*stamp)->bind(sql::stamp_rate_slot::slot, free_slots[i]);
          (*stamp)->bind(sql::stamp_rate_slot::now, now);
          if (auto ok = run(**stamp); !ok) return fail_with(ok.error());
        }
      }
      if (allowance.binding && std::ssize(out.jobs) == allowance.jobs) {
        auto probe = c.prepare(sql::due_job_exists::text);
        if (!probe) return fail_with(probe.error());
        (*probe)->bind(sql::due_job_exists::queue, std::string_view(request.queue));
        (*probe)->bind(sql::due_job_exists::now, now);
        if (auto ok = (*probe)->step(); !ok) return fail_with(ok.error());
        if ((*probe)->int64(0) != 0) out.throttled = allowance.binding;
      }
      return out;
    });
    if (!result) return result;
    if (!result->limited) {
      // No limits (cleared meanwhile): an ordinary lease.
      auto jobs = lease(request);
      if (!jobs) return fail_with(jobs.error());
      result->jobs = std::move(*jobs);
      return result;
    }
    sort_in_handout_order(result->jobs);
    return result;
  }

  Result<QueueLimits> limits(std::string_view queue) override {
    return read<QueueLimits>([&](Connection& c) -> Result<QueueLimits> {
      auto read_limits = c.prepare(sql::queue_limits::text);
      if (!read_limits) return fail_with(read_limits.error());
      Statement& q = **read_limits;
      q.bind(sql::queue_limits::queue, queue);
      auto found = q.step();
      if (!found) return fail_with(found.error());
      QueueLimits limits;
      if (*found) {
        limits.running = q.optional_int64(1);
        if (auto count = q.optional_int64(2)) {
          limits.rate = RateLimit{*count, Duration(q.optional_int64(3).value_or(1))};
        }
      }
      return limits;
    });
  }

  Status set_limits(std::string_view queue, const QueueLimits& limits) override {
    auto done = write<bool>([&](Connection& c, std::int64_t) -> Result<bool> {
      using Q = sql::set_limits;
      auto set = c.prepare(Q::text);
      if (!set) return fail_with(set.error());
      Statement& s = **set;
      s.bind(Q::queue, queue);
      if (limits.running) {
        s.bind(Q::running_limit, *limits.running);
      } else {
        s.bind_null(Q::running_limit);
      }
      if (limits.rate) {
        s.bind(Q::rate_count, limits.rate->count);
        s.bind(Q::rate_window, static_cast<std::int64_t>(limits.rate->window.count()));
      } else {
        s.bind_null(Q::rate_count);
        s.bind_null(Q::rate_window);
      }
      if (auto ok = run(s); !ok) return fail_with(ok.error());
      if (!limits.rate) return true;
      std::vector<std::int64_t> times;
      auto read_times = c.prepare(sql::rate_slot_times::text);
      if (!read_times) return fail_with(read_times.error());
      (*read_times)->bind(sql::rate_slot_times::queue, queue);
      while (true) {
        auto row = (*read_times)->step();
        if (!row) return fail_with(row.error());
        if (!*row) break;
        times.push_back((*read_times)->int64(0));
      }
      auto remove = c.prepare(sql::delete_rate_slots::text);
      if (!remove) return fail_with(remove.error());
      (*remove)->bind(sql::delete_rate_slots::queue, queue);
      if (auto ok = run(**remove); !ok) return fail_with(ok.error());
      const auto slots = resized_rate_slots(std::move(times), limits.rate->count);
      for (std::size_t i = 0; i < slots.size(); ++i) {
        auto insert = c.prepare(sql::insert_rate_slot::text);
        if (!insert) return fail_with(insert.error());
        (*insert)->bind(sql::insert_rate_slot::queue, queue);
        (*insert)->bind(sql::insert_rate_slot::slot, static_cast<std::int64_t>(i));
        (*insert)->bind(sql::insert_rate_slot::leased_at, slots[i]);
        if (auto ok = run(**insert); !ok) return fail_with(ok.error());
      }
      return true;
    });
    if (!done) return fail_with(done.error());
    return {};
  }

  Status clear_limits(std::string_view queue) override {
    auto done = write<bool>([&](Connection& c, std::int64_t) -> Result<bool> {
      auto clear = c.prepare(sql::clear_limits::text);
      if (!clear) return fail_with(clear.error());
      (*clear)->bind(sql::clear_limits::queue, queue);
      if (auto ok = run(**clear); !ok) return fail_with(ok.error());
      auto remove = c.prepare(sql::delete_rate_slots::text);
      if (!remove) return fail_with(remove.error());
      (*remove)->bind(sql::delete_rate_slots::queue, queue);
      if (auto ok = run(**remove); !ok) return fail_with(ok.error());
      return true;
    });
    if (!done) return fail_with(done.error());
    return {};
  }

  Result<std::vector<bool>> complete(std::span<const LeasedRef> refs, bool delete_row) override {
    if (!delete_row) {
      return settle<sql::complete>(
          refs, [](Statement& s, std::int64_t now) { s.bind(sql::complete::now, now); });
    }
    // complete_delete leaves a job with dependents to tell; it is kept as succeeded.
    return write<std::vector<bool>>(
        [&](Connection& c, std::int64_t now) -> Result<std::vector<bool>> {
          std::vector<bool> accepted;
          accepted.reserve(refs.size());
          for (const LeasedRef& ref : refs) {
            auto deleted = settle_one<sql::complete_delete>(c, ref, [](Statement&) {});
            if (!deleted) return fail_with(deleted.error());
            if (!*deleted) {
              deleted = settle_one<sql::complete>(
                  c, ref, [&](Statement& s) { s.bind(sql::complete::now, now); });
              if (!deleted) return fail_with(deleted.error());
            }
            accepted.push_back(*deleted);
          }
          return accepted;
        });
  }

  Result<std::vector<FailResult>> fail(std::span<const FailItem> items) override {
    return write<std::vector<FailResult>>([&](Connection& c,
                                              std::int64_t now) -> Result<std::vector<FailResult>> {
      std::vector<FailResult> outcomes;
      for (const FailItem& item : items) {
        using Q = sql::fail;
        auto fail = c.prepare(Q::text);
        if (!fail) return fail_with(fail.error());
        Statement& s = **fail;
        s.bind(Q::id, item.ref.id);
        s.bind(Q::token, std::string_view(item.ref.token.hex()));
        s.bind(Q::now, now);
        s.bind(Q::error, std::string_view(item.error));
        if (item.retry_after) {
          s.bind(Q::retry_after, static_cast<std::int64_t>(item.retry_after->count()));
        } else {
          s.bind_null(Q::retry_after);
        }
        s.bind(Q::backoff_base, static_cast<std::int64_t>(item.backoff_base.count()));
        s.bind(Q::backoff_cap, static_cast<std::int64_t>(item.backoff_cap.count()));
        s.bind(Q::backoff_factor, item.backoff_factor);
        s.bind(Q::no_retry, item.no_retry ? 1 : 0);
        auto row = s.step();
        if (!row) return fail_with(row.error());
        if (!*row) {
          outcomes.emplace_back(std::nullopt);
          continue;
        }
        outcomes.emplace_back(s.text(0) == "dead" ? FailOutcome::kDead : FailOutcome::kRetrying);
        const std::int64_t attempt = s.int64(1);
        const std::optional<std::string> worker = s.optional_text(2);
        if (auto ok = run(s); !ok) return fail_with(ok.error());  // RETURNING's end
        using E = sql::record_error;
        auto record = c.prepare(E::text);
        if (!record) return fail_with(record.error());
        Statement& e = **record;
        e.bind(E::id, item.ref.id);
        e.bind(E::attempt, attempt);
        e.bind(E::now, now);
        if (worker) {
          e.bind(E::worker, std::string_view(*worker));
        } else {
          e.bind_null(E::worker);
        }
        e.bind(E::error, std::string_view(item.error));
        if (auto ok = run(e); !ok) return fail_with(ok.error());
      }
      return outcomes;
    });
  }

  Result<std::vector<bool>> extend(std::span<const LeasedRef> refs,
                                   Duration lease_duration) override {
    return settle<sql::extend>(refs, [&](Statement& s, std::int64_t now) {
      s.bind(sql::extend::now, now);
      s.bind(sql::extend::lease_duration, static_cast<std::int64_t>(lease_duration.count()));
    });
  }

  Result<std::vector<bool>> release(std::span<const LeasedRef> refs, Duration delay) override {
    return settle<sql::release>(refs, [&](Statement& s, std::int64_t now) {
      s.bind(sql::release::now, now);
      s.bind(sql::release::delay, static_cast<std::int64_t>(delay.count()));
    });
  }

  Result<bool> progress(const LeasedRef& ref, std::string_view json) override {
    auto held = settle<sql::set_progress>(
        std::span<const LeasedRef>(&ref, 1),
        [&](Statement& s, std::int64_t) { s.bind(sql::set_progress::progress, json); });
    if (!held) return fail_with(held.error());
    return held->front();
  }

  Result<std::int64_t> forget_closed_windows(int limit) override {
    return write<std::int64_t>([&](Connection& c, std::int64_t now) -> Result<std::int64_t> {
      using Q = sql::forget_closed_windows;
      auto forget = c.prepare(Q::text);
      if (!forget) return fail_with(forget.error());
      (*forget)->bind(Q::now, now);
      (*forget)->bind(Q::limit, limit);
      if (auto ok = run(**forget); !ok) return fail_with(ok.error());
      return c.changes();
    });
  }

  Result<bool> wait_for_work(std::string_view queue, Duration timeout) override;

  Result<std::int64_t> rescue_expired(std::string_view queue) override {
    return write<std::int64_t>([&](Connection& c, std::int64_t now) -> Result<std::int64_t> {
      // The history entries first, from the rows the rescue is about to move (one write
      // transaction: nothing moves them in between).
      using E = sql::record_rescued_errors;
      auto record = c.prepare(E::text);
      if (!record) return fail_with(record.error());
      (*record)->bind(E::queue, queue);
      (*record)->bind(E::now, now);
      if (auto ok = run(**record); !ok) return fail_with(ok.error());
      using Q = sql::rescue_expired;
      auto rescue = c.prepare(Q::text);
      if (!rescue) return fail_with(rescue.error());
      (*rescue)->bind(Q::queue, queue);
      (*rescue)->bind(Q::now, now);
      if (auto ok = run(**rescue); !ok) return fail_with(ok.error());
      return c.changes();
    });
  }

  Result<std::vector<JobId>> cancel(std::span<const JobId> ids) override {
    return change_each<sql::cancel>(ids);
  }

  Result<std::vector<JobId>> retry(std::span<const JobId> ids) override {
    return write<std::vector<JobId>>(
        [&](Connection& c, std::int64_t now) -> Result<std::vector<JobId>> {
          std::vector<JobId> changed;
          for (JobId id : ids) {
            // Before: whether the job is a member that has told its group of its finish (then
            // it joins again) or not yet (then the group still counts it).
            auto before = c.prepare(sql::job_group::text);
            if (!before) return fail_with(before.error());
            (*before)->bind(sql::job_group::id, id);
            auto found = (*before)->step();
            if (!found) return fail_with(found.error());
            if (!*found) continue;
            const bool told = (*before)->int64(0) == 0;
            const std::optional<std::string> group = (*before)->optional_text(1);
            auto retried = by_id<sql::retry>(c, id, now);
            if (!retried) return fail_with(retried.error());
            if (*retried == 0) continue;
            changed.push_back(id);
            if (group && told) {
              auto join = c.prepare(sql::join_group::text);
              if (!join) return fail_with(join.error());
              (*join)->bind(sql::join_group::name, std::string_view(*group));
              if (auto ok = run(**join); !ok) return fail_with(ok.error());
            }
            // A dependent waits again for what has not succeeded (or runs now).
            auto has = c.prepare(sql::has_dependencies::text);
            if (!has) return fail_with(has.error());
            (*has)->bind(sql::has_dependencies::id, id);
            if (auto row = (*has)->step(); !row) return fail_with(row.error());
            if ((*has)->int64(0) == 0) continue;
            for (auto ok : {by_id<sql::remeet_dependencies>(c, id, now),
                            by_id<sql::rewait>(c, id, now), by_id<sql::renotify>(c, id, now)}) {
              if (!ok) return fail_with(ok.error());
            }
          }
          return changed;
        });
  }

  Result<Dependencies> dependencies(JobId id) override {
    return read<Dependencies>([&](Connection& c) -> Result<Dependencies> {
      Dependencies found;
      auto edges = [&](const char* text, int id_index, int limit_index,
                       std::vector<Dependency>& into) -> Status {
        auto query = c.prepare(text);
        if (!query) return fail_with(query.error());
        (*query)->bind(id_index, id);
        if (limit_index > 0) (*query)->bind(limit_index, kMaxListedDependents);
        while (true) {
          auto row = (*query)->step();
          if (!row) return fail_with(row.error());
          if (!*row) return {};
          const JobId other = (*query)->int64(0);
          into.push_back(
              Dependency{other > 0 ? other : 0,
                         (*query)->is_null(1) ? std::nullopt : parse_job_state((*query)->text(1)),
                         (*query)->int64(2) != 0, (*query)->optional_text(3)});
        }
      };
      if (auto ok = edges(sql::dependencies_of::text, sql::dependencies_of::id, 0, found.after);
          !ok) {
        return fail_with(ok.error());
      }
      if (auto ok = edges(sql::dependents_of::text, sql::dependents_of::id,
                          sql::dependents_of::limit, found.dependents);
          !ok) {
        return fail_with(ok.error());
      }
      auto count = c.prepare(sql::dependent_count::text);
      if (!count) return fail_with(count.error());
      (*count)->bind(sql::dependent_count::id, id);
      if (auto row = (*count)->step(); !row) return fail_with(row.error());
      found.dependent_count = (*count)->int64(0);
      auto own = c.prepare(sql::job_group::text);
      if (!own) return fail_with(own.error());
      (*own)->bind(sql::job_group::id, id);
      auto row = (*own)->step();
      if (!row) return fail_with(row.error());
      if (*row) found.group = (*own)->optional_text(1);
      return found;
    });
  }

  Result<bool> has_untold() override {
    return read<bool>([](Connection& c) -> Result<bool> {
      auto query = c.prepare(sql::any_notified::text);
      if (!query) return fail_with(query.error());
      if (auto row = (*query)->step(); !row) return fail_with(row.error());
      return (*query)->int64(0) != 0;
    });
  }

  Result<std::int64_t> resolve_dependencies() override {
    return write<std::int64_t>([&](Connection& c, std::int64_t now) -> Result<std::int64_t> {
      struct Finished {
        JobId id;
        JobState state;
        std::optional<std::string> group;
      };
      std::vector<Finished> finished;
      {
        using Q = sql::notified_jobs;
        auto query = c.prepare(Q::text);
        if (!query) return fail_with(query.error());
        (*query)->bind(Q::limit, kResolveJobs);
        while (true) {
          auto row = (*query)->step();
          if (!row) return fail_with(row.error());
          if (!*row) break;
          finished.push_back({(*query)->int64(0),
                              parse_job_state((*query)->text(1)).value_or(JobState::kSucceeded),
                              (*query)->optional_text(2)});
        }
      }
      std::int64_t moved = 0;
      int budget = kResolveChunk;  // dependents told in this round, over all its jobs
      for (const Finished& job : finished) {
        if (budget == 0) break;
        auto told = tell_dependents(c, now, job.id, job.state, job.group, budget);
        if (!told) return fail_with(told.error());
        budget -= *told;
        moved += *told + 1;
      }
      // Groups whose last member finished: the jobs that waited for them are let go.
      std::vector<std::pair<JobId, JobId>> released;  // (group id, up to job)
      {
        using P = sql::pending_groups;
        auto query = c.prepare(P::text);
        if (!query) return fail_with(query.error());
        (*query)->bind(P::limit, kResolveJobs);
        while (true) {
          auto row = (*query)->step();
          if (!row) return fail_with(row.error());
          if (!*row) break;
          released.emplace_back((*query)->int64(0), (*query)->int64(1));
        }
      }
      for (const auto& [group_id, upto] : released) {
        if (budget == 0) break;
        auto met = meet_edges(c, now, -group_id, upto, budget);
        if (!met) return fail_with(met.error());
        budget -= met->first;
        moved += met->first + 1;
        if (met->second) {
          if (auto ok = by_id<sql::group_released>(c, group_id, now); !ok) {
            return fail_with(ok.error());
          }
        }
      }
      return moved;
    });
  }

  // Meets up to `budget` unmet edges of `depends_on` (a job that succeeded, or minus a
  // group whose members all finished) whose dependent's id is at most `upto`, counting each
  // dependent down; returns how many, and whether none is left.
  static Result<std::pair<int, bool>> meet_edges(Connection& c, std::int64_t now, JobId depends_on,
                                                 JobId upto, int budget) {
    using U = sql::unmet_dependents;
    auto select = c.prepare(U::text);
    if (!select) return fail_with(select.error());
    (*select)->bind(U::id, depends_on);
    (*select)->bind(U::upto, upto);
    (*select)->bind(U::limit, budget + 1);  // one more: whether any is left
    std::vector<JobId> dependents;
    while (true) {
      auto row = (*select)->step();
      if (!row) return fail_with(row.error());
      if (!*row) break;
      dependents.push_back((*select)->int64(0));
    }
    const bool all = dependents.size() <= static_cast<std::size_t>(budget);
    if (!all) dependents.resize(static_cast<std::size_t>(budget));
    for (JobId dependent : dependents) {
      using M = sql::meet_dependency;
      auto meet = c.prepare(M::text);
      if (!meet) return fail_with(meet.error());
      (*meet)->bind(M::depends_on, depends_on);
      (*meet)->bind(M::job_id, dependent);
      if (auto ok = run(**meet); !ok) return fail_with(ok.error());
      if (c.changes() == 0) continue;
      if (auto ok = by_id<sql::count_down>(c, dependent, now); !ok) return fail_with(ok.error());
    }
    return std::pair(static_cast<int>(dependents.size()), all);
  }

  // Tells up to `budget` dependents of the finished job `id`, inside the caller's
  // transaction; once none is left, clears its notify and tells its group of its finish (the
  // last member's lets the jobs waiting for the group go). Returns how many it told.
  static Result<int> tell_dependents(Connection& c, std::int64_t now, JobId id, JobState state,
                                     const std::optional<std::string>& group, int budget) {
    int told = 0;
    bool all = true;
    if (state == JobState::kSucceeded) {
      auto met = meet_edges(c, now, id, std::numeric_limits<JobId>::max(), budget);
      if (!met) return fail_with(met.error());
      told = met->first;
      all = met->second;
    } else {
      using W = sql::waiting_dependents;
      auto select = c.prepare(W::text);
      if (!select) return fail_with(select.error());
      (*select)->bind(W::id, id);
      (*select)->bind(W::limit, budget + 1);  // one more: whether any is left
      std::vector<JobId> dependents;
      while (true) {
        auto row = (*select)->step();
        if (!row) return fail_with(row.error());
        if (!*row) break;
        dependents.push_back((*select)->int64(0));
      }
      all = dependents.size() <= static_cast<std::size_t>(budget);
      if (!all) dependents.resize(static_cast<std::size_t>(budget));
      const std::string error = dependency_failed_error(id, state);
      for (JobId dependent : dependents) {
        using X = sql::cancel_dependent;
        auto cancel = c.prepare(X::text);
        if (!cancel) return fail_with(cancel.error());
        (*cancel)->bind(X::id, dependent);
        (*cancel)->bind(X::now, now);
        (*cancel)->bind(X::error, std::string_view(error));
        if (auto ok = run(**cancel); !ok) return fail_with(ok.error());
      }
      told = static_cast<int>(dependents.size());
    }
    if (!all) return told;
    if (auto ok = by_id<sql::told>(c, id, now); !ok) return fail_with(ok.error());
    if (group) {
      static_assert(sql::leave_group::name == sql::release_group::name);
      for (const char* text : {sql::leave_group::text, sql::release_group::text}) {
        auto statement = c.prepare(text);
        if (!statement) return fail_with(statement.error());
        (*statement)->bind(sql::leave_group::name, std::string_view(*group));
        if (auto ok = run(**statement); !ok) return fail_with(ok.error());
      }
    }
    return told;
  }

  Result<std::optional<GroupStats>> group_stats(std::string_view group) override {
    return read<std::optional<GroupStats>>([&](Connection& c) -> Result<std::optional<GroupStats>> {
      auto row = c.prepare(sql::group_row::text);
      if (!row) return fail_with(row.error());
      (*row)->bind(sql::group_row::name, group);
      auto found = (*row)->step();
      if (!found) return fail_with(found.error());
      if (!*found) return std::optional<GroupStats>{};
      GroupStats stats{.name = std::string(group)};
      stats.live = (*row)->int64(0);
      stats.waiters = (*row)->int64(1);
      auto counts = c.prepare(sql::group_counts::text);
      if (!counts) return fail_with(counts.error());
      (*counts)->bind(sql::group_counts::name, group);
      while (true) {
        auto next = (*counts)->step();
        if (!next) return fail_with(next.error());
        if (!*next) break;
        add_group_count(stats, (*counts)->text(0), (*counts)->int64(1));
      }
      return std::optional<GroupStats>(std::move(stats));
    });
  }

  Result<std::vector<Job>> list_group(std::string_view group, JobId after_id, int limit) override {
    return read<std::vector<Job>>([&](Connection& c) -> Result<std::vector<Job>> {
      using Q = sql::list_group;
      auto query = c.prepare(Q::text);
      if (!query) return fail_with(query.error());
      (*query)->bind(Q::name, group);
      (*query)->bind(Q::after_id, after_id);
      (*query)->bind(Q::limit, limit);
      std::vector<Job> jobs;
      while (true) {
        auto row = (*query)->step();
        if (!row) return fail_with(row.error());
        if (!*row) return jobs;
        jobs.push_back(read_job(**query));
      }
    });
  }

  Result<std::int64_t> retry_all(std::string_view queue, JobState state) override {
    // In batches of ids, each its own short transaction, job by job: a job whose unique
    // key is held by a live job (perhaps one retried a moment ago) stays where it is.
    constexpr int kRetryBatch = 1000;
    std::int64_t total = 0;
    JobId after = 0;
    while (true) {
      auto ids = read<std::vector<JobId>>([&](Connection& c) -> Result<std::vector<JobId>> {
        using Q = sql::retry_candidates;
        auto select = c.prepare(Q::text);
        if (!select) return fail_with(select.error());
        Statement& s = **select;
        s.bind(Q::queue, queue);
        s.bind(Q::state, to_string(state));
        s.bind(Q::after_id, after);
        s.bind(Q::limit, kRetryBatch);
        std::vector<JobId> found;
        while (true) {
          auto row = s.step();
          if (!row) return fail_with(row.error());
          if (!*row) return found;
          found.push_back(s.int64(0));
        }
      });
      if (!ids) return fail_with(ids.error());
      if (ids->empty()) return total;
      auto retried = retry(*ids);
      if (!retried) return fail_with(retried.error());
      total += static_cast<std::int64_t>(retried->size());
      after = ids->back();
      if (ids->size() < static_cast<std::size_t>(kRetryBatch)) return total;
    }
  }

  Result<std::int64_t> purge(const PurgeRequest& request) override {
    // Without a limit, delete in batches of kPurgeBatch, each its own short transaction,
    // so that a purge of millions of rows never holds the write lock for long.
    constexpr int kPurgeBatch = 5000;
    std::int64_t total = 0;
    std::int64_t budget = request.limit.value_or(std::numeric_limits<int>::max());
    // The cutoff is fixed once, so that a long purge does not chase rows finishing now.
    const std::int64_t cutoff =
        now_micros() - request.older_than.value_or(Duration::zero()).count();
    while (budget > 0) {
      const int batch = static_cast<int>(std::min<std::int64_t>(budget, kPurgeBatch));
      auto deleted = write<std::int64_t>([&](Connection& c, std::int64_t) -> Result<std::int64_t> {
        using Q = sql::purge;
        auto purge = c.prepare(Q::text);
        if (!purge) return fail_with(purge.error());
        (*purge)->bind(Q::queue, std::string_view(request.queue));
        (*purge)->bind(Q::state, to_string(request.state));
        (*purge)->bind(Q::finished_before, cutoff);
        (*purge)->bind(Q::limit, batch);
        if (auto ok = run(**purge); !ok) return fail_with(ok.error());
        return c.changes();
      });
      if (!deleted) return fail_with(deleted.error());
      total += *deleted;
      budget -= *deleted;
      if (*deleted < batch) break;
    }
    return total;
  }

  Result<std::vector<QueueStats>> stats(std::optional<std::string_view> queue) override {
    return read<std::vector<QueueStats>>([&](Connection& c) -> Result<std::vector<QueueStats>> {
      static_assert(sql::stats_all::now == sql::stats_queue::now);
      auto query = c.prepare(queue ? sql::stats_queue::text : sql::stats_all::text);
      if (!query) return fail_with(query.error());
      Statement& s = **query;
      const std::int64_t now = now_micros();
      s.bind(sql::stats_all::now, now);
      if (queue) s.bind(sql::stats_queue::queue, *queue);
      std::vector<QueueStats> result;
      while (true) {
        auto row = s.step();
        if (!row) return fail_with(row.error());
        if (!*row) break;
        std::string name = s.text(0);
        if (result.empty() || result.back().queue != name) result.push_back({.queue = name});
        QueueStats& q = result.back();
        if (s.text(1) == "paused") {
          q.paused = true;
          continue;
        }
        if (s.text(1) == "limits") {
          set_limits_row(q, s.optional_int64(2), s.optional_int64(3), s.optional_int64(4));
          continue;
        }
        const JobState state = parse_job_state(s.text(1)).value_or(JobState::kAvailable);
        set_state_counts(q, state, s.int64(2), s.int64(3));
        if (state == JobState::kAvailable) {
          if (auto oldest = s.optional_int64(4)) q.oldest_available_age = Duration(now - *oldest);
        }
      }
      return result;
    });
  }

  Result<std::vector<Job>> list(const ListRequest& request) override {
    if (request.queue && request.state) {
      if (*request.state == JobState::kRunning) {
        return list_in_order<sql::list_queue_running, sql::list_queue_running_desc>(request);
      }
      return list_in_order<sql::list_queue_state, sql::list_queue_state_desc>(request);
    }
    if (request.queue) return list_in_order<sql::list_queue, sql::list_queue_desc>(request);
    if (request.state) return list_in_order<sql::list_state, sql::list_state_desc>(request);
    return list_in_order<sql::list_all, sql::list_all_desc>(request);
  }

  template <class Asc, class Desc>
  Result<std::vector<Job>> list_in_order(const ListRequest& request) {
    if (request.order == ListOrder::kNewestFirst) return list_with<Desc>(request);
    return list_with<Asc>(request);
  }

  // One of the list statements: each takes the bounds, the views, the search and :limit, and
  // :queue and :state when it filters by them.
  template <class Q>
  Result<std::vector<Job>> list_with(const ListRequest& request) {
    return read<std::vector<Job>>([&](Connection& c) -> Result<std::vector<Job>> {
      auto query = c.prepare(Q::text);
      if (!query) return fail_with(query.error());
      Statement& s = **query;
      s.bind(Q::after_id, request.after_id.value_or(0));
      s.bind(Q::before_id, request.before_id.value_or(std::numeric_limits<std::int64_t>::max()));
      s.bind(Q::limit, request.limit);
      s.bind(Q::now, now_micros());
      s.bind(Q::scheduled, request.view == ListView::kScheduled ? 1 : 0);
      s.bind(Q::retrying, request.view == ListView::kRetrying ? 1 : 0);
      s.bind(Q::expired, request.view == ListView::kExpired ? 1 : 0);
      if (request.search) {
        s.bind(Q::search, std::string_view(*request.search));
      } else {
        s.bind_null(Q::search);
      }
      if constexpr (requires { Q::queue; }) s.bind(Q::queue, std::string_view(*request.queue));
      if constexpr (requires { Q::state; }) s.bind(Q::state, to_string(*request.state));
      std::vector<Job> jobs;
      while (true) {
        auto row = s.step();
        if (!row) return fail_with(row.error());
        if (!*row) break;
        jobs.push_back(read_job(s));
      }
      return jobs;
    });
  }

  Result<std::optional<std::pair<JobId, JobId>>> id_bounds() override {
    using Bounds = std::optional<std::pair<JobId, JobId>>;
    return read<Bounds>([&](Connection& c) -> Result<Bounds> {
      auto query = c.prepare(sql::id_bounds::text);
      if (!query) return fail_with(query.error());
      Statement& s = **query;
      auto row = s.step();
      if (!row) return fail_with(row.error());
      if (!*row) return Bounds{};
      auto low = s.optional_int64(0);
      auto high = s.optional_int64(1);
      if (!low || !high) return Bounds{};
      return Bounds{std::pair<JobId, JobId>(*low, *high)};
    });
  }

  Result<std::vector<JobId>> remove(std::span<const JobId> ids) override {
    return change_each<sql::delete_finished>(ids);
  }

  Result<std::vector<FinishedCounts>> finished_since(
      TimePoint since, std::optional<std::string_view> queue) override {
    return read<std::vector<FinishedCounts>>(
        [&](Connection& c) -> Result<std::vector<FinishedCounts>> {
          using Q = sql::finished_since;
          auto query = c.prepare(Q::text);
          if (!query) return fail_with(query.error());
          Statement& s = **query;
          s.bind(Q::since, to_micros(since));
          if (queue) {
            s.bind(Q::queue, *queue);
          } else {
            s.bind_null(Q::queue);
          }
          std::vector<FinishedCounts> counts;
          while (true) {
            auto row = s.step();
            if (!row) return fail_with(row.error());
            if (!*row) return counts;
            counts.push_back({s.text(0), s.int64(1), s.int64(2)});
          }
        });
  }

  Status set_paused(std::string_view queue, bool paused) override {
    auto done = write<bool>([&](Connection& c, std::int64_t now) -> Result<bool> {
      static_assert(sql::pause::queue == sql::resume::queue);
      auto statement = c.prepare(paused ? sql::pause::text : sql::resume::text);
      if (!statement) return fail_with(statement.error());
      (*statement)->bind(sql::pause::queue, queue);
      if (paused) (*statement)->bind(sql::pause::now, now);
      if (auto ok = run(**statement); !ok) return fail_with(ok.error());
      return true;
    });
    if (!done) return fail_with(done.error());
    return {};
  }

  Result<bool> upsert_schedule(const Schedule& schedule) override {
    return write<bool>([&](Connection& c, std::int64_t now) -> Result<bool> {
      auto find = c.prepare(sql::find_schedule::text);
      if (!find) return fail_with(find.error());
      (*find)->bind(sql::find_schedule::name, std::string_view(schedule.name));
      auto existed = (*find)->step();
      if (!existed) return fail_with(existed.error());
      const bool created = !*existed;
      find->reset();
      using Q = sql::upsert_schedule;
      auto upsert = c.prepare(Q::text);
      if (!upsert) return fail_with(upsert.error());
      Statement& s = **upsert;
      s.bind(Q::name, std::string_view(schedule.name));
      s.bind(Q::queue, std::string_view(schedule.queue));
      s.bind(Q::spec, std::string_view(schedule.spec));
      s.bind_blob(Q::payload, schedule.payload);
      s.bind(Q::priority, schedule.priority);
      s.bind(Q::max_attempts, schedule.max_attempts);
      s.bind(Q::now, now);
      if (auto ok = run(s); !ok) return fail_with(ok.error());
      return created;
    });
  }

  Result<std::vector<Schedule>> list_schedules() override {
    return read<std::vector<Schedule>>([&](Connection& c) -> Result<std::vector<Schedule>> {
      auto query = c.prepare(sql::list_schedules::text);
      if (!query) return fail_with(query.error());
      Statement& s = **query;
      std::vector<Schedule> schedules;
      while (true) {
        auto row = s.step();
        if (!row) return fail_with(row.error());
        if (!*row) return schedules;
        Schedule schedule;
        schedule.name = s.text(0);
        schedule.queue = s.text(1);
        schedule.spec = s.text(2);
        schedule.payload = s.blob(3);
        schedule.priority = static_cast<int>(s.int64(4));
        schedule.max_attempts = static_cast<int>(s.int64(5));
        schedule.created_at = to_time(s.int64(6));
        schedule.last_tick = to_time(s.optional_int64(7));
        schedule.last_job = s.optional_int64(8);
        schedules.push_back(std::move(schedule));
      }
    });
  }

  Result<bool> delete_schedule(std::string_view name) override {
    return write<bool>([&](Connection& c, std::int64_t) -> Result<bool> {
      auto statement = c.prepare(sql::delete_schedule::text);
      if (!statement) return fail_with(statement.error());
      (*statement)->bind(sql::delete_schedule::name, name);
      if (auto ok = run(**statement); !ok) return fail_with(ok.error());
      return c.changes() == 1;
    });
  }

  Result<std::optional<JobId>> enqueue_tick(std::string_view name, TimePoint tick) override {
    return write<std::optional<JobId>>(
        [&](Connection& c, std::int64_t now) -> Result<std::optional<JobId>> {
          // Taking the tick and inserting its job commit together or not at all.
          auto take = c.prepare(sql::take_tick::text);
          if (!take) return fail_with(take.error());
          (*take)->bind(sql::take_tick::name, name);
          (*take)->bind(sql::take_tick::tick, to_micros(tick));
          auto taken = (*take)->step();
          if (!taken) return fail_with(taken.error());
          if (!*taken) return std::optional<JobId>{};
          NewJob job;
          job.queue = (*take)->text(0);
          job.payload = (*take)->blob(1);
          job.priority = static_cast<int>((*take)->int64(2));
          job.max_attempts = static_cast<int>((*take)->int64(3));
          job.run_at = tick;
          job.unique_key = schedule_job_key(name, tick);
          take->reset();  // RETURNING must run to completion before the next statement
          auto inserted = insert_jobs(c, now, std::span<const NewJob>(&job, 1));
          if (!inserted) return fail_with(inserted.error());
          if (!inserted->front().inserted) return std::optional<JobId>{};
          const JobId id = inserted->front().id;
          auto record = c.prepare(sql::record_tick_job::text);
          if (!record) return fail_with(record.error());
          (*record)->bind(sql::record_tick_job::job_id, id);
          (*record)->bind(sql::record_tick_job::name, name);
          if (auto ok = run(**record); !ok) return fail_with(ok.error());
          return std::optional<JobId>(id);
        });
  }

  Result<std::optional<JobId>> enqueue_schedule_now(std::string_view name) override {
    return write<std::optional<JobId>>(
        [&](Connection& c, std::int64_t now) -> Result<std::optional<JobId>> {
          auto find = c.prepare(sql::schedule_job::text);
          if (!find) return fail_with(find.error());
          (*find)->bind(sql::schedule_job::name, name);
          auto found = (*find)->step();
          if (!found) return fail_with(found.error());
          if (!*found) return std::optional<JobId>{};
          NewJob job;
          job.queue = (*find)->text(0);
          job.payload = (*find)->blob(1);
          job.priority = static_cast<int>((*find)->int64(2));
          job.max_attempts = static_cast<int>((*find)->int64(3));
          find->reset();
          auto inserted = insert_jobs(c, now, std::span<const NewJob>(&job, 1));
          if (!inserted) return fail_with(inserted.error());
          return std::optional<JobId>(inserted->front().id);
        });
  }

  Result<bool> claim_task(std::string_view task, Duration interval, std::string_view by) override {
    return write<bool>([&](Connection& c, std::int64_t now) -> Result<bool> {
      using Q = sql::claim_task;
      auto claim = c.prepare(Q::text);
      if (!claim) return fail_with(claim.error());
      (*claim)->bind(Q::task, task);
      (*claim)->bind(Q::now, now);
      (*claim)->bind(Q::interval, static_cast<std::int64_t>(interval.count()));
      (*claim)->bind(Q::claimed_by, by);
      if (auto ok = run(**claim); !ok) return fail_with(ok.error());
      return c.changes() == 1;
    });
  }

  Result<TimePoint> now() override { return to_time(now_micros()); }

  Status add_metrics(std::span<const MetricSample> rows) override {
    return write_status([&](Connection& c, std::int64_t) -> Status {
      using Q = sql::add_metric;
      for (const MetricSample& row : rows) {
        auto statement = c.prepare(Q::text);
        if (!statement) return fail_with(statement.error());
        Statement& s = **statement;
        s.bind(Q::name, std::string_view(row.name));
        s.bind(Q::queue, std::string_view(row.queue));
        s.bind(Q::label, std::string_view(row.label));
        s.bind(Q::label_value, std::string_view(row.label_value));
        s.bind(Q::value, row.value);
        if (auto ok = run(s); !ok) return fail_with(ok.error());
      }
      return {};
    });
  }

  // The database and its write-ahead log: a reader held open keeps the log from being
  // checkpointed and restarted, so "wal" is what grows while one is (docs/sqlite.md). SQLite's
  // readers do not say who they are: no holder.
  Result<StorageHealth> storage_health() override {
    auto database = read<std::int64_t>([&](Connection& c) -> Result<std::int64_t> {
      auto query = c.prepare(sql::database_bytes::text);
      if (!query) return fail_with(query.error());
      auto row = (*query)->step();
      if (!row) return fail_with(row.error());
      return *row ? (*query)->int64(0) : 0;
    });
    if (!database) return fail_with(database.error());
    std::error_code error;
    const auto wal = std::filesystem::file_size(settings_.path + "-wal", error);
    StorageHealth health;
    health.sizes.push_back({.relation = "database", .bytes = *database});
    // No log file: none yet, or the last connection removed it when it closed.
    health.sizes.push_back(
        {.relation = "wal", .bytes = error ? 0 : static_cast<std::int64_t>(wal)});
    return health;
  }

  Result<std::vector<MetricSample>> metrics() override {
    return read<std::vector<MetricSample>>([&](Connection& c) -> Result<std::vector<MetricSample>> {
      auto query = c.prepare(sql::read_metrics::text);
      if (!query) return fail_with(query.error());
      Statement& s = **query;
      std::vector<MetricSample> rows;
      while (true) {
        auto row = s.step();
        if (!row) return fail_with(row.error());
        if (!*row) return rows;
        rows.push_back(MetricSample{s.text(0), s.text(1), s.text(2), s.text(3), s.int64(4)});
      }
    });
  }

  Status upsert_worker(const WorkerProcess& worker, Duration forget_after) override {
    return write_status([&](Connection& c, std::int64_t now) -> Status {
      using Q = sql::upsert_worker;
      auto upsert = c.prepare(Q::text);
      if (!upsert) return fail_with(upsert.error());
      Statement& s = **upsert;
      const std::string queues = join_queue_names(worker.queues);
      s.bind(Q::name, std::string_view(worker.name));
      s.bind(Q::host, std::string_view(worker.host));
      s.bind(Q::pid, worker.pid);
      s.bind(Q::queues, std::string_view(queues));
      s.bind(Q::threads, worker.threads);
      s.bind(Q::now, now);
      if (auto ok = run(s); !ok) return fail_with(ok.error());
      auto forget = c.prepare(sql::forget_stale_workers::text);
      if (!forget) return fail_with(forget.error());
      (*forget)->bind(sql::forget_stale_workers::before,
                      now - static_cast<std::int64_t>(forget_after.count()));
      if (auto ok = run(**forget); !ok) return fail_with(ok.error());
      return {};
    });
  }

  Status delete_worker(std::string_view name) override {
    return write_status([&](Connection& c, std::int64_t) -> Status {
      auto statement = c.prepare(sql::delete_worker::text);
      if (!statement) return fail_with(statement.error());
      (*statement)->bind(sql::delete_worker::name, name);
      if (auto ok = run(**statement); !ok) return fail_with(ok.error());
      return {};
    });
  }

  Result<std::vector<WorkerProcess>> list_workers() override {
    return read<std::vector<WorkerProcess>>(
        [&](Connection& c) -> Result<std::vector<WorkerProcess>> {
          auto query = c.prepare(sql::list_workers::text);
          if (!query) return fail_with(query.error());
          Statement& s = **query;
          std::vector<WorkerProcess> workers;
          while (true) {
            auto row = s.step();
            if (!row) return fail_with(row.error());
            if (!*row) return workers;
            WorkerProcess worker;
            worker.name = s.text(0);
            worker.host = s.text(1);
            worker.pid = s.int64(2);
            worker.queues = split_queue_names(s.text(3));
            worker.threads = static_cast<int>(s.int64(4));
            worker.started_at = to_time(s.int64(5));
            worker.heartbeat_at = to_time(s.int64(6));
            workers.push_back(std::move(worker));
          }
        });
  }

  Result<std::vector<bool>> held(std::span<const LeasedRef> refs) override {
    return read<std::vector<bool>>([&](Connection& c) -> Result<std::vector<bool>> {
      std::vector<bool> held;
      held.reserve(refs.size());
      for (const LeasedRef& ref : refs) {
        auto query = c.prepare(sql::held::text);
        if (!query) return fail_with(query.error());
        (*query)->bind(sql::held::id, ref.id);
        (*query)->bind(sql::held::token, std::string_view(ref.token.hex()));
        auto row = (*query)->step();
        if (!row) return fail_with(row.error());
        held.push_back(*row);
      }
      return held;
    });
  }

  Result<std::optional<Job>> get(JobId id) override {
    return read<std::optional<Job>>([&](Connection& c) -> Result<std::optional<Job>> {
      auto query = c.prepare(sql::get::text);
      if (!query) return fail_with(query.error());
      (*query)->bind(sql::get::id, id);
      auto row = (*query)->step();
      if (!row) return fail_with(row.error());
      if (!*row) return std::optional<Job>{};
      Job job = read_job(**query);
      job.progress = (*query)->optional_text(16);
      if (auto ok = run(**query); !ok) return fail_with(ok.error());
      using E = sql::job_errors;
      auto errors = c.prepare(E::text);
      if (!errors) return fail_with(errors.error());
      Statement& e = **errors;
      e.bind(E::id, id);
      while (true) {
        auto next = e.step();
        if (!next) return fail_with(next.error());
        if (!*next) break;
        job.errors.push_back(JobError{static_cast<int>(e.int64(0)), to_time(e.int64(1)),
                                      e.optional_text(2), e.text(3)});
      }
      return std::optional<Job>(std::move(job));
    });
  }

 private:
  // A connection lent from the pool; returned to it on destruction.
  class Pooled {
   public:
    Pooled(SqliteEngine& engine, std::unique_ptr<Connection> connection)
        : engine_(&engine), connection_(std::move(connection)) {}
    Pooled(Pooled&&) noexcept = default;
    Pooled& operator=(Pooled&&) = delete;
    ~Pooled() {
      if (connection_) engine_->give_back(std::move(connection_));
    }
    Connection* get() const { return connection_.get(); }

   private:
    SqliteEngine* engine_;
    std::unique_ptr<Connection> connection_;
  };

  Result<Pooled> acquire() {
    {
      std::lock_guard lock(mu_);
      if (!idle_.empty()) {
        auto connection = std::move(idle_.back());
        idle_.pop_back();
        return Pooled(*this, std::move(connection));
      }
    }
    auto connection = Connection::open(settings_);
    if (!connection) return fail_with(connection.error());
    return Pooled(*this, std::move(*connection));
  }

  void give_back(std::unique_ptr<Connection> connection) {
    std::lock_guard lock(mu_);
    idle_.push_back(std::move(connection));
  }

  // The connection every write transaction of this process runs on; the caller holds
  // write_mu_. Why one and not any of the pool's: in WAL mode a connection drops its whole
  // page cache when another connection has committed since its last transaction, so writes
  // spread over the pool re-read every page they touch, each looked up in the WAL index
  // first. While a long reader keeps checkpoints from catching up, that index grows with
  // every commit and so does each lookup (docs/sqlite.md). A connection's own commits
  // leave its cache valid: with one writer, only another process's commits empty it.
  Result<Connection*> writer_connection() {
    if (!writer_) {
      auto connection = Connection::open(settings_);
      if (!connection) return fail_with(connection.error());
      writer_ = std::move(*connection);
    }
    return writer_.get();
  }

  // Runs body(connection, now) inside BEGIN IMMEDIATE and commits when it succeeds. `now`
  // is read after the write lock is held, so no other writer can commit in between with
  // a later clock reading.
  template <class T, class Body>
  Result<T> write(Body&& body) {
    // One writer per process at a time: the threads of a process queue fairly on this
    // mutex instead of all polling SQLite's file lock against the other processes.
    std::lock_guard writer(write_mu_);
    auto connection = writer_connection();
    if (!connection) return fail_with(connection.error());
    auto transaction = ImmediateTransaction::begin(**connection);
    if (!transaction) return fail_with(transaction.error());
    Result<T> result = body(**connection, now_micros());
    if (!result) return result;  // the transaction rolls back
    if (auto ok = transaction->commit(); !ok) return fail_with(ok.error());
    return result;
  }

  // Runs body(connection) outside any explicit transaction: one statement reads one
  // consistent snapshot.
  // write() for a body that only succeeds or fails (a Status).
  template <class Body>
  Status write_status(Body&& body) {
    auto done = write<bool>([&](Connection& c, std::int64_t now) -> Result<bool> {
      if (Status ok = body(c, now); !ok) return fail_with(ok.error());
      return true;
    });
    if (!done) return fail_with(done.error());
    return {};
  }

  template <class T, class Body>
  Result<T> read(Body&& body) {
    auto connection = acquire();
    if (!connection) return fail_with(connection.error());
    return body(*connection->get());
  }

  // One fenced statement Q (:id, :token, and what bind_rest binds) per ref, all in one
  // transaction.
  template <class Q, class BindRest>
  Result<std::vector<bool>> settle(std::span<const LeasedRef> refs, BindRest&& bind_rest) {
    return write<std::vector<bool>>(
        [&](Connection& c, std::int64_t now) -> Result<std::vector<bool>> {
          std::vector<bool> accepted;
          accepted.reserve(refs.size());
          for (const LeasedRef& ref : refs) {
            auto statement = c.prepare(Q::text);
            if (!statement) return fail_with(statement.error());
            Statement& s = **statement;
            s.bind(Q::id, ref.id);
            s.bind(Q::token, std::string_view(ref.token.hex()));
            bind_rest(s, now);
            if (auto ok = run(s); !ok) return fail_with(ok.error());
            accepted.push_back(c.changes() == 1);
          }
          return accepted;
        });
  }

  // Statement Q on one job (:id, and :now when Q has it) inside the caller's transaction;
  // returns how many rows it changed.
  template <class Q>
  static Result<int> by_id(Connection& c, JobId id, std::int64_t now) {
    auto statement = c.prepare(Q::text);
    if (!statement) return fail_with(statement.error());
    (*statement)->bind(Q::id, id);
    if constexpr (requires { Q::now; }) (*statement)->bind(Q::now, now);
    if (auto ok = run(**statement); !ok) return fail_with(ok.error());
    return c.changes();
  }

  // One fenced statement Q on `ref` inside the caller's transaction: true when it changed
  // the job.
  template <class Q, class BindRest>
  static Result<bool> settle_one(Connection& c, const LeasedRef& ref, BindRest&& bind_rest) {
    auto statement = c.prepare(Q::text);
    if (!statement) return fail_with(statement.error());
    Statement& s = **statement;
    s.bind(Q::id, ref.id);
    s.bind(Q::token, std::string_view(ref.token.hex()));
    bind_rest(s);
    if (auto ok = run(s); !ok) return fail_with(ok.error());
    return c.changes() == 1;
  }

  // One statement Q (:id, :now) per id in one transaction; returns the ids it changed.
  template <class Q>
  Result<std::vector<JobId>> change_each(std::span<const JobId> ids) {
    return write<std::vector<JobId>>(
        [&](Connection& c, std::int64_t now) -> Result<std::vector<JobId>> {
          std::vector<JobId> changed;
          for (JobId id : ids) {
            auto statement = c.prepare(Q::text);
            if (!statement) return fail_with(statement.error());
            (*statement)->bind(Q::id, id);
            if constexpr (requires { Q::now; }) (*statement)->bind(Q::now, now);
            if (auto ok = run(**statement); !ok) return fail_with(ok.error());
            if (c.changes() == 1) changed.push_back(id);
          }
          return changed;
        });
  }

  // Constant after construction.
  const Connection::Settings settings_;

  std::mutex mu_;
  std::vector<std::unique_ptr<Connection>> idle_;  // guarded by mu_
  // Held for the whole of every write transaction; never taken while holding mu_.
  std::mutex write_mu_;
  std::unique_ptr<Connection> writer_;  // guarded by write_mu_; opened by the first write
};

Result<bool> SqliteEngine::wait_for_work(std::string_view queue, Duration timeout) {
  // SQLite cannot notify another process. Instead, poll `PRAGMA data_version` on one
  // connection — it changes when any other connection commits, and costs a read of shared
  // memory — and look for a due job only then (or when it is time anyway). Poll every
  // millisecond while commits keep coming, as they do while jobs arrive (the next job's
  // start waits for the poll), and every 5 ms once the database has been quiet for a
  // while. The call itself counts as activity: its caller has just leased, or found
  // nothing to lease. A worker idle for long (1 s waits) reads ~280 times a second.
  constexpr auto kBusyPollInterval = std::chrono::milliseconds(1);
  constexpr auto kQuietPollInterval = std::chrono::milliseconds(5);
  constexpr auto kQuietAfter = std::chrono::milliseconds(100);
  constexpr auto kRecheckInterval = std::chrono::milliseconds(250);  // for scheduled jobs
  auto connection = acquire();
  if (!connection) return fail_with(connection.error());
  Connection& c = *connection->get();
  auto read_data_version = [&]() -> Result<std::int64_t> {
    auto pragma = c.prepare(sql::data_version::text);
    if (!pragma) return fail_with(pragma.error());
    if (auto ok = (*pragma)->step(); !ok) return fail_with(ok.error());
    return (*pragma)->int64(0);
  };
  auto has_due_job = [&]() -> Result<bool> {
    auto query = c.prepare(sql::has_due_job::text);
    if (!query) return fail_with(query.error());
    (*query)->bind(sql::has_due_job::queue, queue);
    (*query)->bind(sql::has_due_job::now, now_micros());
    if (auto ok = (*query)->step(); !ok) return fail_with(ok.error());
    return (*query)->int64(0) != 0;
  };

  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto version = read_data_version();
  if (!version) return fail_with(version.error());
  auto next_recheck = std::chrono::steady_clock::now();
  auto last_change = next_recheck;
  while (true) {
    auto now = std::chrono::steady_clock::now();
    if (now >= next_recheck) {
      auto due = has_due_job();
      if (!due) return fail_with(due.error());
      if (*due) return true;
      next_recheck = now + kRecheckInterval;
    }
    if (now >= deadline) return false;
    const auto interval = now - last_change < kQuietAfter ? kBusyPollInterval : kQuietPollInterval;
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(interval, deadline - now));
    auto current = read_data_version();
    if (!current) return fail_with(current.error());
    if (*current != *version) {
      *version = *current;
      last_change = std::chrono::steady_clock::now();
      next_recheck = last_change;  // something committed: look now
    }
  }
}

// PRAGMA cache_size takes KiB as an int: 1 TiB would overflow it.
constexpr int kMaxCacheMib = 1024 * 1024;

Result<int> parse_int_param(const DatabaseUrl& url, std::string_view key, int fallback) {
  auto it = url.params.find(key);
  if (it == url.params.end()) return fallback;
  int value = 0;
  auto [end, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), value);
  if (ec != std::errc() || end != it->second.data() + it->second.size() || value < 0) {
    return fail_with(Error::invalid_argument("bad URL '" + url.redacted + "': " + std::string(key) +
                                             " must be a whole number"));
  }
  return value;
}

}  // namespace

Result<std::unique_ptr<Engine>> open_sqlite_engine(const DatabaseUrl& url,
                                                   const QueueOptions& options) {
  Connection::Settings settings;
  settings.path = url.location;
  settings.create = options.init_schema;
  settings.read_only = options.read_only;
  auto busy = parse_int_param(url, "busy_timeout", 10000);
  if (!busy) return fail_with(busy.error());
  settings.busy_timeout_ms = *busy;
  auto cache = parse_int_param(url, "cache_mib", Connection::kDefaultCacheMib);
  if (!cache) return fail_with(cache.error());
  if (*cache < 1 || *cache > kMaxCacheMib) {
    return fail_with(Error::invalid_argument("bad URL '" + url.redacted +
                                             "': cache_mib must be from 1 to " +
                                             std::to_string(kMaxCacheMib)));
  }
  settings.cache_mib = *cache;
  auto page_size = parse_int_param(url, "page_size", Connection::kDefaultPageSize);
  if (!page_size) return fail_with(page_size.error());
  if (*page_size < 512 || *page_size > 65536 || (*page_size & (*page_size - 1)) != 0) {
    return fail_with(Error::invalid_argument(
        "bad URL '" + url.redacted +
        "': page_size must be a power of two from 512 to 65536 (it applies to a new database)"));
  }
  settings.page_size = *page_size;
  // FULL by default: in WAL mode it syncs the log on every commit, so an acknowledged
  // enqueue or completion survives a power loss. NORMAL may lose the last transactions
  // (never corrupt the file); see docs/sqlite.md.
  if (auto it = url.params.find("synchronous"); it != url.params.end()) {
    std::string level = it->second;
    std::transform(level.begin(), level.end(), level.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::toupper(ch)); });
    if (level != "FULL" && level != "NORMAL" && level != "EXTRA" && level != "OFF") {
      return fail_with(Error::invalid_argument(
          "bad URL '" + url.redacted + "': synchronous must be full, normal, extra or off"));
    }
    settings.synchronous = level;
  }
  return std::make_unique<SqliteEngine>(std::move(settings));
}

const EngineEntry& sqlite_engine_entry() {
  static constexpr EngineEntry kSqlite{"sqlite", open_sqlite_engine};
  return kSqlite;
}

}  // namespace readpast::detail
