// cli/job_changes.hpp — shared by retry and cancel: reporting which of the requested jobs
// changed, and why the others did not.
//
// Thread-safety: called from the main thread.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/cli_error.hpp"
#include "cli/session.hpp"

namespace readpast::cli {

// Sorted, without duplicates.
std::vector<JobId> unique_ids(std::vector<JobId> ids);

// Prints "<verb> N job(s): 1, 2" for the changed ones. When some requested ids did not
// change, fails (exit 1) with one line saying for each whether it does not exist or which
// state it is in, e.g. "job 7 not retried: it is running (only dead or cancelled jobs can
// be retried)". `rule` is that parenthesis. `explain`, when given, may say better why a
// job in an eligible state was left alone.
CliStatus report_changes(Session& session, Queue& queue, std::string_view verb,
                         const std::vector<JobId>& requested, const std::vector<JobId>& changed,
                         std::string_view rule,
                         const std::function<std::optional<std::string>(const Job&)>& explain = {});

}  // namespace readpast::cli
