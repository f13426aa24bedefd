#include "engines/postgres/postgres_engine.hpp"

#include <algorithm>
#include <charconv>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <tuple>
#include <type_traits>
#include <utility>

#include "core/handout_order.hpp"
#include "core/queue_list.hpp"
#include "core/random_bytes.hpp"
#include "core/schema_policy.hpp"
#include "core/url.hpp"
#include "core/utf8.hpp"
#include "engines/postgres/due_now_answers.hpp"
#include "engines/postgres/lease_frontier.hpp"
#include "engines/postgres/lease_mode.hpp"
#include "engines/postgres/pg_connection.hpp"
#include "engines/postgres/pg_jobs.hpp"
#include "engines/postgres/pg_listener.hpp"
#include "engines/postgres/pg_pool.hpp"
#include "engines/postgres/postgres_sql.hpp"

namespace readpast::detail {
namespace {

// The search text as encode(payload, 'escape') writes the same bytes, ASCII letters lowered
// (statements.sql, list_*): a byte with the high bit set becomes \ooo (octal), a backslash
// two. (A search text holds no NUL byte: Queue::list_page refuses one.)
std::string escaped_for_payload(std::string_view search) {
  std::string out;
  out.reserve(search.size());
  for (char ch : search) {
    const auto byte = static_cast<unsigned char>(ch);
    if (byte >= 0x80) {
      out += '\\';
      out += static_cast<char>('0' + (byte >> 6));
      out += static_cast<char>('0' + ((byte >> 3) & 7));
      out += static_cast<char>('0' + (byte & 7));
    } else if (ch == '\\') {
      out += "\\\\";
    } else if (ch >= 'A' && ch <= 'Z') {
      out += static_cast<char>(ch - 'A' + 'a');
    } else {
      out += ch;
    }
  }
  return out;
}

using pg::ArrayParam;
using pg::Connection;
using pg::Oid;
using pg::Params;
using pg::Rows;
using pg::Transaction;

// Connections one engine (one Queue, shared by a worker's threads) keeps for statements, by
// default (URL parameter pool_size); the wake-up listener takes one more once a worker waits
// for work.
constexpr std::size_t kPoolConnections = 8;
constexpr std::size_t kMaxPoolConnections = 100;
// Without notifications (a transaction-mode pooler and no listen_url), how often an idle
// caller looks at the table, by default (URL parameter poll_interval).
constexpr Duration kDefaultPollInterval = std::chrono::milliseconds(200);

// What the URL says about connections, beyond the statements' ConnectionConfig.
struct EngineSettings {
  std::size_t pool_size = kPoolConnections;
  // Where the listener LISTENs; nullopt: nowhere, poll every poll_interval instead.
  std::optional<pg::ConnectionConfig> listen;
  Duration poll_interval = kDefaultPollInterval;
  pg::LeaseLanes lease_lanes = pg::LeaseLanes::kAuto;
};

Result<EngineSettings> engine_settings(const DatabaseUrl& url, const pg::ConnectionConfig& config) {
  auto bad = [&](const std::string& why) {
    return fail_with(Error::invalid_argument("bad URL '" + url.redacted + "': " + why));
  };
  EngineSettings settings;
  if (auto it = url.params.find("pool_size"); it != url.params.end()) {
    std::size_t n = 0;
    const auto [end, ec] =
        std::from_chars(it->second.data(), it->second.data() + it->second.size(), n);
    if (ec != std::errc{} || end != it->second.data() + it->second.size() || n < 1 ||
        n > kMaxPoolConnections) {
      return bad("pool_size must be a number of connections from 1 to " +
                 std::to_string(kMaxPoolConnections));
    }
    settings.pool_size = n;
  }
  if (auto it = url.params.find("poll_interval"); it != url.params.end()) {
    auto interval = parse_duration(it->second);
    if (!interval || *interval <= Duration::zero()) {
      return bad("poll_interval must be a duration of more than zero (e.g. 200ms, 1s)");
    }
    settings.poll_interval = *interval;
  }
  if (auto it = url.params.find("lease_lanes"); it != url.params.end()) {
    auto lanes = pg::parse_lease_lanes(it->second);
    if (!lanes) return bad(lanes.error().message);
    settings.lease_lanes = *lanes;
  }
  if (auto it = url.params.find("listen_url"); it != url.params.end()) {
    auto listen_url = parse_database_url(it->second);
    if (!listen_url || listen_url->engine != "postgres") {
      return bad(
          "listen_url must be a PostgreSQL URL (percent-encoded), reaching the same "
          "database without a pooler in transaction mode");
    }
    auto listen = pg::make_connection_config(*listen_url);
    if (!listen) return fail_with(listen.error());
    if (!listen->prepare) {
      return bad(
          "listen_url must not have pool_mode=transaction: LISTEN needs a session of "
          "its own");
    }
    settings.listen = std::move(*listen);
  } else if (config.prepare) {
    settings.listen = config;  // a direct connection (or a session pooler) LISTENs as it is
  }
  return settings;
}

// Columns of oldest_snapshot (sql/statements.sql) beyond the holder's: the transactions
// assigned since its xmin, and the xmin.
constexpr int kOldestTransactions = 5;
constexpr int kOldestXmin = 6;
// Rows per statement of a rescue or a purge, so that each stays short.
constexpr int kRescueBatch = 5000;
constexpr int kPurgeBatch = 5000;
// When jobs are due but a lease found none (rows locked by a transaction still open),
// wait_for_work waits at most this long before saying so, so that callers do not spin.
constexpr auto kLockedDueRecheck = std::chrono::milliseconds(50);
// How often a worker held back by a queue's limit looks again (wait_for_work).
constexpr auto kThrottledRecheck = std::chrono::milliseconds(100);
// How long wait_for_work waits for the listener's first LISTEN (a connect and a round trip).
constexpr auto kListenPatience = std::chrono::seconds(2);

// A job and the token a fenced statement matched it by, as the statement returns them.
using SettledRef = std::pair<JobId, pg::UuidBytes>;

// The ids and tokens of refs, as the two arrays of the fenced statement S.
template <class S>
Params ref_params(std::span<const LeasedRef> refs) {
  ArrayParam ids(Oid::kInt8), tokens(Oid::kUuid);
  for (const auto& ref : refs) {
    ids.add(pg::encode_int8(ref.id));
    tokens.add(pg::view(pg::uuid_bytes(ref.token)));
  }
  Params params(S::param_count);
  params.array(S::ids, ids).array(S::tokens, tokens);
  return params;
}

// `count` lease tokens of 128 bits each from the operating system's random source, as the
// uuid[] the lease statement takes (one call to the random source for all of them).
ArrayParam fresh_tokens(int count) {
  std::string bytes(static_cast<std::size_t>(count) * 16, '\0');
  fill_random(bytes);
  ArrayParam tokens(Oid::kUuid);
  for (std::size_t at = 0; at < bytes.size(); at += 16) {
    tokens.add(std::string_view(bytes).substr(at, 16));
  }
  return tokens;
}

// Changed ids in the order they were asked for, each once.
std::vector<JobId> in_request_order(std::span<const JobId> ids, std::set<JobId> changed) {
  std::vector<JobId> result;
  for (JobId id : ids) {
    if (changed.erase(id) > 0) result.push_back(id);
  }
  return result;
}

std::vector<JobId> in_request_order(std::span<const JobId> ids, const Rows& rows) {
  std::set<JobId> changed;
  for (int r = 0; r < rows.size(); ++r) changed.insert(rows.int8(r, 0));
  return in_request_order(ids, std::move(changed));
}

class PostgresEngine final : public Engine {
 public:
  PostgresEngine(pg::SchemaName schema, pg::ConnectionConfig config, EngineSettings settings,
                 const Logger& logger)
      : schema_(std::move(schema)),
        poll_interval_(settings.poll_interval),
        sql_(schema_),
        mode_(settings.lease_lanes),
        pool_(std::move(config), logger, settings.pool_size),
        listener_(std::move(settings.listen), sql_.listen.sql, logger) {}

  // Connects once; see open_postgres_engine.
  Status connect() { return pool_.connect_first(); }

