// core/validate.hpp — checks every engine relies on Queue having made.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string_view>

#include "readpast/job.hpp"
#include "readpast/options.hpp"

namespace readpast::detail {

inline constexpr std::size_t kMaxUniqueKeyBytes = 1024;
inline constexpr std::size_t kMaxWorkerIdBytes = 256;
inline constexpr int kMaxLeaseBatch = 10000;

Status validate_new_job(const NewJob& job, std::size_t max_payload_bytes);
Status validate_lease_request(const LeaseRequest& request);
Status validate_positive_duration(Duration d, std::string_view what);
Status validate_non_negative_duration(Duration d, std::string_view what);
// Queue::progress's text: JSON (any value), at most kMaxProgressBytes, nested at most
// kMaxProgressDepth deep (whoever shows it parses and prints it, which recurses per level).
inline constexpr int kMaxProgressDepth = 64;
Status validate_progress(std::string_view json);

}  // namespace readpast::detail
