#include "engines/postgres/pg_jobs.hpp"

#include <algorithm>
#include <map>
#include <numeric>

namespace readpast::detail::pg {
namespace {

// Rounds of the enqueue statement before giving up on a unique key whose holders keep
// finishing and reappearing between our statements: in practice one round, rarely two.
constexpr int kMaxEnqueueRounds = 16;

// The jobs `which` as the parallel arrays of the statement S (enqueue or enqueue_many):
// queues, payloads, priorities, run_ats, delays_us, max_attempts and, when S takes them,
// unique_keys.
template <class S>
Params enqueue_params(std::span<const NewJob> jobs, std::span<const std::size_t> which) {
  constexpr bool with_unique_keys = requires {
    S::unique_keys;
  };
  ArrayParam queue(Oid::kText), payload(Oid::kBytea), priority(Oid::kInt4),
      run_at(Oid::kTimestamptz), delay(Oid::kInt8), max_attempts(Oid::kInt4),
      unique_key(Oid::kText);
  for (std::size_t i : which) {
    const NewJob& job = jobs[i];
    queue.add(job.queue);
    payload.add(job.payload);
    priority.add(encode_int4(job.priority));
    run_at.add_optional(job.run_at, encode_timestamptz);
    delay.add_optional(job.delay, [](Duration d) { return encode_int8(d.count()); });
    max_attempts.add(encode_int4(job.max_attempts));
    if constexpr (with_unique_keys) {
      unique_key.add_optional(job.unique_key, [](const std::string& k) { return k; });
    }
  }
  Params params(S::param_count);
  params.array(S::queues, queue)
      .array(S::payloads, payload)
      .array(S::priorities, priority)
      .array(S::run_ats, run_at)
      .array(S::delays_us, delay)
      .array(S::max_attempts, max_attempts);
  if constexpr (with_unique_keys) params.array(S::unique_keys, unique_key);
  return params;
}

// The parameters of enqueue_one or enqueue_uniform (S): the queue, priority, run_at, delay and
// max_attempts of `job`, and `payload` (one bytea or an array of them) as parameter
// payload_param.
template <class S>
Params scalar_enqueue_params(const NewJob& job, int payload_param, std::string payload) {
  Params params(S::param_count);
  params.text(S::queue, job.queue)
      .set(payload_param, std::move(payload))
      .int4(S::priority, job.priority)
      .optional(S::run_at, job.run_at, encode_timestamptz)
      .optional(S::delay_us, job.delay, [](Duration d) { return encode_int8(d.count()); })
      .int4(S::max_attempts, job.max_attempts);
  return params;
}

// True when the jobs differ in nothing but their payloads (unique keys aside).
bool only_payloads_differ(std::span<const NewJob> jobs) {
  const NewJob& first = jobs.front();
  return std::all_of(jobs.begin() + 1, jobs.end(), [&](const NewJob& job) {
    return job.queue == first.queue && job.priority == first.priority &&
           job.run_at == first.run_at && job.delay == first.delay &&
           job.max_attempts == first.max_attempts;
  });
}

// Jobs without unique keys: one INSERT, every job inserted.
Result<std::vector<Enqueued>> enqueue_plain(Connection& connection, const Sql& statements,
                                            std::span<const NewJob> jobs) {
  // A job given a time may be scheduled for later: the timed statements put it straight into
  // scheduled (statements.sql). One given none is due: the plain INSERT, cheaper.
  const bool timed = jobs.front().delay.has_value() || jobs.front().run_at.has_value();
  if (jobs.size() == 1) {
    const NewJob& job = jobs.front();
    auto rows = timed ? connection.exec(statements.enqueue_one_timed,
                                        scalar_enqueue_params<sql::enqueue_one_timed>(
                                            job, sql::enqueue_one_timed::payload, job.payload))
                      : connection.exec(statements.enqueue_one,
                                        scalar_enqueue_params<sql::enqueue_one>(
                                            job, sql::enqueue_one::payload, job.payload));
    if (!rows) return fail_with(rows.error());
    if (rows->size() != 1) return fail_with(Error::internal("enqueue: no id came back"));
    return std::vector<Enqueued>{Enqueued{rows->int8(0, 0), true}};
  }
  Result<Rows> rows = [&] {
    if (only_payloads_differ(jobs)) {
      ArrayParam payloads(Oid::kBytea);
      for (const NewJob& job : jobs) payloads.add(job.payload);
      if (timed) {
        return connection.exec(
            statements.enqueue_uniform_timed,
            scalar_enqueue_params<sql::enqueue_uniform_timed>(
                jobs.front(), sql::enqueue_uniform_timed::payloads, payloads.encode()));
      }
      return connection.exec(statements.enqueue_uniform,
                             scalar_enqueue_params<sql::enqueue_uniform>(
                                 jobs.front(), sql::enqueue_uniform::payloads, payloads.encode()));
    }
    std::vector<std::size_t> all(jobs.size());
    std::iota(all.begin(), all.end(), std::size_t{0});
    return connection.exec(statements.enqueue_many, enqueue_params<sql::enqueue_many>(jobs, all));
  }();
  if (!rows) return fail_with(rows.error());
  if (static_cast<std::size_t>(rows->size()) != jobs.size()) {
    return fail_with(Error::internal("enqueue: " + std::to_string(rows->size()) + " ids for " +
                                     std::to_string(jobs.size()) + " jobs"));
  }
  // The ids were drawn in input order: sorted, the i-th is the i-th job's.
  std::vector<JobId> ids(jobs.size());
  for (int r = 0; r < rows->size(); ++r) ids[static_cast<std::size_t>(r)] = rows->int8(r, 0);
  std::sort(ids.begin(), ids.end());
  std::vector<Enqueued> results;
  results.reserve(ids.size());
  for (JobId id : ids) results.push_back(Enqueued{id, true});
  return results;
}

}  // namespace

bool any_unique_key(std::span<const NewJob> jobs) {
  return std::any_of(jobs.begin(), jobs.end(),
                     [](const NewJob& job) { return job.unique_key.has_value(); });
}

namespace {

// Jobs some of which have unique keys, none a unique window to open: the enqueue statement,
// in rounds. With check_windows, a job whose key has an open window gets that window's job
// first (one statement for the batch).
Result<std::vector<Enqueued>> enqueue_unique(Connection& connection, const Sql& statements,
                                             std::span<const NewJob> jobs, bool check_windows) {
  std::vector<Enqueued> results(jobs.size());
  std::vector<std::size_t> pending;
  pending.reserve(jobs.size());
  if (check_windows) {
    ArrayParam queues(Oid::kText), keys(Oid::kText);
    for (const NewJob& job : jobs) {
      if (!job.unique_key) continue;
      queues.add(job.queue);
      keys.add(*job.unique_key);
    }
    using W = sql::find_unique_windows;
    auto open = connection.exec(
        statements.find_unique_windows,
        Params(W::param_count).array(W::queues, queues).array(W::unique_keys, keys));
    if (!open) return fail_with(open.error());
    std::map<std::pair<std::string, std::string>, JobId> windows;
    for (int r = 0; r < open->size(); ++r) {
      if (open->is_null(r, 2)) continue;  // being opened by this transaction: not yet
      windows.emplace(std::pair(open->text(r, 0), open->text(r, 1)), open->int8(r, 2));
    }
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      const NewJob& job = jobs[i];
      if (job.unique_key) {
        auto it = windows.find(std::pair(job.queue, *job.unique_key));
        if (it != windows.end()) {
          results[i] = Enqueued{it->second, false};
          continue;
        }
      }
      pending.push_back(i);
    }
  } else {
    for (std::size_t i = 0; i < jobs.size(); ++i) pending.push_back(i);
  }
  for (int round = 0; round < kMaxEnqueueRounds && !pending.empty(); ++round) {
    // A NULL id means the unique key's holder committed after the statement's snapshot (ON
    // CONFLICT saw it, the lookup did not). The next round, a new statement with a new
    // snapshot, either sees that holder or — if it finished in between — inserts the job
    // after all.
    if (pending.size() == 1 && jobs[pending.front()].unique_key) {
      const NewJob& job = jobs[pending.front()];
      using S = sql::enqueue_one_keyed;
      auto rows = connection.exec(statements.enqueue_one_keyed,
                                  scalar_enqueue_params<S>(job, S::payload, job.payload)
                                      .text(S::unique_key, *job.unique_key));
      if (!rows) return fail_with(rows.error());
      if (rows->size() != 1) return fail_with(Error::internal("enqueue: no row came back"));
      if (!rows->is_null(0, 0)) {
        results[pending.front()] = Enqueued{rows->int8(0, 0), rows->boolean(0, 1)};
        pending.clear();
      }
      continue;
    }
    auto rows = connection.exec(statements.enqueue, enqueue_params<sql::enqueue>(jobs, pending));
    if (!rows) return fail_with(rows.error());
    // Rows come back in input order: (ord, id, inserted).
    std::vector<std::size_t> unresolved;
    for (int r = 0; r < rows->size(); ++r) {
      const auto ord = static_cast<std::size_t>(rows->int8(r, 0));
      if (ord < 1 || ord > pending.size())
        return fail_with(Error::internal("enqueue: bad row order"));
      const std::size_t index = pending[ord - 1];
      if (rows->is_null(r, 1)) {
        unresolved.push_back(index);
      } else {
        results[index] = Enqueued{rows->int8(r, 1), rows->boolean(r, 2)};
      }
    }
    pending = std::move(unresolved);
  }
  if (!pending.empty()) {
    return fail_with(Error::unavailable("enqueue: the holder of unique key '" +
                                        *jobs[pending.front()].unique_key +
                                        "' kept changing; try again"));
  }
  return results;
}

// One job that opens a unique window: claims the window (its row lock settles a race for
// the key), then enqueues the job as a unique one, then records the job in the window — or
// drops the window when a live job held the key after all.
Result<Enqueued> enqueue_with_window(Connection& connection, const Sql& statements,
                                     const NewJob& job) {
  using C = sql::claim_unique_window;
  auto claimed = connection.exec(statements.claim_unique_window,
                                 Params(C::param_count)
                                     .text(C::queue, job.queue)
                                     .text(C::unique_key, *job.unique_key)
                                     .int8(C::until_us, job.unique_for->count()));
  if (!claimed) return fail_with(claimed.error());
  if (claimed->size() == 0) {
    using H = sql::window_holder;
    auto holder = connection.exec(
        statements.window_holder,
        Params(H::param_count).text(H::queue, job.queue).text(H::unique_key, *job.unique_key));
    if (!holder) return fail_with(holder.error());
    if (holder->size() == 0 || holder->is_null(0, 0)) {
      return fail_with(Error::unavailable("enqueue: the unique window of key '" + *job.unique_key +
                                          "' changed while it was read; try again"));
    }
    return Enqueued{holder->int8(0, 0), false};
  }
  auto enqueued = enqueue_unique(connection, statements, std::span<const NewJob>(&job, 1), false);
  if (!enqueued) return fail_with(enqueued.error());
  const Enqueued result = enqueued->front();
  using S = sql::set_window_job;
  Params params(S::param_count);
  params.text(S::queue, job.queue).text(S::unique_key, *job.unique_key);
  if (result.inserted) {
    params.int8(S::job_id, result.id);
  } else {
    params.set_null(S::job_id);
  }
  if (auto ok = connection.exec(statements.set_window_job, params); !ok) {
    return fail_with(ok.error());
  }
  return result;
}

bool any_unique_window(std::span<const NewJob> jobs) {
  return std::any_of(jobs.begin(), jobs.end(),
                     [](const NewJob& job) { return job.unique_for.has_value(); });
}

}  // namespace

