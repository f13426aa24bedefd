#pragma once
// Where a lease starts in each lane of a queue (PostgreSQL; docs/postgres-storage.md,
// section 6). A lane is a (queue, priority) pair; within it jobs are handed out in (run_at,
// id) order. While another session holds an old snapshot, the head of each lane fills with
// entries of jobs already leased that no vacuum may remove, and a lease that starts at the
// head walks all of them. A lease that starts at the lane's *frontier* walks only what was
// leased since.
//
// The frontier is a key below which no job can be visible, available and unlocked to a lease
// that starts now. It comes from pairs of earlier leases (i, j) of this process, both reported
// before the new lease starts, where j *settles* i: j's snapshot xmin >= i's snapshot xmax, so
// every transaction that i could not see had ended when j took its snapshot. Then, for a lane
// that both read, every job below
//     min(covered_i, (leased_at_i - delta, 0), covered_j)
// is accounted for (covered_x: how far lease x's scan went in the lane, (leased_at_x, max) when
// it read the lane to its end):
//   - a job i could see was taken by i, or was locked by a lease that took it;
//   - a job of a transaction running at i's snapshot was visible to j, and j took it likewise;
//   - a job of a transaction that had not written at i's snapshot is dated (run_at) no earlier
//     than leased_at_i - delta, unless that transaction marked it in lane_marks: the triggers
//     mark every job dated more than delta before they run, which is after the job's write and
//     so after i's snapshot (migration 22). The lease reads those marks (xid >= i's xmax:
//     marks_from) and starts no later than the oldest key they name.
// What the argument does not cover: rows whose locker rolled back (a lease that failed, a
// session that locked available rows and let go), and the server's clock stepping back.
// Scans behind the frontiers hand those out:
//   - a *look-back scan* every kHeadScanFirst to kHeadScanAtMost reads each lane from where
//     its frontier stood when the scan before the previous one started. A row that a frontier
//     passed while it was locked, and whose lock went at time t, was passed after t less the
//     lock's length; a lock held for less than the interval between the two scans before t was
//     therefore passed after the earlier of them started, above the key this scan starts
//     from. Leases hold their locks for the length of one statement. So under a held snapshot
//     a look-back scan walks what two intervals of leases left, not everything since the hold
//     began, as a scan from the head does (up to 15 s after 10 minutes at 35,000 jobs/s,
//     docs/benchmarks.md, run 38);
//   - a *head scan* (every lane from its head) for the first scans of a hold, for the next lease
//     after one of this process failed, when the engine asks (the holder has ended), and every
//     kFullHeadScanEvery for locks held longer and for the clock.
//
// Thread safety: none; the engine guards each queue's LeaseFrontier with its mutex.
#include <chrono>
#include <compare>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <readpast/job.hpp>
#include <readpast/time.hpp>
#include <vector>

namespace readpast::detail::pg {

// A position in a lane's hand-out order.
struct LaneKey {
  TimePoint run_at{};
  JobId id = 0;
  auto operator<=>(const LaneKey&) const = default;
};

// Where one lane's scan starts, and the marks it must read (xid >= marks_from).
struct LaneStart {
  int priority = 0;
  LaneKey from;
  std::uint64_t marks_from = 0;
  // When the lease whose xmax is marks_from came back: the marks a frontier needs are those of
  // transactions that had not written when that lease took its snapshot, so a frontier used
  // no longer than kBasisAtMost after it needs no mark older than that (migration 11 deletes
  // marks an hour old).
  std::chrono::steady_clock::time_point basis_at{};
};

// What the next lease is told: read the queue from its head (every lane, registered or
// not), or each lane from its start here (a lane not listed: from its head).
struct LeasePlan {
  bool from_head = false;
  bool look_back = false;  // the lanes' starts are where the frontiers stood two scans ago
  std::vector<LaneStart> lanes;
};

// What a lease statement reported about itself, with the jobs it took. A lease that took
// nothing reports nothing (it may have read nothing: a paused or limited queue).
struct LeaseReport {
  std::uint64_t snapshot_xmin = 0;
  std::uint64_t snapshot_xmax = 0;
  TimePoint leased_at{};
  bool from_head = false;  // as planned
  bool look_back = false;  // as planned
  int max_jobs = 0;
  std::vector<std::pair<int, LaneKey>> taken;  // (priority, key) of each job leased
};

class LeaseFrontier {
 public:
  // How far a job may be dated before a trigger that runs after its write and still not mark
  // it (migration 22; 100 ms in migrations 11-21). The SQL's interval and this constant are
  // the same figure: a smaller one here would pass jobs nobody marked. Under a held snapshot
  // every lease walks the entries of the jobs leased in the last kDelta, so it is small
  // (docs/benchmarks.md, run 58); statements slower than it write marks.
  static constexpr auto kDelta = std::chrono::milliseconds(10);
  // Scans behind the frontiers (look-back or head scans) come every kHeadScanFirst, doubling
  // up to kHeadScanAtMost while they find nothing the frontiers had passed, back to
  // kHeadScanFirst when one does. A head scan walks everything a held snapshot keeps, so it is
  // rare: the first two scans, then every kFullHeadScanEvery, and at once after a lease of
  // this process failed or when the engine asks (head_scan_now).
  static constexpr auto kHeadScanFirst = std::chrono::seconds(5);
  static constexpr auto kHeadScanAtMost = std::chrono::seconds(10);
  static constexpr auto kFullHeadScanEvery = std::chrono::minutes(10);
  // Leases remembered per lane; an older one no longer settles or gets settled.
  static constexpr std::size_t kRemembered = 32;
  // How long a lane's frontier is used after the lease it rests on (LaneStart::basis_at); a
  // lane whose frontier no later lease has renewed (a lane the batches have not reached) is
  // read from its head after that.
  static constexpr auto kBasisAtMost = std::chrono::minutes(10);

