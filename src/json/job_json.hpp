// json/job_json.hpp — the JSON of jobs and stats, shared by the command line (`list --json`,
// `show --json`, `stats --json`) and the HTTP API.
// Field names are the column names of docs/design.md ("The job"): a contract for scripts.
//
// Thread-safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "readpast/job.hpp"
#include "readpast/options.hpp"

namespace readpast::json {

// Every column; times as RFC 3339 (UTC), absent values as null; the payload as text when
// it is valid UTF-8, else base64, said by "payload_encoding": "utf8" | "base64".
nlohmann::ordered_json job_to_json(const Job& job);
// {"after": [{"id", "state" (null when purged), "met"}], "dependents": [...],
// "dependent_count": n}: what a job waits for and what waits for it.
nlohmann::ordered_json dependencies_to_json(const Dependencies& dependencies);
// {"groups": {NAME: {"waiting", "available", "running", "succeeded", "dead", "cancelled",
// "live", "waiters"}}}: one group's members by state and the jobs waiting for it.
nlohmann::ordered_json group_stats_to_json(const GroupStats& stats);

// job_to_json and what Queue::get adds (`show --json`, GET /api/jobs/ID): "progress", the
// recorded JSON value itself (null when none; a string if what is stored is not JSON, e.g.
// written by hand), and "errors", [{"attempt": n, "at": TIME, "worker": ID, "error": TEXT},
// ...] oldest first.
nlohmann::ordered_json job_details_to_json(const Job& job);

// One queue's counts: {"available": n, "scheduled": n, "running": n, "succeeded": n,
// "dead": n, "cancelled": n, "oldest_available_age_s": x, "paused": bool}
nlohmann::ordered_json queue_stats_to_json(const QueueStats& stats);
// A queue's global limits: {"running": n|null, "rate": "N/DUR"|null} (docs/http.md).
nlohmann::ordered_json limits_to_json(const QueueLimits& limits);

// {"queues": {"NAME": queue_stats_to_json(its stats), ...}}
nlohmann::ordered_json stats_to_json(const std::vector<QueueStats>& stats);

// Serializes for printing; text that is not valid UTF-8 (say, a last_error written by
// another client) is replaced rather than aborting the output.
std::string dump_json(const nlohmann::ordered_json& value);

// RFC 4648 base64 with padding.
std::string base64_encode(std::string_view bytes);
// The bytes of RFC 4648 base64 (padding required); nullopt when `text` is not base64.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace readpast::json
