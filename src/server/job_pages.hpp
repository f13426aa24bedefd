// server/job_pages.hpp — one page of jobs in id order, oldest or newest first (keyset paging),
// that the database reads from index ranges, whatever the filter.
//
// The engines page fastest with both a queue and a state: one range of the (queue, state, id)
// index. With only a queue, SQLite would read every entry of that queue to sort them; with
// only a state, it would walk ids across every queue. So a page with one filter is put
// together from the pages of the index ranges it spans — one per state of the queue, or
// one per queue for the state — each at most `limit` long, merged by id: a few short range
// scans instead of one that grows with the table.
//
// A view or a search with a scan limit is one request, not merged: it reads a window of
// consecutive ids anyway. Ranges that stop short of their end (a full page, or a window) are
// merged so that the page ends where the range that covered least stopped, and resumes
// there: no job of another range beyond that point is skipped.
//
// Thread-safety: a pure function over the thread-safe Queue.
#pragma once

#include <vector>

#include "readpast/queue.hpp"

namespace readpast::server {

Result<JobPage> list_page(Queue& queue, const ListRequest& request);

}  // namespace readpast::server
