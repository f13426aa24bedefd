#pragma once
// How the PostgreSQL engine leases: from the head of the queue, or lane by lane from the
// frontiers of lease_frontier.hpp (docs/postgres-storage.md, section 6).
//
// From the head is the cheapest lease while vacuum keeps up: each lease reads the queue's first
// entries in hand-out order, and those are live jobs. While another session holds an old
// snapshot (a long query, an open REPEATABLE READ transaction, pg_dump, a standby's feedback),
// vacuum may remove no version that snapshot could see, and the head fills with entries of jobs
// already leased and settled: every lease walks all of them (5% of clean throughput after a
// 10-minute hold, docs/benchmarks.md). Lanes read from frontiers pass only what was leased
// since, but cost more per lease while the head is clean (run 36). So the engine reads how old
// the oldest snapshot is (sql/statements.sql, oldest_snapshot) every kProbeEvery, and leases from
// lanes while one is held:
//   - on, once the same oldest snapshot has held for kHeldFor with kHeldAge or more
//     transactions assigned since it was taken: both, so that neither a burst of writes past a
//     short transaction nor a quiet database with an old idle reader switches;
//   - off, once the oldest snapshot is younger than kHeldAge transactions (the holder ended)
//     and a lease from the head that started after that took less than kCleanHeadScan: until
//     vacuum has removed what the hold kept, the head is as long as it was (run 37: 250 jobs/s
//     for the first minute after a 10-minute hold, with leases from the head at once).
// The head grows without a hold too: entries of jobs leased are marked dead by the scans that
// pass them, but stay in their pages until vacuum, which autovacuum runs about once a minute.
// While a backlog drains, leases from the head read more pages each second (run 39: the clean
// backlog regime fell from 37,600 to 13,200 jobs/s each minute, where the lanes held 40,000).
// So the engine also leases a queue's jobs from lanes for kLongHeadFor once a lease of that
// queue from the head read more than kLongHeadPages pages of jobs_lease_idx (sql/statements.sql,
// lease) beyond the batch's own, then tries its head again. A long head
// is the queue's own (its leases left it), so the other queues of the process keep leasing
// from their heads; a hold lengthens every queue's head, so it turns the lanes on for all. That
// many pages hold some 30,000 dead entries (about 200 a page) and cost a lease about 0.1 ms: in
// run 40, 256 pages of the two indexes the lease then walked, jobs_due_idx's head too, cost
// 0.15 ms, several times what a lease by lane costs more than one from a clean head, and more
// than a short drain of a fresh queue leaves (the peer harness' 20,000 jobs: about 175 pages of
// the two at its end). Since schema 16 the lease reads one index's head, once. Rescue and the
// probe of when the next job is due start from the frontiers too while the lanes are on. The
// settles are the same in both modes (sql/statements.sql, complete).
//
// Thread safety: every member may be called from any thread.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "readpast/error.hpp"

namespace readpast::detail::pg {

// The URL parameter lease_lanes (docs/postgres.md).
enum class LeaseLanes {
  kAuto,    // from lanes while a snapshot is held (LeaseMode), from the head otherwise
  kAlways,  // from lanes
  kNever,   // from the head
};
Result<LeaseLanes> parse_lease_lanes(std::string_view text);

class LeaseMode {
 public:
  static constexpr auto kProbeEvery = std::chrono::milliseconds(500);
  static constexpr auto kHeldFor = std::chrono::seconds(1);
  static constexpr std::int64_t kHeldAge = 1000;
  static constexpr auto kCleanHeadScan = std::chrono::milliseconds(50);
  static constexpr std::int64_t kLongHeadPages = 150;
  static constexpr auto kLongHeadFor = std::chrono::seconds(30);

  explicit LeaseMode(LeaseLanes setting)
      : setting_(setting), all_lanes_(setting == LeaseLanes::kAlways) {}

  // Whether leases of `queue` read lanes now.
  bool lanes(std::string_view queue) const;
  // Whether the lanes are on for `queue` because its head is long (not for a hold).
  bool long_head(std::string_view queue) const;

  // True for one caller per kProbeEvery under kAuto (it then probes and calls observe), never
  // otherwise.
  bool claim_probe(std::chrono::steady_clock::time_point now);

  // What observe() or head_walked() changed:
  //   - kOn: the lanes turned on for a hold, for every queue: the caller starts the lanes'
  //     frontiers afresh (their leases from the head first), but for the queues long_head()
  //     names, whose lanes were on already;
  //   - kOnForQueue: the lanes turned on for the one queue head_walked() was told of: the
  //     caller starts its frontiers afresh;
  //   - kYoung: the holder ended while the lanes are on for a hold: the caller makes a head
  //     scan due, whose time says whether the head is short again.
  enum class Change { kNone, kOn, kOnForQueue, kYoung };
  // What the probe read at `now`: the oldest snapshot's age in transactions and its xmin
  // (nullopt: none).
  Change observe(std::int64_t age, std::optional<std::int64_t> xmin,
                 std::chrono::steady_clock::time_point now);

  // A lease from the head (a head scan of lease_frontier.hpp) started at `start` and took
  // `took`: how long the head is now.
  void head_scan_took(std::chrono::steady_clock::time_point start,
                      std::chrono::steady_clock::duration took);

  // A lease of `queue` from the head of up to `max_jobs` jobs (sql/statements.sql, lease) read
  // `pages` pages of its indexes, at `now`.
  Change head_walked(std::string_view queue, std::int64_t pages, int max_jobs,
                     std::chrono::steady_clock::time_point now);

 private:
  const LeaseLanes setting_;
  // held_ (or kAlways), for lanes() to read without the lock.
  std::atomic<bool> all_lanes_;
  // long_head_since_.size(), for lanes() to skip the lock while no queue has a long head.
  std::atomic<std::size_t> long_heads_{0};
  std::atomic<std::chrono::steady_clock::rep> next_probe_{0};
  // The oldest snapshot seen and since when it has been the oldest. Guarded by mu_.
  mutable std::mutex mu_;
  std::optional<std::int64_t> oldest_;
  std::chrono::steady_clock::time_point oldest_since_{};
  // Whether the lanes are on for a held snapshot.
  bool held_ = false;
  // The queues whose lanes are on for a long head, and since when.
  std::map<std::string, std::chrono::steady_clock::time_point, std::less<>> long_head_since_;
  // Since when the lanes are on for a hold with the oldest snapshot young again (nullopt: held,
  // or off).
  std::optional<std::chrono::steady_clock::time_point> young_since_;
  // Whether a head scan that started since young_since_ was short.
  bool clean_head_seen_ = false;
  void turn_off_when_clean();  // under mu_
  // Stores held_ in all_lanes_ and says whether the lanes turned on for it. Under mu_.
  Change publish();
};

}  // namespace readpast::detail::pg
