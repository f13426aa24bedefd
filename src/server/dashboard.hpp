// server/dashboard.hpp — the web dashboard's pages and files, served from the files built
// into the binary (embedded_file.hpp). The pages are one HTML shell; its script fetches
// everything it shows from the JSON API and puts job text into the page as text only.
//
//   /                overview of every queue, live throughput chart
//   /jobs            job browser (?queue=, ?state=, ?after=)
//   /jobs/{id}       one job
//   /assets/NAME     app.js, style.css
//
// Thread-safety: the routes read constant data only.
#pragma once

#include "server/router.hpp"

namespace readpast::server {

void add_dashboard_routes(Router& router);

// Headers every response of this server carries: no framing, no sniffing, no referrer, and
// a Content-Security-Policy that runs only this server's own script (no inline script, no
// other origin), so that text which slipped into the page could not run.
void add_security_headers(HttpResponse& response);

}  // namespace readpast::server
