#include "engines/mariadb/mariadb_dependency_round.hpp"

#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/dependencies.hpp"
#include "engines/mariadb/mariadb_json_array.hpp"
#include "engines/mariadb/mariadb_statements.hpp"

namespace readpast::detail::mariadb {
namespace {

// What a round tells of: a job that succeeded (upto: every dependent), or minus a group's id
// (upto: the last job its release lets go).
struct Source {
  JobId depends_on = 0;
  JobId upto = 0;
};

std::string sources_json(const std::vector<Source>& sources) {
  JsonArray json;
  for (const Source& source : sources) json.pair(source.depends_on, source.upto);
  return std::move(json).finish();
}

std::string ids_json(const std::vector<JobId>& ids) {
  JsonArray json;
  for (JobId id : ids) json.number(id);
  return std::move(json).finish();
}

// Meets up to `budget` unmet edges of `sources` and counts their dependents down, the last
// edge of a waiting dependent making it available; returns how many edges.
Result<int> meet_edges(Connection& c, const std::vector<Source>& sources, int budget) {
  if (sources.empty() || budget <= 0) return 0;
  using P = sql::pick_unmet_edges;
  auto picked =
      c.run<P>(c.params<P>().set(P::sources, sources_json(sources)).set(P::limit, budget));
  if (!picked) return fail_with(picked.error());
  if (picked->empty()) return 0;
  JsonArray edges;
  std::map<JobId, int> met_per_dependent;
  for (std::size_t r = 0; r < picked->size(); ++r) {
    edges.pair(picked->int64(r, 0), picked->int64(r, 1));
    ++met_per_dependent[picked->int64(r, 1)];
  }
  JsonArray counts;
  for (const auto& [dependent, n] : met_per_dependent) counts.pair(dependent, n);
  using M = sql::meet_edges;
  using R = sql::release_counted;
  using D = sql::count_down_counted;
  if (auto ok = c.run<M>(c.params<M>().set(M::edges, std::move(edges).finish())); !ok) {
    return fail_with(ok.error());
  }
  // Under the lock row no other transaction meets edges, so each picked edge was met here,
  // and each dependent counts down by its edges picked.
  const std::string counted = std::move(counts).finish();
  if (auto ok = c.run<R>(c.params<R>().set(R::counts, counted)); !ok) {
    return fail_with(ok.error());
  }
  if (auto ok = c.run<D>(c.params<D>().set(D::counts, counted)); !ok) {
    return fail_with(ok.error());
  }
  return static_cast<int>(picked->size());
}

// Cancels up to `budget` waiting dependents of `failed` (jobs that ended dead or cancelled);
// returns how many it picked.
Result<int> cancel_dependents(Connection& c, const std::vector<JobId>& failed, int budget) {
  if (failed.empty() || budget <= 0) return 0;
  using P = sql::pick_waiting_dependents;
  auto picked = c.run<P>(c.params<P>().set(P::sources, ids_json(failed)).set(P::limit, budget));
  if (!picked) return fail_with(picked.error());
  if (picked->empty()) return 0;
  // In id order, as the count-down's (a std::map): every statement of the round that locks
  // dependents' rows locks them in one order.
  std::map<JobId, JobId> cause_of;
  for (std::size_t r = 0; r < picked->size(); ++r) {
    cause_of.emplace(picked->int64(r, 0), picked->int64(r, 1));
  }
  JsonArray dependents;
  for (const auto& [dependent, cause] : cause_of) dependents.pair(dependent, cause);
  using X = sql::cancel_dependents;
  if (auto ok = c.run<X>(c.params<X>().set(X::dependents, std::move(dependents).finish())); !ok) {
    return fail_with(ok.error());
  }
  return static_cast<int>(picked->size());
}

// The ids of the first column of `rows`.
std::vector<JobId> first_column(const Rows& rows) {
  std::vector<JobId> ids;
  ids.reserve(rows.size());
  for (std::size_t r = 0; r < rows.size(); ++r) ids.push_back(rows.int64(r, 0));
  return ids;
}

}  // namespace

Result<std::int64_t> resolve_round(Connection& c) {
  using N = sql::notified_jobs;
  auto found = c.run<N>(c.params<N>().set(N::limit, kResolveJobs));
  if (!found) return fail_with(found.error());
  std::vector<Source> succeeded;
  std::vector<JobId> failed;
  std::map<JobId, std::string> group_of;
  for (std::size_t r = 0; r < found->size(); ++r) {
    const JobId id = found->int64(r, 0);
    if (parse_job_state(found->text(r, 1)).value_or(JobState::kSucceeded) == JobState::kSucceeded) {
      succeeded.push_back({id, std::numeric_limits<JobId>::max()});
    } else {
      failed.push_back(id);
    }
    if (auto group = found->optional_text(r, 2)) group_of.emplace(id, std::move(*group));
  }
  std::int64_t moved = static_cast<std::int64_t>(found->size());
  int budget = kResolveChunk;  // edges met or cancelled in this round, over all its jobs

  auto met = meet_edges(c, succeeded, budget);
  if (!met) return fail_with(met.error());
  budget -= *met;
  auto cancelled = cancel_dependents(c, failed, budget);
  if (!cancelled) return fail_with(cancelled.error());
  budget -= *cancelled;
  moved += *met + *cancelled;

  // The jobs with nothing left to tell are told; they leave their groups, and a group's last
  // member releases it (its waiting jobs are let go below, or in a later round).
  std::vector<JobId> told;
  if (!succeeded.empty()) {
    using S = sql::sources_done;
    auto done = c.run<S>(c.params<S>().set(S::sources, sources_json(succeeded)));
    if (!done) return fail_with(done.error());
    told = first_column(*done);
  }
  if (!failed.empty()) {
    using F = sql::failed_sources_done;
    auto done = c.run<F>(c.params<F>().set(F::sources, ids_json(failed)));
    if (!done) return fail_with(done.error());
    for (JobId id : first_column(*done)) told.push_back(id);
  }
  if (!told.empty()) {
    using T = sql::told;
    if (auto ok = c.run<T>(c.params<T>().set(T::ids, ids_json(told))); !ok) {
      return fail_with(ok.error());
    }
  }
  std::map<std::string, int> left;  // group name: its members told in this round
  for (JobId id : told) {
    if (auto it = group_of.find(id); it != group_of.end()) ++left[it->second];
  }
  for (const auto& [group, members] : left) {
    using L = sql::leave_group;
    using R = sql::release_group;
    if (auto ok = c.run<L>(c.params<L>().set(L::name, group).set(L::members, members)); !ok) {
      return fail_with(ok.error());
    }
    if (auto ok = c.run<R>(c.params<R>().set(R::name, group)); !ok) return fail_with(ok.error());
  }

  // Groups whose last member finished: the jobs that waited for them are let go.
  using P = sql::pending_groups;
  auto pending = c.run<P>(c.params<P>().set(P::limit, kResolveJobs));
  if (!pending) return fail_with(pending.error());
  if (pending->empty()) return moved;
  std::vector<Source> groups;
  for (std::size_t r = 0; r < pending->size(); ++r) {
    groups.push_back({-pending->int64(r, 0), pending->int64(r, 1)});
  }
  auto group_met = meet_edges(c, groups, budget);
  if (!group_met) return fail_with(group_met.error());
  moved += static_cast<std::int64_t>(groups.size()) + *group_met;
  using S = sql::sources_done;
  auto done = c.run<S>(c.params<S>().set(S::sources, sources_json(groups)));
  if (!done) return fail_with(done.error());
  if (done->empty()) return moved;
  std::vector<JobId> released;
  for (std::size_t r = 0; r < done->size(); ++r) released.push_back(-done->int64(r, 0));
  using G = sql::groups_released;
  if (auto ok = c.run<G>(c.params<G>().set(G::ids, ids_json(released))); !ok) {
    return fail_with(ok.error());
  }
  return moved;
}

}  // namespace readpast::detail::mariadb
