// readpast/allocator.hpp — an optional, process-wide allocator setting for programs whose
// threads run SQLite workers.
#pragma once

namespace readpast {

// Raises glibc's trim threshold to 64 MiB: memory freed at the top of a thread's heap stays
// there for reuse instead of going back to the system at once.
//
// Why: SQLite builds a temporary b-tree (an "ephemeral table", with its own page cache) for
// a lease's RETURNING and IN (SELECT ...) and frees it when the statement ends. By default
// glibc gives such memory back (madvise) as soon as 128 KiB are free at the top of a heap,
// and the next lease faults it in again page by page; on a virtual machine that round trip
// can cost more than the statement. readpast_bench measured 163-170 µs of worker CPU per job
// without and 58-71 µs with this setting (SQLite, 4 worker processes, lease batches of 10;
// docs/benchmarks.md).
//
// The setting belongs to the whole process, which is why the library never makes it by
// itself: the `readpast` command calls this at start-up, and a program of your own may call
// it first thing in main(), before it starts threads. It also fixes glibc's mmap threshold
// at 128 KiB instead of letting it adapt. Returns whether it applied (never without glibc).
bool keep_freed_memory_for_reuse() noexcept;

}  // namespace readpast
