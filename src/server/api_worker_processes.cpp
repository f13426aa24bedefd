// GET /api/workers: the worker processes that reported themselves, with the jobs each runs
// (the dashboard's workers page; json/worker_json.hpp renders it).
#include "json/worker_json.hpp"
#include "server/api.hpp"
#include "server/api_support.hpp"
#include "server/responses.hpp"

namespace readpast::server {

void add_worker_process_routes(Router& router, Queue& queue) {
  router.add("GET", "/api/workers", api_route([&queue](const HttpRequest&) -> Result<HttpResponse> {
               auto report = json::workers_report(queue);
               if (!report) return fail_with(report.error());
               return json_response(200, *report);
             }));
}

}  // namespace readpast::server