  Result<int> migrate() override {
    auto c = pool_.acquire();
    if (!c) return fail_with(c.error());
    // Nothing to do (and no privilege needed) when the schema is current.
    auto current = read_version(**c);
    if (!current) return fail_with(current.error());
    if (*current == pg::kSchemaVersion) return *current;

    auto transaction = Transaction::begin(**c);
    if (!transaction) return fail_with(transaction.error());
    // Concurrent `readpast init`s queue here; the second finds the work done. A
    // transaction-scoped lock, so that it also works through a transaction-mode pooler.
    Params lock(pg::sql::migrate_lock::param_count);
    lock.text(pg::sql::migrate_lock::schema_name, schema_.name);
    if (auto ok = (*c)->exec(sql_.migrate_lock, lock); !ok) return fail_with(ok.error());
    if (auto ok = (*c)->exec_script(sql_.create_schema.sql); !ok) return fail_with(ok.error());
    Migrations steps(*this, **c);
    auto version = migrate_schema(steps, pg::kSchemaVersion, pg::kSchemaVersion);
    if (!version) return version;
    if (auto ok = transaction->commit(); !ok) return fail_with(ok.error());
    return version;
  }

  Status check_schema() override {
    auto c = pool_.acquire();
    if (!c) return fail_with(c.error());
    auto version = read_version(**c);
    if (!version) return fail_with(version.error());
    return check_schema_version(*version, pg::kSchemaVersion, schema_.name);
  }

  Result<std::vector<Enqueued>> enqueue(std::span<const NewJob> jobs) override {
    auto c = pool_.acquire();
    if (!c) return fail_with(c.error());
    const bool any_after = std::any_of(jobs.begin(), jobs.end(), takes_part_in_a_workflow);
    // Without unique keys the batch is one statement, atomic by itself. With them it may
    // take a second statement (pg_jobs.cpp), so it runs in a transaction.
    if (!any_after && !pg::any_unique_key(jobs)) return pg::enqueue_jobs(**c, sql_, jobs);
    auto transaction = Transaction::begin(**c);
    if (!transaction) return fail_with(transaction.error());
    Result<std::vector<Enqueued>> results = std::vector<Enqueued>{};
    if (!any_after) {
      results = pg::enqueue_jobs(**c, sql_, jobs);
    } else {
      // Job by job, in input order, in the one transaction.
      for (std::size_t i = 0; i < jobs.size() && results; ++i) {
        if (!takes_part_in_a_workflow(jobs[i])) {
          auto one = pg::enqueue_jobs(**c, sql_, jobs.subspan(i, 1));
          if (!one) return fail_with(one.error());
          results->push_back(one->front());
        } else {
          auto id = enqueue_dependent(**c, jobs[i]);
          if (!id) return fail_with(id.error());
          results->push_back(Enqueued{*id, true});
        }
      }
    }
    if (!results) return results;
    if (auto ok = transaction->commit(); !ok) return fail_with(ok.error());
    return results;
  }

  Result<std::vector<Job>> lease(const LeaseRequest& request) override {
    listener_.lease_started(request.queue);
    probe_horizon_when_due();
    if (mode_.lanes(request.queue)) return lease_lanes(request);
    const ArrayParam tokens = fresh_tokens(request.max_jobs);
    using S = pg::sql::lease;
    Params params(S::param_count);
    params.text(S::queue, request.queue)
        .text(S::worker, sanitize_utf8(request.worker_id))
        .int8(S::lease_us, request.lease_duration.count())
        .array(S::tokens, tokens)
        .int4(S::max_jobs, request.max_jobs);
    auto c = pool_.acquire();
    if (!c) return fail_with(c.error());
    auto rows = (*c)->exec(sql_.lease, params);
    if (!rows) {
      // Its locks are gone: should the lanes be on by now, rows it held may lie behind their
      // frontiers.
      with_frontier(request.queue, [](pg::LeaseFrontier& f) { f.lease_failed(); });
      return fail_with(rows.error());
    }
    // The jobs, then one row without an id: the pages the lease walked (sql/statements.sql).
    const int taken = rows->size() - 1;
    if (taken < 0 || !rows->is_null(taken, 0)) {
      return fail_with(Error::internal("the lease returned no row of its walk"));
    }
    constexpr int kWalkedPages = 16;  // after the job's 16 columns
    act_on(mode_.head_walked(request.queue, rows->optional_int8(taken, kWalkedPages).value_or(0),
                             request.max_jobs, std::chrono::steady_clock::now()),
           request.queue);
    // Full: more jobs may wait than this lease took, announced by one notification that
    // woke only this caller (pg_listener.hpp). Pass the wake-up on.
    if (taken == request.max_jobs) listener_.wake_one(request.queue);
    std::vector<Job> jobs;
    jobs.reserve(static_cast<std::size_t>(taken));
    for (int r = 0; r < taken; ++r) jobs.push_back(pg::read_job(*rows, r));
    sort_in_handout_order(jobs);
    return jobs;
  }

  // The lease while a snapshot is held (lease_mode.hpp): lane by lane from this process'
  // frontiers (lease_frontier.hpp), which its report then moves on.
  Result<std::vector<Job>> lease_lanes(const LeaseRequest& request) {
    const ArrayParam tokens = fresh_tokens(request.max_jobs);
    using S = pg::sql::lease_lanes;
    const pg::LeasePlan plan = with_frontier(request.queue, [](pg::LeaseFrontier& f) {
      return f.plan(std::chrono::steady_clock::now());
    });
    ArrayParam priorities(Oid::kInt4), run_at(Oid::kTimestamptz), ids(Oid::kInt8),
        marks_from(Oid::kInt8);
    for (const pg::LaneStart& lane : plan.lanes) {
      priorities.add(pg::encode_int4(lane.priority));
      run_at.add(pg::encode_timestamptz(lane.from.run_at));
      ids.add(pg::encode_int8(lane.from.id));
      marks_from.add(pg::encode_int8(static_cast<std::int64_t>(lane.marks_from)));
    }
    Params params(S::param_count);
    params.text(S::queue, request.queue)
        .text(S::worker, sanitize_utf8(request.worker_id))
        .int8(S::lease_us, request.lease_duration.count())
        .array(S::tokens, tokens)
        .int4(S::from_head, plan.from_head ? 1 : 0)
        .array(S::lane_priorities, priorities)
        .array(S::lane_run_at, run_at)
        .array(S::lane_id, ids)
        .array(S::lane_marks_from, marks_from)
        .int4(S::max_jobs, request.max_jobs);
    auto c = pool_.acquire();
    if (!c) return fail_with(c.error());
    const auto started = std::chrono::steady_clock::now();
    auto rows = (*c)->exec(sql_.lease_lanes, params);
    if (plan.from_head && rows) {
      mode_.head_scan_took(started, std::chrono::steady_clock::now() - started);
    }
    if (!rows) {
      // Its locks are gone: rows it held may now lie behind this process' frontiers.
      with_frontier(request.queue, [](pg::LeaseFrontier& f) { f.lease_failed(); });
      return fail_with(rows.error());
    }
    std::vector<Job> jobs;
    pg::LeaseReport report;
    report.max_jobs = request.max_jobs;
    report.from_head = plan.from_head;
    report.look_back = plan.look_back;
    jobs.reserve(static_cast<std::size_t>(rows->size()));
    for (int r = 0; r < rows->size(); ++r) {
      jobs.push_back(pg::read_job(*rows, r));
      report.taken.emplace_back(jobs.back().priority,
                                pg::LaneKey{jobs.back().run_at, jobs.back().id});
    }
    if (!jobs.empty()) pg::read_lease_report(*rows, report);
    with_frontier(request.queue, [&](pg::LeaseFrontier& f) {
      f.record(report, std::chrono::steady_clock::now());
    });
    if (std::ssize(jobs) == request.max_jobs) listener_.wake_one(request.queue);
    sort_in_handout_order(jobs);
    return jobs;
  }

  // Reads how old the oldest snapshot is, when LeaseMode asks for it (one caller per
  // kProbeEvery). A failed probe changes nothing: the statement that follows meets the same
  // fault and reports it.
  void probe_horizon_when_due() {
    const auto now = std::chrono::steady_clock::now();
    if (!mode_.claim_probe(now)) return;
    using S = pg::sql::oldest_snapshot;
    auto rows = exec(sql_.oldest_snapshot, Params(S::param_count));
    if (!rows) return;
    if (rows->size() == 0) {
      act_on(mode_.observe(0, std::nullopt, now));
      return;
    }
    act_on(mode_.observe(rows->int8(0, kOldestTransactions), rows->optional_int8(0, kOldestXmin),
                         now));
  }