  // The plan for a lease starting at `now`: every lane with a frontier, or, when a scan
  // behind the frontiers is due, the frontiers of two scans ago (look-back) or none (a head
  // scan).
  LeasePlan plan(std::chrono::steady_clock::time_point now);
  // A lease planned by plan() came back at `now` with `report`. The lanes it read are those
  // of the jobs it took and every lane an earlier lease took from: the statement reads every
  // lane the database lists, in priority order, until the batch is full, and lanes are never
  // removed.
  void record(const LeaseReport& report, std::chrono::steady_clock::time_point now);
  // A lease of this process failed: rows it had locked may be behind the frontiers now.
  void lease_failed() {
    head_scan_now();
    head_scan_every_ = kHeadScanFirst;
  }
  // The next lease reads from the head.
  void head_scan_now() { head_scan_due_ = true; }
  // Rescue of expired leases: the expiry from which the next rescue reads the queue's running
  // jobs (nullopt: all of them). A rescue that found every expired lease up to some time
  // proves nothing about a lease committed after it with an earlier expiry; those are leases
  // whose statement started before the rescue (their expiry is their start plus their
  // duration), so a margin of kRescueMargin behind the previous rescue's start covers all
  // but statements that took longer than their lease's duration plus that margin to commit,
  // and a full rescue every kFullRescueEvery finds those too, that much late at most. Under a
  // held snapshot a rescue reads the entries of the leases whose expiry fell in that margin
  // and the interval since the last rescue, a full rescue every entry the snapshot keeps (up
  // to 6 s after 10 minutes at 35,000 jobs/s, run 38): hence rare. The database's clock is
  // read from the leases' reports.
  static constexpr auto kRescueMargin = std::chrono::seconds(1);
  static constexpr auto kFullRescueEvery = std::chrono::minutes(10);
  std::optional<TimePoint> rescue_plan(std::chrono::steady_clock::time_point now);
  // The rescue planned at `planned` read every expired lease from its start on.
  void rescue_done(std::chrono::steady_clock::time_point planned);

  // The earliest run_at at or after which an available job may still be found in any lane,
  // for the probe of when the next job is due; nullopt when some lane has no frontier. (Jobs a
  // head scan would find behind the frontiers are handed out by the next head scan, not
  // announced by this probe: an unbounded probe by every idle worker is the walk that a held
  // snapshot makes ruinous.)
  std::optional<TimePoint> earliest_start() const;

 private:
  // One lease as a lane saw it.
  struct Seen {
    std::uint64_t xmin = 0;
    std::uint64_t xmax = 0;
    std::chrono::steady_clock::time_point at{};  // when the lease came back
    LaneKey covered;                             // the scan went this far
    LaneKey bound;                               // min(covered, (leased_at - kDelta, 0))
  };
  struct Lane {
    std::deque<Seen> seen;
    std::optional<LaneStart> frontier;
  };
  void offer(Lane& lane, int priority, const Seen& i, const Seen& j);

  // The database's clock at a steady time of this process (from the last lease's report).
  std::optional<TimePoint> database_time(std::chrono::steady_clock::time_point at) const;

  std::map<int, Lane> lanes_;  // every lane a lease of this process took a job from
  bool head_scan_due_ = true;
  std::chrono::steady_clock::duration head_scan_every_ = kHeadScanFirst;
  std::chrono::steady_clock::time_point last_head_scan_{};       // of either kind
  std::chrono::steady_clock::time_point last_full_head_scan_{};  // from the head
  // The frontiers as they stood when each of the last two scans started, the older first:
  // where the next look-back scan starts.
  std::deque<std::vector<LaneStart>> scan_starts_;
  std::optional<std::pair<TimePoint, std::chrono::steady_clock::time_point>> clock_;
  std::optional<TimePoint> rescued_up_to_;  // database time of the last full read's start
  std::chrono::steady_clock::time_point last_full_rescue_{};
};

}  // namespace readpast::detail::pg
