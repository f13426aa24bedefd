#include "lease_frontier.hpp"

#include <algorithm>
#include <limits>

namespace readpast::detail::pg {

namespace {

// The end of a lane read to its end by a lease at `at`: every job due then.
LaneKey read_to_end(TimePoint at) {
  return LaneKey{at, std::numeric_limits<JobId>::max()};
}

}  // namespace

LeasePlan LeaseFrontier::plan(std::chrono::steady_clock::time_point now) {
  LeasePlan plan;
  std::vector<LaneStart> frontiers;
  for (auto& [priority, lane] : lanes_) {
    if (lane.frontier && now - lane.frontier->basis_at > kBasisAtMost) lane.frontier.reset();
    if (lane.frontier) frontiers.push_back(*lane.frontier);
  }
  if (!head_scan_due_ && now - last_head_scan_ < head_scan_every_) {
    plan.lanes = std::move(frontiers);
    return plan;
  }
  // A scan behind the frontiers. Its look-back starts from the frontiers of the scan before
  // the previous one (lease_frontier.hpp says why that suffices); each start is used within
  // kBasisAtMost of the lease it rests on, like a frontier.
  const bool from_head =
      head_scan_due_ || scan_starts_.size() < 2 || now - last_full_head_scan_ >= kFullHeadScanEvery;
  if (from_head) {
    plan.from_head = true;
    last_full_head_scan_ = now;
  } else {
    plan.look_back = true;
    for (const LaneStart& start : scan_starts_.front()) {
      if (now - start.basis_at <= kBasisAtMost) plan.lanes.push_back(start);
    }
  }
  head_scan_due_ = false;
  last_head_scan_ = now;
  scan_starts_.push_back(std::move(frontiers));
  if (scan_starts_.size() > 2) scan_starts_.pop_front();
  return plan;
}

void LeaseFrontier::offer(Lane& lane, int priority, const Seen& i, const Seen& j) {
  if (j.xmin < i.xmax) return;  // j does not settle i
  const LaneKey candidate = std::min(i.bound, j.covered);
  if (!lane.frontier || lane.frontier->from < candidate) {
    lane.frontier = LaneStart{priority, candidate, i.xmax, i.at};
  } else if (lane.frontier->from == candidate && i.xmax >= lane.frontier->marks_from) {
    // The same key from a later lease: fewer marks to read.
    lane.frontier->marks_from = i.xmax;
    lane.frontier->basis_at = std::max(lane.frontier->basis_at, i.at);
  }
}

void LeaseFrontier::record(const LeaseReport& report, std::chrono::steady_clock::time_point now) {
  if (report.from_head || report.look_back) {
    // Did it find a job behind a frontier, or in a lane without one (unregistered, or new to
    // this process)? Then such jobs occur: look often; else less.
    bool behind = false;
    for (const auto& [priority, key] : report.taken) {
      auto it = lanes_.find(priority);
      behind =
          behind || it == lanes_.end() || !it->second.frontier || key <= it->second.frontier->from;
    }
    head_scan_every_ = behind ? std::chrono::steady_clock::duration(kHeadScanFirst)
                              : std::min<std::chrono::steady_clock::duration>(head_scan_every_ * 2,
                                                                              kHeadScanAtMost);
  }
  if (report.taken.empty()) return;
  clock_.emplace(report.leased_at, now);
  for (const auto& taken : report.taken) lanes_.try_emplace(taken.first);
  const bool full = std::ssize(report.taken) >= report.max_jobs;
  // Lanes are read in priority order and a full batch stops in the last lane it took from:
  // the lanes before it were read to their end, that one up to its last key, the rest not.
  std::optional<int> last_lane;
  std::optional<LaneKey> last_key;
  if (full) {
    for (const auto& [priority, key] : report.taken) {
      if (!last_lane || priority > *last_lane) {
        last_lane = priority;
        last_key = key;
      } else if (priority == *last_lane) {
        last_key = std::max(*last_key, key);
      }
    }
  }
  const LaneKey dated{report.leased_at - std::chrono::duration_cast<Duration>(kDelta), 0};
  for (auto& [priority, lane] : lanes_) {  // in priority order
    if (last_lane && priority > *last_lane) break;
    const LaneKey covered =
        last_lane && priority == *last_lane ? *last_key : read_to_end(report.leased_at);
    const Seen latest{report.snapshot_xmin, report.snapshot_xmax, now, covered,
                      std::min(covered, dated)};
    // Leases older than kBasisAtMost can no longer give a frontier that plan() would use.
    while (!lane.seen.empty() && now - lane.seen.front().at > kBasisAtMost) lane.seen.pop_front();
    // The new lease as the settling one, as the settled one, and as both (a snapshot with no
    // transaction in flight settles itself).
    for (const Seen& earlier : lane.seen) {
      offer(lane, priority, earlier, latest);
      offer(lane, priority, latest, earlier);
    }
    offer(lane, priority, latest, latest);
    lane.seen.push_back(latest);
    if (lane.seen.size() > kRemembered) lane.seen.pop_front();
  }
}

std::optional<TimePoint> LeaseFrontier::database_time(
    std::chrono::steady_clock::time_point at) const {
  if (!clock_) return std::nullopt;
  return clock_->first + std::chrono::duration_cast<Duration>(at - clock_->second);
}

std::optional<TimePoint> LeaseFrontier::rescue_plan(std::chrono::steady_clock::time_point now) {
  if (!rescued_up_to_ || now - last_full_rescue_ >= kFullRescueEvery) {
    last_full_rescue_ = now;
    return std::nullopt;
  }
  return *rescued_up_to_ - std::chrono::duration_cast<Duration>(kRescueMargin);
}

void LeaseFrontier::rescue_done(std::chrono::steady_clock::time_point planned) {
  if (auto at = database_time(planned)) rescued_up_to_ = at;
}

std::optional<TimePoint> LeaseFrontier::earliest_start() const {
  std::optional<TimePoint> earliest;
  for (const auto& [priority, lane] : lanes_) {
    if (!lane.frontier) return std::nullopt;
    const TimePoint at = lane.frontier->from.run_at;
    if (!earliest || at < *earliest) earliest = at;
  }
  if (lanes_.empty()) return std::nullopt;
  return earliest;
}

}  // namespace readpast::detail::pg