  // Does what a change of LeaseMode asks of the frontiers; `queue` is the one whose lease
  // reported the change, if any. Lock order: frontiers_mu_, then LeaseMode's.
  void act_on(pg::LeaseMode::Change change, std::string_view queue = {}) {
    switch (change) {
      case pg::LeaseMode::Change::kOn: {
        // Frontiers from an earlier time on the lanes are not kept: the lanes start from their
        // heads. A queue on the lanes for its long head kept its frontiers current.
        std::lock_guard lock(frontiers_mu_);
        std::erase_if(frontiers_, [&](const auto& entry) { return !mode_.long_head(entry.first); });
        break;
      }
      case pg::LeaseMode::Change::kOnForQueue: {
        std::lock_guard lock(frontiers_mu_);
        if (auto it = frontiers_.find(queue); it != frontiers_.end()) frontiers_.erase(it);
        break;
      }
      case pg::LeaseMode::Change::kYoung: {
        // The next leases from the head tell whether vacuum has cleared it.
        std::lock_guard lock(frontiers_mu_);
        for (auto& entry : frontiers_) entry.second.head_scan_now();
        break;
      }
      case pg::LeaseMode::Change::kNone:
        break;
    }
  }

  Result<LimitedLease> lease_limited(const LeaseRequest& request) override {
    listener_.lease_started(request.queue);
    using S = pg::sql::lease_limited;
    const ArrayParam tokens = fresh_tokens(request.max_jobs);
    auto rows = exec(sql_.lease_limited, Params(S::param_count)
                                             .text(S::queue, request.queue)
                                             .text(S::worker, sanitize_utf8(request.worker_id))
                                             .int4(S::max_jobs, request.max_jobs)
                                             .int8(S::lease_us, request.lease_duration.count())
                                             .array(S::tokens, tokens));
    if (!rows) return fail_with(rows.error());
    // The jobs, then one row without an id: which limit throttled, whether any applied.
    constexpr int kThrottled = 16;
    constexpr int kLimited = 17;
    LimitedLease result;
    for (int r = 0; r < rows->size(); ++r) {
      if (!rows->is_null(r, 0)) {
        result.jobs.push_back(pg::read_job(*rows, r));
        continue;
      }
      result.limited = rows->boolean(r, kLimited);
      if (auto kind = rows->optional_text(r, kThrottled)) {
        result.throttled = *kind == "rate" ? LimitKind::kRate : LimitKind::kRunning;
      }
    }
    if (!result.limited) {
      auto jobs = lease(request);
      if (!jobs) return fail_with(jobs.error());
      result.jobs = std::move(*jobs);
      return result;
    }
    // Full: as lease() does, pass a wake-up on to another waiter (the limits allowed it all).
    if (std::ssize(result.jobs) == request.max_jobs) listener_.wake_one(request.queue);
    sort_in_handout_order(result.jobs);
    return result;
  }

  Result<QueueLimits> limits(std::string_view queue) override {
    using S = pg::sql::queue_limits;
    auto rows = exec(sql_.queue_limits, Params(S::param_count).text(S::queue, queue));
    if (!rows) return fail_with(rows.error());
    QueueLimits limits;
    if (rows->size() == 1) {
      limits.running = rows->optional_int8(0, 0);
      if (auto count = rows->optional_int8(0, 1)) {
        limits.rate = RateLimit{*count, Duration(rows->optional_int8(0, 2).value_or(1))};
      }
    }
    return limits;
  }

  Status set_limits(std::string_view queue, const QueueLimits& limits) override {
    using S = pg::sql::set_limits;
    Params params(S::param_count);
    params.text(S::queue, queue);
    if (limits.running) {
      params.int4(S::running, static_cast<std::int32_t>(*limits.running));
    } else {
      params.set_null(S::running);
    }
    if (limits.rate) {
      params.int4(S::rate_count, static_cast<std::int32_t>(limits.rate->count));
      params.int8(S::rate_window_us, limits.rate->window.count());
    } else {
      params.set_null(S::rate_count);
      params.set_null(S::rate_window_us);
    }
    auto rows = exec(sql_.set_limits, params);
    if (!rows) return fail_with(rows.error());
    return {};
  }

  Status clear_limits(std::string_view queue) override {
    using S = pg::sql::clear_limits;
    auto rows = exec(sql_.clear_limits, Params(S::param_count).text(S::queue, queue));
    if (!rows) return fail_with(rows.error());
    return {};
  }

  Result<std::vector<bool>> complete(std::span<const LeasedRef> refs, bool delete_row) override {
    static_assert(pg::sql::complete::param_count == pg::sql::complete_delete::param_count &&
                  pg::sql::complete::ids == pg::sql::complete_delete::ids &&
                  pg::sql::complete::tokens == pg::sql::complete_delete::tokens);
    auto accepted = settle(delete_row ? sql_.complete_delete : sql_.complete, refs,
                           ref_params<pg::sql::complete>(refs));
    if (!accepted || !delete_row) return accepted;
    // complete_delete leaves a job with dependents to tell (and a lost lease): complete
    // those, so that the first is kept as succeeded (the second matches nothing again).
    std::vector<LeasedRef> kept;
    for (std::size_t i = 0; i < refs.size(); ++i) {
      if (!(*accepted)[i]) kept.push_back(refs[i]);
    }
    if (kept.empty()) return accepted;
    auto completed = settle(sql_.complete, kept, ref_params<pg::sql::complete>(kept));
    if (!completed) return completed;
    for (std::size_t i = 0, k = 0; i < refs.size(); ++i) {
      if (!(*accepted)[i]) (*accepted)[i] = (*completed)[k++];
    }
    return accepted;
  }

  Result<std::vector<FailResult>> fail(std::span<const FailItem> items) override {
    ArrayParam ids(Oid::kInt8), tokens(Oid::kUuid), errors(Oid::kText), retry_after(Oid::kInt8),
        base(Oid::kInt8), cap(Oid::kInt8), factor(Oid::kFloat8), no_retry(Oid::kBool);
    for (const FailItem& item : items) {
      ids.add(pg::encode_int8(item.ref.id));
      tokens.add(pg::view(pg::uuid_bytes(item.ref.token)));
      // last_error is a record for humans: invalid UTF-8 or NULs (a command's stderr)
      // are replaced, rather than failing the job's settlement.
      errors.add(sanitize_utf8(item.error));
      retry_after.add_optional(item.retry_after,
                               [](Duration d) { return pg::encode_int8(d.count()); });
      base.add(pg::encode_int8(item.backoff_base.count()));
      cap.add(pg::encode_int8(item.backoff_cap.count()));
      factor.add(pg::encode_float8(item.backoff_factor));
      no_retry.add(item.no_retry ? std::string_view("\x01", 1) : std::string_view("\x00", 1));
    }
    auto c = pool_.acquire();
    if (!c) return fail_with(c.error());
    using S = pg::sql::fail;
    auto rows = (*c)->exec(sql_.fail, Params(S::param_count)
                                          .array(S::ids, ids)
                                          .array(S::tokens, tokens)
                                          .array(S::errors, errors)
                                          .array(S::retry_after_us, retry_after)
                                          .array(S::base_us, base)
                                          .array(S::cap_us, cap)
                                          .array(S::factors, factor)
                                          .array(S::no_retry, no_retry));
    if (!rows) return fail_with(rows.error());
    std::map<SettledRef, FailOutcome> outcomes;
    for (int r = 0; r < rows->size(); ++r) {
      outcomes.emplace(SettledRef{rows->int8(r, 0), rows->uuid(r, 1)},
                       rows->text(r, 2) == "dead" ? FailOutcome::kDead : FailOutcome::kRetrying);
    }
    std::vector<FailResult> results;
    results.reserve(items.size());
    for (const FailItem& item : items) {
      auto it = outcomes.find(SettledRef{item.ref.id, pg::uuid_bytes(item.ref.token)});
      results.push_back(it == outcomes.end() ? FailResult{} : FailResult{it->second});
    }
    return results;
  }

  Result<std::vector<bool>> extend(std::span<const LeasedRef> refs,
                                   Duration lease_duration) override {
    return settle(
        sql_.extend, refs,
        ref_params<pg::sql::extend>(refs).int8(pg::sql::extend::lease_us, lease_duration.count()));
  }

  Result<std::vector<bool>> held(std::span<const LeasedRef> refs) override {
    return settle(sql_.held, refs, ref_params<pg::sql::held>(refs));
  }

