// GET /api/storage: what each table of the storage takes and who holds the oldest snapshot
// (Queue::storage_health; docs/http.md, docs/metrics.md "The oldest snapshot"). The
// dashboard shows a notice from it when a snapshot has been held for a minute or more.
#include <chrono>

#include "server/api.hpp"
#include "server/api_support.hpp"
#include "server/responses.hpp"

namespace readpast::server {
namespace {

nlohmann::ordered_json holder_json(const SnapshotHolder& holder) {
  nlohmann::ordered_json out = {{"kind", holder.kind}};
  out["pid"] = holder.pid ? nlohmann::ordered_json(*holder.pid) : nlohmann::ordered_json();
  out["client"] = holder.client;
  out["state"] = holder.state;
  out["age_s"] = holder.age
                     ? nlohmann::ordered_json(std::chrono::duration<double>(*holder.age).count())
                     : nlohmann::ordered_json();
  out["transactions"] =
      holder.transactions ? nlohmann::ordered_json(*holder.transactions) : nlohmann::ordered_json();
  return out;
}

}  // namespace

void add_storage_routes(Router& router, Queue& queue) {
  router.add("GET", "/api/storage", api_route([&queue](const HttpRequest&) -> Result<HttpResponse> {
               auto health = queue.storage_health();
               if (!health) return fail_with(health.error());
               nlohmann::ordered_json sizes = nlohmann::ordered_json::object();
               for (const StorageSize& size : health->sizes) sizes[size.relation] = size.bytes;
               nlohmann::ordered_json body = {{"sizes", sizes}};
               body["oldest_snapshot"] = health->oldest_snapshot
                                             ? holder_json(*health->oldest_snapshot)
                                             : nlohmann::ordered_json();
               return json_response(200, body);
             }));
}

}  // namespace readpast::server
