// readpast/options.hpp — options of a Queue and of the calls that take more than an id.
//
// Thread-safety: plain values; distinct objects may be used from different threads freely.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "readpast/job.hpp"
#include "readpast/time.hpp"

namespace readpast {

// Exponential backoff with jitter and a cap, for failed attempts:
//   delay(n) = min(cap, base * 2^(n-1)), then scaled by a random factor in [1 - jitter, 1]
// where n is the attempt that just failed (1 for the first).
struct Backoff {                            // base <= cap <= 100 years
  Duration base = std::chrono::seconds(1);  // Default: 1s
  Duration cap = std::chrono::hours(1);     // Default: 1h
  double jitter = 0.2;                      // Default: 0.2 (0 = none, 1 = full jitter)

  // The delay before attempt n + 1 for a random draw r in [0, 1).
  Duration delay_after(int failed_attempt, double r) const;
  Status validate() const;
};

// How long finished jobs are kept before workers delete them (in small batches, one worker
// at a time per queue; see Queue::apply_retention and readpast::Worker).
struct Retention {
  // Zero deletes a job when it completes, instead of keeping it as succeeded.
  Duration succeeded = std::chrono::hours(24);  // Default: 24h
  // nullopt keeps them until purged by hand.
  std::optional<Duration> cancelled = std::chrono::hours(24 * 7);  // Default: 7 days
  std::optional<Duration> dead = std::chrono::hours(24 * 7);       // Default: 7 days