  Result<std::vector<bool>> release(std::span<const LeasedRef> refs, Duration delay) override {
    return settle(
        sql_.release, refs,
        ref_params<pg::sql::release>(refs).int8(pg::sql::release::delay_us, delay.count()));
  }

  Result<bool> progress(const LeasedRef& ref, std::string_view json) override {
    using S = pg::sql::set_progress;
    auto rows = exec(sql_.set_progress, Params(S::param_count)
                                            .int8(S::id, ref.id)
                                            .set(S::token, pg::encode_uuid(ref.token))
                                            .text(S::progress, json));
    if (!rows) return fail_with(rows.error());
    return rows->affected() == 1;
  }

  Result<std::int64_t> forget_closed_windows(int limit) override {
    using S = pg::sql::forget_closed_windows;
    auto rows = exec(sql_.forget_closed_windows, Params(S::param_count).int4(S::limit, limit));
    if (!rows) return fail_with(rows.error());
    return rows->affected();
  }

  Result<bool> wait_for_work(std::string_view queue, Duration timeout) override {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    // Listen first, then look: a job that becomes available after the look is announced.
    listener_.subscribe(queue, std::min<Duration>(timeout, kListenPatience));
    // Another waiter's probe just found a job due but locked: its answer is this one's too.
    if (due_now_.fresh(queue, std::chrono::steady_clock::now())) {
      return after_locked_due_recheck(queue, timeout);
    }
    // Without notifications (polls()), look at the table every poll interval instead.
    const Duration look_every = listener_.polls() ? poll_interval_ : Duration::max();
    for (bool first = true;; first = false) {
      // Ask the database (one statement, next_due) whether a job is due or when the next one
      // will be: NOTIFY announces enqueues, not the moment a scheduled job comes due.
      bool throttled = false;
      auto due_in_us = next_due(queue, &throttled);
      if (!due_in_us) return fail_with(due_in_us.error());
      if (*due_in_us && **due_in_us <= 0) {
        // On the first look, a job is due yet the caller's lease found none: its row is
        // locked by a transaction still open (another worker's lease in flight, or a
        // session holding a row lock).
        if (!first) return true;
        due_now_.seen(queue, std::chrono::steady_clock::now());
        return after_locked_due_recheck(queue, timeout);
      }
      const auto left =
          std::chrono::duration_cast<Duration>(deadline - std::chrono::steady_clock::now());
      if (left <= Duration::zero()) return false;
      Duration limit = std::min(left, look_every);
      if (*due_in_us) limit = std::min(limit, Duration(**due_in_us));
      // Held back by a limit: a settling job or a rate slot leaving its window frees a place
      // without a notification, so look again soon.
      if (throttled) limit = std::min<Duration>(limit, kThrottledRecheck);
      if (listener_.wait(queue, limit)) return true;
      if (limit == left) return false;  // the caller's timeout, not a poll or a due job
    }
  }

  Result<std::int64_t> rescue_expired(std::string_view queue) override {
    // From where the last rescue of this process left off, less a margin
    // (lease_frontier.hpp): under a snapshot held open elsewhere, the expiry index is full of
    // entries of leases already settled that no vacuum may remove.
    const auto planned = std::chrono::steady_clock::now();
    const bool lanes = mode_.lanes(queue);
    const std::optional<TimePoint> after =
        lanes ? with_frontier(queue, [&](pg::LeaseFrontier& f) { return f.rescue_plan(planned); })
              : std::nullopt;
    // Batches of kRescueBatch keep each statement short after a mass expiry.
    std::int64_t total = 0;
    while (true) {
      auto c = pool_.acquire();
      if (!c) return fail_with(c.error());
      using S = pg::sql::rescue;
      auto rows = (*c)->exec(sql_.rescue, Params(S::param_count)
                                              .text(S::queue, queue)
                                              .optional(S::after, after, pg::encode_timestamptz)
                                              .int4(S::batch, kRescueBatch));
      if (!rows) return fail_with(rows.error());
      total += rows->affected();
      if (rows->affected() < kRescueBatch) break;
    }
    if (lanes) with_frontier(queue, [&](pg::LeaseFrontier& f) { f.rescue_done(planned); });
    return total;
  }

  // A job that another statement moves between live, running, scheduled and waiting while the
  // cancel waits for its row is not found by that statement: a move is a delete and an insert,
  // which it does not follow as it follows an update. Another statement, whose snapshot sees the
  // move, finds it. Jobs move both ways between live and running (a lease, a failure retried
  // now) and between live and scheduled (a lease promotes one, a failure retried later moves it
  // back), so it may have moved again meanwhile: up to kCancelPasses in all. Ids of finished jobs
  // are missed by every pass (a cancel leaves them as they are), so a cancel that names one costs
  // three statements.
  Result<std::vector<JobId>> cancel(std::span<const JobId> ids) override {
    constexpr int kCancelPasses = 3;
    auto first = change(sql_.cancel, ids);
    if (!first) return fail_with(first.error());
    std::set<JobId> cancelled(first->begin(), first->end());
    for (int pass = 1; pass < kCancelPasses; ++pass) {
      std::vector<JobId> missed;
      for (JobId id : ids) {
        if (!cancelled.contains(id)) missed.push_back(id);
      }
      if (missed.empty()) break;
      auto again = change(sql_.cancel, missed);
      if (!again) return fail_with(again.error());
      cancelled.insert(again->begin(), again->end());
    }
    return in_request_order(ids, std::move(cancelled));
  }

  Result<std::vector<JobId>> retry(std::span<const JobId> ids) override {
    ArrayParam array(Oid::kInt8);
    for (JobId id : ids) array.add(pg::encode_int8(id));
    auto rows = retry_with([&](pg::Connection& c) {
      return c.exec(sql_.retry,
                    Params(pg::sql::retry::param_count).array(pg::sql::retry::ids, array));
    });
    if (!rows) return fail_with(rows.error());
    return in_request_order(ids, *rows);
  }

  Result<std::int64_t> retry_all(std::string_view queue, JobState state) override {
    using S = pg::sql::retry_all;
    auto rows = retry_with([&](pg::Connection& c) {
      return c.exec(sql_.retry_all,
                    Params(S::param_count).text(S::queue, queue).text(S::state, to_string(state)));
    });
    if (!rows) return fail_with(rows.error());
    return rows->size();
  }

  Result<Dependencies> dependencies(JobId id) override {
    auto c = pool_.acquire();
    if (!c) return fail_with(c.error());
    Dependencies found;
    auto read_edges = [](const pg::Rows& rows, std::vector<Dependency>& into) {
      for (int r = 0; r < rows.size(); ++r) {
        const JobId other = rows.int8(r, 0);
        into.push_back(
            Dependency{other > 0 ? other : 0,
                       rows.is_null(r, 1) ? std::nullopt : parse_job_state(rows.text(r, 1)),
                       rows.boolean(r, 2), rows.optional_text(r, 3)});
      }
    };
    using A = pg::sql::dependencies_of;
    auto after = (*c)->exec(sql_.dependencies_of, Params(A::param_count).int8(A::id, id));
    if (!after) return fail_with(after.error());
    read_edges(*after, found.after);
    using D = pg::sql::dependents_of;
    auto dependents =
        (*c)->exec(sql_.dependents_of,
                   Params(D::param_count).int8(D::id, id).int4(D::limit, kMaxListedDependents));
    if (!dependents) return fail_with(dependents.error());
    read_edges(*dependents, found.dependents);
    found.dependent_count = dependents->size() > 0 ? dependents->int8(0, 4) : 0;
    using G = pg::sql::job_group;
    auto own = (*c)->exec(sql_.job_group, Params(G::param_count).int8(G::id, id));
    if (!own) return fail_with(own.error());
    if (own->size() > 0) found.group = own->optional_text(0, 0);
    return found;
  }

  Result<std::optional<GroupStats>> group_stats(std::string_view group) override {
    auto c = pool_.acquire();
    if (!c) return fail_with(c.error());
    using G = pg::sql::group_stats;
    auto rows = (*c)->exec(sql_.group_stats, Params(G::param_count).text(G::name, group));
    if (!rows) return fail_with(rows.error());
    if (rows->size() == 0 || rows->text(0, 0) != "live") return std::optional<GroupStats>{};
    GroupStats stats{.name = std::string(group)};
    for (int r = 0; r < rows->size(); ++r) {
      const std::string what = rows->text(r, 0);
      if (what == "live") {
        stats.live = rows->int8(r, 1);
      } else if (what == "waiters") {
        stats.waiters = rows->int8(r, 1);
      } else {
        add_group_count(stats, what, rows->int8(r, 1));
      }
    }
    return std::optional<GroupStats>(std::move(stats));
  }

