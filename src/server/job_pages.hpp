// server/job_pages.hpp — one page of jobs in id order, oldest or newest first (keyset paging),
// that the database reads from index ranges, whatever the filter.
//
// The engines page fastest with both a queue and a state: one range of the (queue, state, id)
// index. With only a queue, SQLite would read every entry of that queue to sort them; so that
// page is put together from the pages of the ranges it spans, one per state of the queue,
// each at most `limit` long, merged by id: a few short range scans instead of one that grows
// with the table. Ranges that stop short of their end are merged so that the page ends where
// the range that covered least stopped, and resumes there: no job is skipped.
//
// A state without a queue, a view and a search are one request each, bounded by the request's
// scan_limit (ListRequest): a window of consecutive ids, whatever the engine.
//
// Thread-safety: a pure function over the thread-safe Queue.
#pragma once

#include <vector>

#include "readpast/queue.hpp"

namespace readpast::server {

Result<JobPage> list_page(Queue& queue, const ListRequest& request);

}  // namespace readpast::server
