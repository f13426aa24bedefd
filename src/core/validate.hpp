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

}  // namespace readpast::detail