  Result<std::vector<Job>> list_group(std::string_view group, JobId after_id, int limit) override {
    auto c = pool_.acquire();
    if (!c) return fail_with(c.error());
    using L = pg::sql::list_group;
    auto rows = (*c)->exec(sql_.list_group, Params(L::param_count)
                                                .text(L::name, group)
                                                .int8(L::after_id, after_id)
                                                .int4(L::limit, limit));
    if (!rows) return fail_with(rows.error());
    std::vector<Job> jobs;
    for (int r = 0; r < rows->size(); ++r) jobs.push_back(pg::read_job(*rows, r));
    return jobs;
  }

  Result<bool> has_untold() override {
    auto c = pool_.acquire();
    if (!c) return fail_with(c.error());
    auto any = (*c)->exec(sql_.any_notified, Params(pg::sql::any_notified::param_count));
    if (!any) return fail_with(any.error());
    return any->boolean(0, 0);
  }

  Result<std::int64_t> resolve_dependencies() override {
    auto c = pool_.acquire();
    if (!c) return fail_with(c.error());
    // One round, one transaction, under the resolver's lock: the jobs that succeeded, then
    // those that ended dead or cancelled (statements.sql, resolve_succeeded).
    auto transaction = Transaction::begin(**c);
    if (!transaction) return fail_with(transaction.error());
    auto locked = (*c)->exec(sql_.resolve_lock, Params(pg::sql::resolve_lock::param_count));
    if (!locked) return fail_with(locked.error());
    if (!locked->boolean(0, 0)) return 0;  // another process is resolving
    std::int64_t moved = 0;
    using S = pg::sql::resolve_succeeded;
    using F = pg::sql::resolve_failed;
    static_assert(S::param_count == F::param_count && S::jobs == F::jobs && S::limit == F::limit);
    ArrayParam left(Oid::kText);  // one group name per member that finished telling
    bool any_left = false;
    for (const pg::Statement* statement : {&sql_.resolve_succeeded, &sql_.resolve_failed}) {
      auto rows = (*c)->exec(
          *statement,
          Params(S::param_count).int4(S::jobs, kResolveJobs).int4(S::limit, kResolveChunk));
      if (!rows) return fail_with(rows.error());
      moved += rows->int8(0, 0);
      const std::string names = rows->text(0, 1);  // group names are [A-Za-z0-9_.-]: no comma
      for (std::size_t at = 0; at < names.size();) {
        const std::size_t comma = std::min(names.find(',', at), names.size());
        left.add(std::string_view(names).substr(at, comma - at));
        any_left = true;
        at = comma + 1;
      }
    }
    if (any_left) {
      for (const pg::Statement* statement : {&sql_.leave_groups, &sql_.release_groups}) {
        static_assert(pg::sql::leave_groups::names == pg::sql::release_groups::names &&
                      pg::sql::leave_groups::param_count == pg::sql::release_groups::param_count);
        if (auto ok = (*c)->exec(*statement, Params(pg::sql::leave_groups::param_count)
                                                 .array(pg::sql::leave_groups::names, left));
            !ok) {
          return fail_with(ok.error());
        }
      }
    }
    if (auto ok = transaction->commit(); !ok) return fail_with(ok.error());
    return moved;
  }

  Result<std::int64_t> purge(const PurgeRequest& request) override {
    // The cutoff is fixed once, on the database's clock, so that a long purge does not
    // chase rows finishing now. Each batch is its own short statement.
    auto c = pool_.acquire();
    if (!c) return fail_with(c.error());
    auto now = (*c)->exec(sql_.now, Params(pg::sql::now::param_count));
    if (!now) return fail_with(now.error());
    const TimePoint cutoff = now->timestamptz(0, 0) - request.older_than.value_or(Duration::zero());
    std::int64_t total = 0;
    std::int64_t budget = request.limit.value_or(std::numeric_limits<int>::max());
    while (budget > 0) {
      const int batch = static_cast<int>(std::min<std::int64_t>(budget, kPurgeBatch));
      using S = pg::sql::purge;
      auto rows = (*c)->exec(sql_.purge, Params(S::param_count)
                                             .text(S::queue, request.queue)
                                             .text(S::state, to_string(request.state))
                                             .timestamptz(S::cutoff, cutoff)
                                             .int4(S::batch, batch));
      if (!rows) return fail_with(rows.error());
      total += rows->affected();
      budget -= rows->affected();
      if (rows->affected() < batch) break;
    }
    return total;
  }

  Result<std::vector<QueueStats>> stats(std::optional<std::string_view> queue) override {
    auto c = pool_.acquire();
    if (!c) return fail_with(c.error());
    Params params(pg::sql::stats::param_count);
    params.optional(pg::sql::stats::queue, queue,
                    [](std::string_view q) { return std::string(q); });
    auto rows = (*c)->exec(sql_.stats, params);
    if (!rows) return fail_with(rows.error());
    std::map<std::string, QueueStats> by_queue;
    for (int r = 0; r < rows->size(); ++r) {
      std::string name = rows->text(r, 0);
      QueueStats& q = by_queue[name];
      q.queue = name;
      if (rows->text(r, 1) == "paused") {
        q.paused = true;
        continue;
      }
      if (rows->text(r, 1) == "limits") {
        set_limits_row(q, rows->optional_int8(r, 2), rows->optional_int8(r, 3),
                       rows->optional_int8(r, 4));
        continue;
      }
      const JobState state = parse_job_state(rows->text(r, 1)).value_or(JobState::kAvailable);
      set_state_counts(q, state, rows->int8(r, 2), rows->int8(r, 3));
      if (state == JobState::kAvailable) {
        q.oldest_available_age = Duration(rows->optional_int8(r, 4).value_or(0));
      }
    }
    std::vector<QueueStats> result;
    result.reserve(by_queue.size());
    for (auto& [name, q] : by_queue) result.push_back(std::move(q));
    return result;
  }

  Result<std::vector<Job>> list(const ListRequest& request) override {
    const bool desc = request.order == ListOrder::kNewestFirst;
    auto rows =
        request.queue
            ? (request.state
                   ? (desc ? list_page<pg::sql::list_queue_state_desc>(sql_.list_queue_state_desc,
                                                                       request)
                           : list_page<pg::sql::list_queue_state>(sql_.list_queue_state, request))
                   : (desc ? list_page<pg::sql::list_queue_desc>(sql_.list_queue_desc, request)
                           : list_page<pg::sql::list_queue>(sql_.list_queue, request)))
            : (request.state
                   ? (desc ? list_page<pg::sql::list_state_desc>(sql_.list_state_desc, request)
                           : list_page<pg::sql::list_state>(sql_.list_state, request))
                   : (desc ? list_page<pg::sql::list_all_desc>(sql_.list_all_desc, request)
                           : list_page<pg::sql::list_all>(sql_.list_all, request)));
    if (!rows) return fail_with(rows.error());
    std::vector<Job> jobs;
    jobs.reserve(static_cast<std::size_t>(rows->size()));
    for (int r = 0; r < rows->size(); ++r) jobs.push_back(pg::read_job(*rows, r));
    return jobs;
  }

  Result<std::optional<std::pair<JobId, JobId>>> id_bounds() override {
    using Bounds = std::optional<std::pair<JobId, JobId>>;
    auto rows = exec(sql_.id_bounds, Params(pg::sql::id_bounds::param_count));
    if (!rows) return fail_with(rows.error());
    if (rows->size() == 0 || rows->is_null(0, 0) || rows->is_null(0, 1)) return Bounds{};
    return Bounds{std::pair<JobId, JobId>(rows->int8(0, 0), rows->int8(0, 1))};
  }

  Result<std::vector<JobId>> remove(std::span<const JobId> ids) override {
    return change(sql_.delete_finished, ids);
  }