  Status validate() const;
};

enum class LogLevel { kDebug, kInfo, kWarn, kError };
std::string_view to_string(LogLevel level) noexcept;

// One log event: a line for humans, and the same facts as fields for machines (job_id,
// queue, attempt, worker, error, ...), which a JSON log format prints one by one.
struct LogRecord {
  LogLevel level = LogLevel::kInfo;
  std::string message;
  std::vector<std::pair<std::string, std::string>> fields;
};

// Receives the library's log events; the library itself never prints. Called from the
// library's threads: it must be safe to call from several threads at once.
using Logger = std::function<void(const LogRecord&)>;

struct QueueOptions {
  // Payloads larger than this are rejected before anything reaches the database.
  std::size_t max_payload_bytes = 16u << 20;  // Default: 16 MiB
  // How long finished jobs are kept, and one policy per queue name that overrides it.
  Retention retention;
  std::map<std::string, Retention, std::less<>> queue_retention;
  // The default backoff, and one per queue name that overrides it.
  Backoff backoff;
  std::map<std::string, Backoff, std::less<>> queue_backoff;
  // How often lease() first returns jobs with expired leases to available (or dead).
  Duration rescue_interval = std::chrono::seconds(1);  // Default: 1s
  // Create or upgrade the schema when opening. Default: false (run `readpast init`).
  bool init_schema = false;
  // Only read: every call that writes fails. SQLite opens the file read-only, so that a
  // file on a read-only path, in a read-only directory or on a read-only file system can
  // still be read (the servers' engines leave permissions to the server). Not with
  // init_schema. Default: false.
  bool read_only = false;
  // Where warnings go (e.g. "database busy, retrying"). Default: nowhere.
  Logger logger;
  // The counters and histograms a Queue records (docs/metrics.md) are added to the
  // database's totals this often: by the first settling call after the interval, and by
  // every flush_metrics(). Zero: this Queue records none. Default: 10s.
  Duration metrics_interval = std::chrono::seconds(10);
};

// What lease takes. Default: one job, 30s lease.
struct LeaseRequest {
  std::string queue;
  std::string worker_id;
  int max_jobs = 1;  // 1 to 10,000
  Duration lease_duration = std::chrono::seconds(30);
};

// Options of fail(). retry_after overrides the backoff; backoff overrides the queue's.
struct FailOptions {
  std::optional<Duration> retry_after;
  std::optional<Backoff> backoff;
  // The job can never succeed: it goes dead now, whatever attempts it has left.
  bool no_retry = false;  // Default: false
};

// One item of Queue::fail_batch.
struct FailRequest {
  JobId id = 0;
  LeaseToken token;
  std::string error;
  FailOptions options;
};

// Where a failed job went.
enum class FailOutcome { kRetrying, kDead };

// The order of a list, by id (ids increase with enqueueing).
enum class ListOrder { kOldestFirst, kNewestFirst };

// The derived states of docs/design.md, each a part of one stored state:
//   kScheduled  available with run_at still in the future;
//   kRetrying   available with attempts > 0 (failed at least once, waiting for its next try);
//   kExpired    running with its lease passed (no rescue has moved it yet).
enum class ListView { kScheduled, kRetrying, kExpired };
std::string_view to_string(ListView view) noexcept;  // "scheduled", "retrying", "expired"
std::optional<ListView> parse_list_view(std::string_view text) noexcept;

// Bounds of ListRequest::search and ListRequest::scan_limit.
inline constexpr std::size_t kMaxListSearchBytes = 1024;
inline constexpr std::int64_t kMaxListScanLimit = 1'000'000'000;

struct ListRequest {
  std::optional<std::string> queue;  // Default: every queue
  std::optional<JobState> state;     // Default: every state
  // A view implies its stored state: `state`, when given too, must be that one.
  std::optional<ListView> view;  // Default: none
  // Keyset paging, both bounds exclusive: only ids greater than after_id and less than
  // before_id. The page is the first `limit` of that range in `order`.
  std::optional<JobId> after_id;
  std::optional<JobId> before_id;
  ListOrder order = ListOrder::kOldestFirst;  // Default: oldest first, as it always was
  // Only jobs whose payload, leased_by (worker), unique_key or last_error contains this text,
  // ASCII letters matched in any case; taken literally (no wildcards). 1 to 1024 bytes.
  std::optional<std::string> search;
  int limit = 100;
  // With a view, a search, or a state without a queue, the rows that match may be rare
  // and no index range holds just them, so a page could read the whole table to fill
  // itself. With scan_limit, Queue::list_page looks at no more than this many consecutive
  // ids (from the bound it starts at, in `order`), so no request reads more than that many
  // rows, and says where it stopped (JobPage::resume_id). Ignored for other requests (no
  // filter, a queue, a queue and a state: index ranges). Default: no bound.
  std::optional<std::int64_t> scan_limit;
};

// One page of Queue::list_page.
struct JobPage {
  std::vector<Job> jobs;  // in the request's order
  // Where to go on: the last id this page covered, in the request's order; every job
  // between the request's starting bound and this id that matches is on the page. Pass it
  // as the next request's after_id (oldest first) or before_id (newest first). nullopt when
  // the page reached the end of the range.
  std::optional<JobId> resume_id;
};

struct PurgeRequest {
  std::string queue;
  JobState state = JobState::kSucceeded;  // succeeded, dead or cancelled only
  std::optional<Duration> older_than;     // measured from finished_at
  std::optional<int> limit;               // delete at most this many (small batches)
};

// A rate limit: at most `count` leases of the queue's jobs in any window of `window` (a
// sliding window, not fixed buckets). Written "N/DUR", e.g. "100/1s", "5000/1m".
struct RateLimit {
  std::int64_t count = 0;
  Duration window{0};
  friend bool operator==(const RateLimit&, const RateLimit&) = default;
};

// A queue's global limits, over every worker on every host (Queue::set_limits,
// docs/workflows.md "Global limits"). A limit never makes a lease wait: the lease returns
// fewer jobs, or none.
struct QueueLimits {
  // At most this many jobs of the queue running at once (expired leases count until
  // rescued).
  std::optional<std::int64_t> running{};
  std::optional<RateLimit> rate{};
  bool empty() const noexcept { return !running && !rate; }
  friend bool operator==(const QueueLimits&, const QueueLimits&) = default;
};

// The largest running limit and rate count readpast accepts: a rate keeps one row per
// lease it counts (docs/schema.md), so its count is bounded.
inline constexpr std::int64_t kMaxRunningLimit = 1'000'000'000;
inline constexpr std::int64_t kMaxRateCount = 100'000;

struct QueueStats {
  std::string queue;
  std::int64_t available = 0;  // includes scheduled
  std::int64_t scheduled = 0;  // available with run_at in the future
  std::int64_t running = 0;    // includes expired
  // Running jobs whose lease has passed and that no rescue has moved yet (their worker is
  // probably gone; Queue::rescue_expired, `readpast rescue`).
  std::int64_t expired = 0;
  std::int64_t succeeded = 0;
  std::int64_t dead = 0;
  std::int64_t cancelled = 0;
  // Enqueued after jobs that have not all succeeded yet (NewJob::after).
  std::int64_t waiting = 0;
  // Age of the oldest available job whose run_at has come; zero when there is none.
  Duration oldest_available_age{0};
  // Paused queues hand out no jobs (Queue::pause); a paused queue is listed even when it
  // holds no job.
  bool paused = false;
  // The queue's global limits (empty when it has none); a queue with limits is listed
  // even when it holds no job.
  QueueLimits limits{};
};

// The jobs of a queue that finished recently, for rates: how many reached succeeded or dead
// since a time (jobs deleted on completion, with a zero retention, are not counted).
struct FinishedCounts {
  std::string queue;
  std::int64_t succeeded = 0;
  std::int64_t dead = 0;
};

// The oldest transaction or snapshot that keeps the database from reclaiming the space that
// leased, settled and moved jobs leave behind (Queue::storage_health): on PostgreSQL what
// vacuum's horizon waits for, on MariaDB what InnoDB's purge waits for. While one is held for
// minutes, dead row versions pile up in every table (docs/postgres-storage.md, section 1).
struct SnapshotHolder {
  // "session", "replication slot" or "prepared transaction" (PostgreSQL); "connection"
  // (MariaDB: the connection whose transaction is the oldest).
  std::string kind;
  std::optional<std::int64_t> pid;  // its server process (PostgreSQL) or connection id (MariaDB)
  // Who it is: PostgreSQL's application_name, MariaDB's user@host, a slot's name; empty when
  // the database does not say (another role's session without pg_read_all_stats).
  std::string client;
  std::string state;  // e.g. "idle in transaction", "active"; empty when not known
  // How long its transaction has been open; nullopt when the database does not say (a
  // replication slot, a walsender's feedback, another role's session).
  std::optional<Duration> age;
  // Transactions started since its snapshot (PostgreSQL's age(xmin)); nullopt on MariaDB.
  std::optional<std::int64_t> transactions;
};

// What a table of the engine's storage takes on disk, indexes included (PostgreSQL: one row
// per table, each segment of a ring its own; MariaDB: the estimate of information_schema;
// SQLite: the database file and its write-ahead log).
struct StorageSize {
  std::string relation;
  std::int64_t bytes = 0;
};

struct StorageHealth {
  // nullopt: nothing holds an old snapshot, or the engine cannot tell (SQLite, whose readers
  // do not say who they are; a held reader shows as a growing "wal").
  std::optional<SnapshotHolder> oldest_snapshot;
  std::vector<StorageSize> sizes;  // ordered by relation
};

// One stored metric series (Queue::metrics): the sum over every process that flushed it of
// a count, or for a histogram's _sum of a time in microseconds (integers add exactly).
struct MetricSample {
  std::string name;         // e.g. "readpast_jobs_completed_total"
  std::string queue;        // empty when the series has no queue label
  std::string label;        // the series' other label ("le", "kind"); empty when none
  std::string label_value;  // e.g. "0.25" or "+Inf" for le
  std::int64_t value = 0;
};

// A worker process as it last reported itself (Queue::report_worker); the dashboard's
// workers page.
struct WorkerProcess {
  std::string name;  // the worker id its leases carry (leased_by)
  std::string host;
  std::int64_t pid = 0;
  std::vector<std::string> queues;
  int threads = 0;
  TimePoint started_at{};    // the database's clock at its first report
  TimePoint heartbeat_at{};  // the database's clock at its latest report
};

// A periodic job: at every tick of `spec`, one job with this payload is enqueued — once,
// however many workers on however many hosts run the schedule (see Queue::enqueue_due).
struct Schedule {
  std::string name;   // like a queue name: [A-Za-z0-9][A-Za-z0-9_.-]{0,127}
  std::string queue;  // where the jobs go
  // "every DUR" (ticks at multiples of DUR since the Unix epoch, e.g. "every 30s"), or a
  // cron expression in UTC with 5 fields (minute hour day-of-month month day-of-week) or 6
  // (seconds first): "*/5 * * * *", "0 30 9 * * mon-fri"; or in a time zone with a
  // CRON_TZ= prefix: "CRON_TZ=Europe/Berlin 0 9 * * *". See docs/schedules.md.
  std::string spec;
  std::string payload;
  int priority = kDefaultPriority;
  int max_attempts = kDefaultMaxAttempts;
  // Read only: when the schedule was created, and its latest tick that was enqueued (the
  // ticks up to its creation count as done: the first job comes at the next tick).
  TimePoint created_at{};
  std::optional<TimePoint> last_tick;
  // Read only: the id of the job that last_tick enqueued (nullopt before the first tick).
  // That job may since have been deleted by retention or purge.
  std::optional<JobId> last_job;
};

// A job enqueued for a schedule's tick.
struct ScheduledJob {
  std::string schedule;
  TimePoint tick{};
  JobId id = 0;
};

}  // namespace readpast
