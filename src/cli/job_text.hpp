// cli/job_text.hpp — jobs and stats as text for a terminal.
//
// Every string that came from the database (payload, last_error, unique_key, leased_by)
// goes through escape_for_terminal first: a payload holding "\e]0;..." or a bare "\r"
// must not rewrite the user's screen.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "readpast/job.hpp"
#include "readpast/options.hpp"

namespace readpast::cli {

// Printable UTF-8 is kept; backslash becomes "\\"; \n, \r, \t become "\n", "\r", "\t";
// other control characters (C0, DEL, C1) and bytes that are not valid UTF-8 become
// "\xNN" (C1 as "\u0080".."\u009f"). With max_chars, output stops after that many
// characters of input and ends with "...".
std::string escape_for_terminal(std::string_view text, std::size_t max_chars = 0);

// "available", "scheduled" (available, run_at in the future) or "retrying" (available,
// attempts > 0), or the stored state.
std::string display_state(const Job& job, TimePoint now);

// A queue's global limits: "running 5, rate 100/1s", "running 5", "rate 100/1s" or "-".
std::string limits_text(const QueueLimits& limits);

// "2026-11-22T10:00:00Z" (seconds; the JSON has microseconds).
std::string short_time(TimePoint t);

// The key/value listing of `show`.
std::string job_details(const Job& job, TimePoint now, const Dependencies& dependencies = {});

}  // namespace readpast::cli