  Result<std::optional<Job>> get(JobId id) override {
    auto c = pool_.acquire();
    if (!c) return fail_with(c.error());
    auto rows = (*c)->exec(sql_.get, Params(pg::sql::get::param_count).int8(pg::sql::get::id, id));
    if (!rows) return fail_with(rows.error());
    if (rows->size() == 0) return std::optional<Job>{};
    Job job = pg::read_job(*rows, 0);
    job.progress = rows->optional_text(0, 16);
    auto errors =
        (*c)->exec(sql_.job_errors,
                   Params(pg::sql::job_errors::param_count).int8(pg::sql::job_errors::id, id));
    if (!errors) return fail_with(errors.error());
    for (int r = 0; r < errors->size(); ++r) {
      job.errors.push_back(JobError{errors->int4(r, 0), errors->timestamptz(r, 1),
                                    errors->optional_text(r, 2), errors->text(r, 3)});
    }
    return std::optional<Job>(std::move(job));
  }

  Result<std::vector<FinishedCounts>> finished_since(
      TimePoint since, std::optional<std::string_view> queue) override {
    using S = pg::sql::finished_since;
    Params params(S::param_count);
    params.timestamptz(S::since, since).optional(S::queue, queue, [](std::string_view q) {
      return std::string(q);
    });
    auto rows = exec(sql_.finished_since, params);
    if (!rows) return fail_with(rows.error());
    std::vector<FinishedCounts> counts;
    for (int r = 0; r < rows->size(); ++r) {
      counts.push_back({rows->text(r, 0), rows->int8(r, 1), rows->int8(r, 2)});
    }
    return counts;
  }

  Status set_paused(std::string_view queue, bool paused) override {
    using S = pg::sql::pause;
    static_assert(S::param_count == pg::sql::resume::param_count &&
                  S::queue == pg::sql::resume::queue);
    auto rows =
        exec(paused ? sql_.pause : sql_.resume, Params(S::param_count).text(S::queue, queue));
    if (!rows) return fail_with(rows.error());
    return {};
  }

  Result<bool> upsert_schedule(const Schedule& schedule) override {
    using S = pg::sql::upsert_schedule;
    auto rows = exec(sql_.upsert_schedule, Params(S::param_count)
                                               .text(S::name, schedule.name)
                                               .text(S::queue, schedule.queue)
                                               .text(S::spec, schedule.spec)
                                               .set(S::payload, schedule.payload)
                                               .int4(S::priority, schedule.priority)
                                               .int4(S::max_attempts, schedule.max_attempts));
    if (!rows) return fail_with(rows.error());
    return rows->size() == 1 && rows->boolean(0, 0);
  }

  Result<std::vector<Schedule>> list_schedules() override {
    auto rows = exec(sql_.list_schedules, Params(pg::sql::list_schedules::param_count));
    if (!rows) return fail_with(rows.error());
    std::vector<Schedule> schedules;
    for (int r = 0; r < rows->size(); ++r) {
      Schedule schedule;
      schedule.name = rows->text(r, 0);
      schedule.queue = rows->text(r, 1);
      schedule.spec = rows->text(r, 2);
      schedule.payload = rows->text(r, 3);  // bytea in binary format: the raw bytes
      schedule.priority = rows->int4(r, 4);
      schedule.max_attempts = rows->int4(r, 5);
      schedule.created_at = rows->timestamptz(r, 6);
      schedule.last_tick = rows->optional_timestamptz(r, 7);
      schedule.last_job = rows->optional_int8(r, 8);
      schedules.push_back(std::move(schedule));
    }
    return schedules;
  }

  Result<bool> delete_schedule(std::string_view name) override {
    auto rows = exec(
        sql_.delete_schedule,
        Params(pg::sql::delete_schedule::param_count).text(pg::sql::delete_schedule::name, name));
    if (!rows) return fail_with(rows.error());
    return rows->affected() == 1;
  }

  Result<std::optional<JobId>> enqueue_tick(std::string_view name, TimePoint tick) override {
    using S = pg::sql::enqueue_tick;
    auto rows = exec(sql_.enqueue_tick, Params(S::param_count)
                                            .text(S::name, name)
                                            .timestamptz(S::tick, tick)
                                            .text(S::unique_key, schedule_job_key(name, tick)));
    if (!rows) return fail_with(rows.error());
    if (rows->size() == 0) return std::optional<JobId>{};
    return std::optional<JobId>(rows->int8(0, 0));
  }

  Result<std::optional<JobId>> enqueue_schedule_now(std::string_view name) override {
    using S = pg::sql::enqueue_schedule_now;
    auto rows = exec(sql_.enqueue_schedule_now, Params(S::param_count).text(S::name, name));
    if (!rows) return fail_with(rows.error());
    if (rows->size() == 0) return std::optional<JobId>{};
    return std::optional<JobId>(rows->int8(0, 0));
  }

  Result<bool> claim_task(std::string_view task, Duration interval, std::string_view by) override {
    using S = pg::sql::claim_task;
    auto rows = exec(sql_.claim_task, Params(S::param_count)
                                          .text(S::task, sanitize_utf8(task))
                                          .int8(S::interval_us, interval.count())
                                          .text(S::claimed_by, sanitize_utf8(by)));
    if (!rows) return fail_with(rows.error());
    return rows->size() == 1;
  }

  Result<StorageHealth> storage_health() override {
    StorageHealth health;
    auto oldest = exec(sql_.oldest_snapshot, Params(pg::sql::oldest_snapshot::param_count));
    if (!oldest) return fail_with(oldest.error());
    if (oldest->size() == 1) {
      const auto& r = *oldest;
      SnapshotHolder holder = holder_of(r);
      holder.transactions = r.optional_int8(0, kOldestTransactions);
      health.oldest_snapshot = std::move(holder);
    }
    auto sizes = exec(sql_.storage_sizes, Params(pg::sql::storage_sizes::param_count));
    if (!sizes) return fail_with(sizes.error());
    for (int r = 0; r < sizes->size(); ++r) {
      health.sizes.push_back({.relation = sizes->text(r, 0), .bytes = sizes->int8(r, 1)});
    }
    return health;
  }

  bool storage_rotates() const override { return true; }
  Result<StorageRotation> rotate_storage() override {
    auto rows = exec(sql_.rotate_running, Params(pg::sql::rotate_running::param_count));
    if (!rows) return fail_with(rows.error());
    StorageRotation rotation;
    rotation.rotated = rows->boolean(0, 0);
    rotation.moved = rows->int8(0, 1);
    if (rotation.rotated) return rotation;
    auto blocker = exec(sql_.rotation_blocker, Params(pg::sql::rotation_blocker::param_count));
    if (!blocker) return fail_with(blocker.error());
    if (blocker->size() == 1) rotation.blocked_by = holder_of(*blocker);
    return rotation;
  }

  // The first row's kind, pid, client, state and age in microseconds (columns 0 to 4), as
  // oldest_snapshot and rotation_blocker return them.
  static SnapshotHolder holder_of(const pg::Rows& r) {
    SnapshotHolder holder;
    holder.kind = r.text(0, 0);
    holder.pid = r.optional_int8(0, 1);
    holder.client = r.optional_text(0, 2).value_or("");
    holder.state = r.optional_text(0, 3).value_or("");
    if (auto us = r.optional_int8(0, 4)) holder.age = Duration(*us);
    return holder;
  }

  Subscription on_cancel(std::function<void()> notify) override {
    if (listener_.polls()) return {};
    const std::uint64_t id = listener_.add_cancel_callback(std::move(notify));
    return Subscription([this, id] { listener_.remove_cancel_callback(id); });
  }

  Result<TimePoint> now() override {
    auto rows = exec(sql_.now, Params(pg::sql::now::param_count));
    if (!rows) return fail_with(rows.error());
    return rows->timestamptz(0, 0);
  }

  Status add_metrics(std::span<const MetricSample> rows) override {
    using S = pg::sql::add_metrics;
    ArrayParam names(Oid::kText), queues(Oid::kText), labels(Oid::kText), label_values(Oid::kText),
        values(Oid::kInt8);
    for (const MetricSample& row : rows) {
      names.add(row.name);
      queues.add(row.queue);
      labels.add(row.label);
      label_values.add(row.label_value);
      values.add(pg::encode_int8(row.value));
    }
    auto done = exec(sql_.add_metrics, Params(S::param_count)
                                           .array(S::names, names)
                                           .array(S::queues, queues)
                                           .array(S::labels, labels)
                                           .array(S::label_values, label_values)
                                           .array(S::values, values));
    if (!done) return fail_with(done.error());
    return {};
  }

