// server/job_pages.hpp — one page of jobs in id order (keyset paging) that the database
// reads from an index range, whatever the filter.
//
// The engines page fastest with both a queue and a state: one range of the (queue, state, id)
// index. With only a queue, SQLite would read every entry of that queue to sort them; with
// only a state, it would walk ids across every queue. So a page with one filter is put
// together from the pages of the index ranges it spans — one per state of the queue, or
// one per queue for the state — each at most `limit` long, merged by id: a few short range
// scans instead of one that grows with the table.
//
// Thread-safety: a pure function over the thread-safe Queue.
#pragma once

#include <vector>

#include "readpast/queue.hpp"

namespace readpast::server {

Result<std::vector<Job>> list_page(Queue& queue, const ListRequest& request);

}  // namespace readpast::server