Result<std::vector<Enqueued>> enqueue_jobs(Connection& connection, const Sql& statements,
                                           std::span<const NewJob> jobs) {
  if (!any_unique_key(jobs)) return enqueue_plain(connection, statements, jobs);
  if (!any_unique_window(jobs)) return enqueue_unique(connection, statements, jobs, true);
  // One job at a time, in input order (ids increase along the batch as without windows):
  // each may open a window that a later one must find.
  std::vector<Enqueued> results;
  results.reserve(jobs.size());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    if (jobs[i].unique_for) {
      auto one = enqueue_with_window(connection, statements, jobs[i]);
      if (!one) return fail_with(one.error());
      results.push_back(*one);
    } else {
      auto one = jobs[i].unique_key
                     ? enqueue_unique(connection, statements, jobs.subspan(i, 1), true)
                     : enqueue_plain(connection, statements, jobs.subspan(i, 1));
      if (!one) return fail_with(one.error());
      results.push_back(one->front());
    }
  }
  return results;
}

Job read_job(const Rows& rows, int row) {
  Job job;
  job.id = rows.int8(row, 0);
  job.queue = rows.text(row, 1);
  job.state = parse_job_state(rows.text(row, 2)).value_or(JobState::kAvailable);
  job.priority = rows.int4(row, 3);
  job.run_at = rows.timestamptz(row, 4);
  job.attempts = rows.int4(row, 5);
  job.max_attempts = rows.int4(row, 6);
  if (!rows.is_null(row, 7)) job.lease_token = rows.lease_token(row, 7);
  job.leased_by = rows.optional_text(row, 8);
  job.lease_expires_at = rows.optional_timestamptz(row, 9);
  job.enqueued_at = rows.timestamptz(row, 10);
  job.started_at = rows.optional_timestamptz(row, 11);
  job.finished_at = rows.optional_timestamptz(row, 12);
  job.unique_key = rows.optional_text(row, 13);
  job.last_error = rows.optional_text(row, 14);
  job.payload = rows.text(row, 15);
  return job;
}

void read_lease_report(const Rows& rows, LeaseReport& report) {
  // Columns after the job's 16 (sql/statements.sql, -- name: lease_lanes), the same in every
  // row.
  constexpr int kXmin = 16, kXmax = 17, kLeasedAt = 18;
  report.snapshot_xmin = static_cast<std::uint64_t>(rows.int8(0, kXmin));
  report.snapshot_xmax = static_cast<std::uint64_t>(rows.int8(0, kXmax));
  report.leased_at = rows.timestamptz(0, kLeasedAt);
}

}  // namespace readpast::detail::pg