  Result<std::vector<MetricSample>> metrics() override {
    auto rows = exec(sql_.read_metrics, Params(pg::sql::read_metrics::param_count));
    if (!rows) return fail_with(rows.error());
    std::vector<MetricSample> samples;
    samples.reserve(static_cast<std::size_t>(rows->size()));
    for (int r = 0; r < rows->size(); ++r) {
      samples.push_back(MetricSample{rows->text(r, 0), rows->text(r, 1), rows->text(r, 2),
                                     rows->text(r, 3), rows->int8(r, 4)});
    }
    return samples;
  }

  Status upsert_worker(const WorkerProcess& worker, Duration forget_after) override {
    using S = pg::sql::upsert_worker;
    auto done = exec(sql_.upsert_worker, Params(S::param_count)
                                             .text(S::name, sanitize_utf8(worker.name))
                                             .text(S::host, sanitize_utf8(worker.host))
                                             .int8(S::pid, worker.pid)
                                             .text(S::queues, join_queue_names(worker.queues))
                                             .int4(S::threads, worker.threads)
                                             .int8(S::forget_us, forget_after.count()));
    if (!done) return fail_with(done.error());
    return {};
  }

  Status delete_worker(std::string_view name) override {
    using S = pg::sql::delete_worker;
    auto done = exec(sql_.delete_worker, Params(S::param_count).text(S::name, sanitize_utf8(name)));
    if (!done) return fail_with(done.error());
    return {};
  }

  Result<std::vector<WorkerProcess>> list_workers() override {
    auto rows = exec(sql_.list_workers, Params(pg::sql::list_workers::param_count));
    if (!rows) return fail_with(rows.error());
    std::vector<WorkerProcess> workers;
    for (int r = 0; r < rows->size(); ++r) {
      WorkerProcess worker;
      worker.name = rows->text(r, 0);
      worker.host = rows->text(r, 1);
      worker.pid = rows->int8(r, 2);
      worker.queues = split_queue_names(rows->text(r, 3));
      worker.threads = rows->int4(r, 4);
      worker.started_at = rows->timestamptz(r, 5);
      worker.heartbeat_at = rows->timestamptz(r, 6);
      workers.push_back(std::move(worker));
    }
    return workers;
  }

 private:
  // A job is due but its row is locked: return true soon, but not at once (kLockedDueRecheck,
  // or a notification first), so that a caller's loop does not spin.
  bool after_locked_due_recheck(std::string_view queue, Duration timeout) {
    listener_.wait(queue, std::min<Duration>(timeout, kLockedDueRecheck));
    return true;
  }

  // Microseconds until the queue's next available job is due (<= 0: one is due now);
  // nullopt when it has none or is paused.
  // nullopt: no job due, or the queue's limits let no lease take one now (then *throttled).
  Result<std::optional<std::int64_t>> next_due(std::string_view queue, bool* throttled) {
    using S = pg::sql::next_due;
    // Below the lanes' frontiers every job is accounted for (lease_frontier.hpp), so the
    // probe starts there instead of walking what earlier leases left at the head.
    const std::optional<TimePoint> after =
        mode_.lanes(queue)
            ? with_frontier(queue, [](pg::LeaseFrontier& f) { return f.earliest_start(); })
            : std::nullopt;
    auto rows = exec(sql_.next_due, Params(S::param_count)
                                        .text(S::queue, queue)
                                        .optional(S::after, after, pg::encode_timestamptz));
    if (!rows) return fail_with(rows.error());
    *throttled = false;
    if (rows->size() != 1) return std::optional<std::int64_t>{};
    auto due = rows->optional_int8(0, 0);
    if (due && *due <= 0 && rows->boolean(0, 1)) {
      *throttled = true;
      return std::optional<std::int64_t>{};
    }
    return due;
  }

  // Runs `use` on the queue's frontier, under frontiers_mu_.
  template <class Use>
  std::invoke_result_t<Use, pg::LeaseFrontier&> with_frontier(std::string_view queue, Use&& use) {
    std::lock_guard lock(frontiers_mu_);
    auto it = frontiers_.find(queue);
    if (it == frontiers_.end())
      it = frontiers_.emplace(std::string(queue), pg::LeaseFrontier{}).first;
    return use(it->second);
  }

  // One statement on a connection of the pool.
  Result<Rows> exec(const pg::Statement& statement, const Params& params) {
    auto c = pool_.acquire();
    if (!c) return fail_with(c.error());
    return (*c)->exec(statement, params);
  }

  // One page of jobs through the list statement S, whose filters are those of request.
  template <class S>
  Result<Rows> list_page(const pg::Statement& statement, const ListRequest& request) {
    Params params(S::param_count);
    params.int8(S::after_id, request.after_id.value_or(0))
        .int8(S::before_id, request.before_id.value_or(std::numeric_limits<std::int64_t>::max()))
        .int4(S::limit, request.limit)
        .int4(S::scheduled, request.view == ListView::kScheduled ? 1 : 0)
        .int4(S::retrying, request.view == ListView::kRetrying ? 1 : 0)
        .int4(S::expired, request.view == ListView::kExpired ? 1 : 0);
    if (request.search) {
      params.text(S::search, *request.search)
          .text(S::payload_search, escaped_for_payload(*request.search));
    } else {
      params.set_null(S::search).set_null(S::payload_search);
    }
    if constexpr (requires { S::queue; }) params.text(S::queue, *request.queue);
    if constexpr (requires { S::state; }) params.text(S::state, to_string(*request.state));
    return exec(statement, params);
  }

  // Migrations as PostgreSQL runs them, in migrate()'s transaction.
  class Migrations final : public MigrationSteps {
   public:
    Migrations(PostgresEngine& engine, Connection& c) : engine_(engine), c_(c) {}
    Result<int> version() override { return engine_.read_version(c_); }
    Status apply(int number) override {
      const auto& script = engine_.sql_.migrations[static_cast<std::size_t>(number - 1)];
      if (auto ok = c_.exec_script(script); !ok) return ok;
      Params record(pg::sql::record_version::param_count);
      record.int4(pg::sql::record_version::version, number);
      if (auto ok = c_.exec(engine_.sql_.record_version, record); !ok) {
        return fail_with(ok.error());
      }
      return {};
    }

   private:
    PostgresEngine& engine_;
    Connection& c_;
  };

  // The schema version, 0 when the schema or its version table does not exist.
  Result<int> read_version(Connection& c) {
    auto rows = c.exec(sql_.schema_version, Params(pg::sql::schema_version::param_count));
    if (!rows) {
      if (rows.error().code == ErrorCode::kSchema) return 0;
      return fail_with(rows.error());
    }
    if (rows->size() == 0 || rows->is_null(0, 0)) return 0;
    return rows->int4(0, 0);
  }

  // Runs a fenced statement whose rows are the (id, token) of the refs that matched.
  // A re-sent call (after a dropped connection left the first one's outcome unknown)
  // matches nothing if the first one committed: see complete in sql/statements.sql.
  Result<std::vector<bool>> settle(const pg::Statement& statement, std::span<const LeasedRef> refs,
                                   const Params& params) {
    auto c = pool_.acquire();
    if (!c) return fail_with(c.error());
    auto rows = (*c)->exec(statement, params);
    if (!rows) return fail_with(rows.error());
    std::vector<SettledRef> matched;
    matched.reserve(static_cast<std::size_t>(rows->size()));
    for (int r = 0; r < rows->size(); ++r) matched.push_back({rows->int8(r, 0), rows->uuid(r, 1)});
    std::sort(matched.begin(), matched.end());
    std::vector<bool> accepted;
    accepted.reserve(refs.size());
    for (const auto& ref : refs) {
      accepted.push_back(std::binary_search(matched.begin(), matched.end(),
                                            SettledRef{ref.id, pg::uuid_bytes(ref.token)}));
    }
    return accepted;
  }

