// server/api.hpp — the JSON API under /api/ (documented in docs/http.md), in these groups:
//   worker routes   enqueue, lease and the fenced settling calls (api_worker.cpp)
//   job routes      list, get, retry, cancel (api_jobs.cpp)
//   queue routes    stats with rates, pause/resume, retry all, purge, throughput
//                   (api_queues.cpp)
//   schedule routes the schedules with their ticks, run now (api_schedules.cpp)
//   process routes  the worker processes and what they run (api_worker_processes.cpp)
//   storage route   the tables' sizes and the oldest snapshot's holder (api_storage.cpp)
//
// Thread-safety: the routes only read their captures and call the thread-safe Queue and
// Throughput, so they may run on many threads at once.
#pragma once

#include "core/secret_scrubber.hpp"
#include "readpast/queue.hpp"
#include "server/router.hpp"
#include "server/throughput.hpp"

namespace readpast::server {

// REQUIRES for all of them: `queue` (and `throughput`) outlive the router.
// `secrets` are scrubbed from the error a failing worker stores.
void add_worker_routes(Router& router, Queue& queue, const detail::SecretScrubber& secrets);
void add_job_routes(Router& router, Queue& queue);
void add_queue_routes(Router& router, Queue& queue, const Throughput& throughput);
void add_schedule_routes(Router& router, Queue& queue);
void add_worker_process_routes(Router& router, Queue& queue);
void add_storage_routes(Router& router, Queue& queue);

}  // namespace readpast::server
