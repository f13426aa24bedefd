// GET /api/jobs's query parameters (server/api_bodies.hpp, read_list_query), from any bytes
// read as NAME=VALUE pairs split on '&' (as the server's request-target parser leaves them,
// decoded). For any input: nothing crashes or throws; the reader either refuses with
// kInvalidArgument or returns a request within the API's limits: a page of 1 to 1000 jobs
// read as one more, never both cursors, the scan window set, a valid queue name, a search
// that is not empty.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "readpast/queue.hpp"
#include "server/api_bodies.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace readpast;
  using namespace readpast::server;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  HttpRequest request;
  request.method = "GET";
  request.path = "/api/jobs";
  while (!text.empty()) {
    const std::size_t amp = text.find('&');
    std::string_view pair = text.substr(0, amp);
    const std::size_t eq = pair.find('=');
    // The first value of each name, as the server keeps it.
    request.query.emplace(std::string(pair.substr(0, eq)), eq == std::string_view::npos
                                                               ? std::string()
                                                               : std::string(pair.substr(eq + 1)));
    if (amp == std::string_view::npos) break;
    text.remove_prefix(amp + 1);
  }
  auto query = read_list_query(request);
  if (!query) {
    if (query.error().code != ErrorCode::kInvalidArgument || query.error().message.empty()) {
      std::abort();
    }
    return 0;
  }
  const ListRequest& list = query->list;
  if (query->limit < 1 || query->limit > kMaxListPage) std::abort();
  if (list.limit != query->limit + 1) std::abort();
  if (query->payload_max < 0) std::abort();
  if (query->before > 0 && query->after >= 0) std::abort();
  if (list.before_id && list.after_id) std::abort();
  if (list.scan_limit != kListScanIds) std::abort();
  if (list.queue && !validate_queue_name(*list.queue)) std::abort();
  if (list.search && list.search->empty()) std::abort();
  const bool newest_read = list.order == ListOrder::kNewestFirst;
  if (newest_read != (query->newest != query->backwards)) std::abort();
  return 0;
}