  // Runs a retry statement (RETURNING id, has_dependencies) in a transaction, then puts the
  // retried dependents back to waiting for what has not succeeded, under the resolver's lock
  // so that no round of resolve_dependencies is half seen.
  template <class Run>
  Result<pg::Rows> retry_with(Run&& run) {
    auto c = pool_.acquire();
    if (!c) return fail_with(c.error());
    auto transaction = Transaction::begin(**c);
    if (!transaction) return fail_with(transaction.error());
    auto rows = run(**c);
    if (!rows) return fail_with(rows.error());
    ArrayParam dependents(Oid::kInt8), rejoining(Oid::kText);
    bool any = false;
    bool any_rejoining = false;
    for (int r = 0; r < rows->size(); ++r) {
      if (!rows->is_null(r, 2)) {
        rejoining.add(rows->text(r, 2));
        any_rejoining = true;
      }
      if (!rows->boolean(r, 1)) continue;
      dependents.add(pg::encode_int8(rows->int8(r, 0)));
      any = true;
    }
    if (any_rejoining) {
      using R = pg::sql::rejoin_groups;
      if (auto ok =
              (*c)->exec(sql_.rejoin_groups, Params(R::param_count).array(R::names, rejoining));
          !ok) {
        return fail_with(ok.error());
      }
    }
    if (any) {
      auto locked =
          (*c)->exec(sql_.resolve_wait_lock, Params(pg::sql::resolve_wait_lock::param_count));
      if (!locked) return fail_with(locked.error());
      using W = pg::sql::rewait;
      if (auto ok = (*c)->exec(sql_.rewait, Params(W::param_count).array(W::ids, dependents));
          !ok) {
        return fail_with(ok.error());
      }
      using N = pg::sql::renotify;
      if (auto ok = (*c)->exec(sql_.renotify, Params(N::param_count).array(N::ids, dependents));
          !ok) {
        return fail_with(ok.error());
      }
    }
    if (auto ok = transaction->commit(); !ok) return fail_with(ok.error());
    return rows;
  }

  // A job enqueued after others, inside the caller's transaction (core/dependencies.hpp
  // decides its state).
  Result<JobId> enqueue_dependent(pg::Connection& c, const NewJob& job) {
    if (job.unique_key) {
      // An open unique window hands back its job too: an error here, as a live holder is.
      ArrayParam queues(Oid::kText), keys(Oid::kText);
      queues.add(job.queue);
      keys.add(*job.unique_key);
      using W = pg::sql::find_unique_windows;
      auto open =
          c.exec(sql_.find_unique_windows,
                 Params(W::param_count).array(W::queues, queues).array(W::unique_keys, keys));
      if (!open) return fail_with(open.error());
      if (open->size() > 0 && !open->is_null(0, 2)) {
        return fail_with(unique_key_held_by_error(open->int8(0, 2)));
      }
    }
    std::map<JobId, JobState> found;
    if (!job.after.empty()) {
      ArrayParam ids(Oid::kInt8);
      for (JobId id : job.after) ids.add(pg::encode_int8(id));
      // Locks the unfinished ones, then reads every state (statements.sql says why in this
      // order).
      using L = pg::sql::lock_dependencies;
      auto rows = c.exec(sql_.lock_dependencies, Params(L::param_count).array(L::ids, ids));
      if (!rows) return fail_with(rows.error());
      for (int r = 0; r < rows->size(); ++r) {
        found.emplace(rows->int8(r, 0),
                      parse_job_state(rows->text(r, 1)).value_or(JobState::kAvailable));
      }
    }
    std::vector<std::optional<JobState>> states;
    for (JobId id : job.after) {
      auto it = found.find(id);
      states.push_back(it == found.end() ? std::nullopt : std::optional(it->second));
    }
    std::optional<GroupWait> group_wait;
    if (job.after_group) {
      using G = pg::sql::find_group;
      auto row = c.exec(sql_.find_group, Params(G::param_count).text(G::name, *job.after_group));
      if (!row) return fail_with(row.error());
      if (row->size() == 0) return fail_with(no_such_group_error(*job.after_group));
      group_wait = GroupWait{row->int8(0, 0), row->int8(0, 1) > 0};
    }
    auto plan = plan_dependent(job.after, states, group_wait);
    if (!plan) return fail_with(plan.error());
    if (job.group) {
      using J = pg::sql::join_group;
      if (auto ok = c.exec(sql_.join_group, Params(J::param_count).text(J::name, *job.group));
          !ok) {
        return fail_with(ok.error());
      }
    }
    using I = pg::sql::insert_dependent;
    Params params(I::param_count);
    params.text(I::queue, job.queue)
        .text(I::payload, job.payload)
        .int4(I::priority, job.priority)
        .optional(I::run_at, job.run_at, pg::encode_timestamptz)
        .int4(I::max_attempts, job.max_attempts)
        .optional(I::unique_key, job.unique_key, [](const std::string& k) { return k; })
        .text(I::state, to_string(plan->state))
        .int4(I::waiting_for, plan->waiting_for)
        .int8(I::delay_us, job.delay ? job.delay->count() : 0)
        .optional(I::last_error, plan->last_error, [](const std::string& e) { return e; })
        .optional(I::group_name, job.group, [](const std::string& g) { return g; });
    auto inserted = c.exec(sql_.insert_dependent, params);
    if (!inserted) return fail_with(inserted.error());
    if (inserted->size() == 0) {
      using H = pg::sql::unique_holder;
      auto holder = c.exec(
          sql_.unique_holder,
          Params(H::param_count).text(H::queue, job.queue).text(H::unique_key, *job.unique_key));
      if (!holder) return fail_with(holder.error());
      return fail_with(unique_key_held_by_error(holder->size() > 0 ? holder->int8(0, 0) : 0));
    }
    const JobId id = inserted->int8(0, 0);
    ArrayParam depends_on(Oid::kInt8), met(Oid::kBool);
    for (const auto& [dependency, is_met] : plan->edges) {
      depends_on.add(pg::encode_int8(dependency));
      met.add(is_met ? std::string_view("\x01", 1) : std::string_view("\x00", 1));
    }
    if (plan->edges.empty()) return id;
    using E = pg::sql::insert_dependencies;
    if (auto ok = c.exec(sql_.insert_dependencies, Params(E::param_count)
                                                       .int8(E::job_id, id)
                                                       .array(E::depends_on, depends_on)
                                                       .array(E::met, met));
        !ok) {
      return fail_with(ok.error());
    }
    return id;
  }

  // cancel or delete: ids in, the changed ids out.
  Result<std::vector<JobId>> change(const pg::Statement& statement, std::span<const JobId> ids) {
    using S = pg::sql::cancel;
    static_assert(S::param_count == pg::sql::delete_finished::param_count &&
                  S::ids == pg::sql::delete_finished::ids);
    ArrayParam array(Oid::kInt8);
    for (JobId id : ids) array.add(pg::encode_int8(id));
    auto c = pool_.acquire();
    if (!c) return fail_with(c.error());
    auto rows = (*c)->exec(statement, Params(S::param_count).array(S::ids, array));
    if (!rows) return fail_with(rows.error());
    return in_request_order(ids, *rows);
  }

  // Constant after construction.
  const pg::SchemaName schema_;
  const Duration poll_interval_;  // used when the listener polls()
  const pg::Sql sql_;
  // Where this process' next lease of each queue starts in each lane. Guarded by
  // frontiers_mu_.
  std::mutex frontiers_mu_;
  // Whether leases read lanes. Internally synchronized.
  pg::LeaseMode mode_;
  std::map<std::string, pg::LeaseFrontier, std::less<>> frontiers_;
  // Answers of wait_for_work's probes that its other waiters may take. Internally
  // synchronized.
  pg::DueNowAnswers due_now_;
  // Internally synchronized.
  pg::ConnectionPool pool_;
  pg::Listener listener_;
};

}  // namespace

Result<std::unique_ptr<Engine>> open_postgres_engine(const DatabaseUrl& url,
                                                     const QueueOptions& options) {
  auto it = url.params.find("schema");
  auto schema = pg::SchemaName::parse(it == url.params.end() ? "readpast" : it->second);
  if (!schema) {
    return fail_with(
        Error::invalid_argument("bad URL '" + url.redacted + "': " + schema.error().message));
  }
  auto config = pg::make_connection_config(url);
  if (!config) return fail_with(config.error());
  auto settings = engine_settings(url, *config);
  if (!settings) return fail_with(settings.error());
  auto engine = std::make_unique<PostgresEngine>(std::move(*schema), std::move(*config),
                                                 std::move(*settings), options.logger);
  if (auto ok = engine->connect(); !ok) return fail_with(ok.error());
  return std::unique_ptr<Engine>(std::move(engine));
}

const EngineEntry& postgres_engine_entry() {
  static constexpr EngineEntry kPostgres{"postgres", open_postgres_engine};
  return kPostgres;
}

}  // namespace readpast::detail
