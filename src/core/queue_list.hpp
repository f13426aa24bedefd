// core/queue_list.hpp — a worker's queues as one column (readpast_workers.queues): names
// joined by commas. Queue names cannot hold a comma (validate_queue_name), so the split is
// exact.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace readpast::detail {

inline std::string join_queue_names(const std::vector<std::string>& queues) {
  std::string joined;
  for (const auto& queue : queues) {
    if (!joined.empty()) joined += ',';
    joined += queue;
  }
  return joined;
}

inline std::vector<std::string> split_queue_names(std::string_view joined) {
  std::vector<std::string> queues;
  while (!joined.empty()) {
    const auto comma = joined.find(',');
    queues.emplace_back(joined.substr(0, comma));
    if (comma == std::string_view::npos) break;
    joined.remove_prefix(comma + 1);
  }
  return queues;
}

}  // namespace readpast::detail
