// engines/sqlite/sqlite_wal_vfs.hpp — a VFS over SQLite's default one that extends a growing
// WAL file ahead of SQLite's appends, with zeros that are written and synced in chunks.
//
// Why: while a read transaction is held elsewhere (a report, a backup), no checkpoint can
// reach the end of the WAL and every commit appends its frames past the end of the file.
// Appending to a growing file costs the one writer far more than writing over pages the file
// already has: a WAL frame (24 bytes of header and a page) never starts on a page boundary, so
// the kernel zeroes each new page a write only partly covers, and every commit's fdatasync
// must also write the file's new size and block map. In C, without SQLite, on the benchmark
// machine's ext4: 10.4-12.0 us a frame appended with an fdatasync every 40 frames, against
// 5.5-6.3 us over a file that wraps as a restarted WAL does, and 6.6-8.0 us over a file
// extended ahead with zeros written and synced in chunks of 8-128 MiB, those writes included
// (docs/benchmarks.md, run 42; docs/bench-results/2026-11-29/run42/wal-append/). posix_fallocate
// does not help: its unwritten extents are converted at each sync, which writes the map again.
//
// What it does: the first write of a WAL file that reaches past the part already prepared
// writes zeros from the file's end to a chunk boundary past the write (the chunk grows with
// the file, kWalMinChunk to kWalMaxChunk) and syncs them, then lets the write through. The
// chunk stays small because the writer holds every other writer up while it extends: chunks
// of up to 32 MiB raised the lease p99 of a held run from 70-78 ms to 113-115 ms, chunks of
// up to 4 MiB did not, and both kept the same throughput (run 42).
//
// Why it is safe: zeros are only written at or past the file's current end, in an append to
// the WAL, which SQLite makes only while it holds the WAL write lock; so no byte that any
// process wrote is ever overwritten. Zeros past SQLite's last frame are what a WAL holds after
// a restart anyway (stale frames): recovery stops at the first frame whose salt and checksum
// do not match, and readers go by the WAL index, never by the file's size. SQLite truncates
// the file as before (PRAGMA journal_size_limit, a TRUNCATE checkpoint); the prepared end
// follows it down. A failed extension (a full disk) is cut back off and the write goes through
// as before; the next attempt waits until the file has grown by another chunk.
//
// It also cuts a WAL file back in steps. Once a held reader has ended, SQLite's first commit
// after the WAL restarts cuts the file down to PRAGMA journal_size_limit, under the WAL write
// lock, which every other writer then waits for: after a 10-minute hold, 36-40 GB in one
// ftruncate, which took 9.4-11.1 s on the benchmark machine's ext4 and once outlasted a
// writer's 10-s busy timeout (docs/benchmarks.md, runs 49 and 50). So a cut to a size above zero
// takes at most kWalTruncateStep off the file; the first commit after each later restart
// takes the next step, and those come every few thousand frames once checkpoints reach the
// end of the WAL again. What the file keeps past SQLite's last frame is stale frames, which a
// larger journal_size_limit would keep too. A cut to zero (a TRUNCATE checkpoint, which a
// user asks for by hand) is made whole, as asked.
//
// Files other than WAL files are the default VFS's own, untouched.
//
// Thread-safety: wal_vfs_name() may be called from any thread; it registers the VFS once (a
// process-wide table that SQLite owns; the VFS object is never changed after registration).
// A WAL file is used by one connection, under SQLite's own locking.
#pragma once

#include <cstdint>

namespace readpast::detail::sqlite {

inline constexpr std::int64_t kWalMinChunk = std::int64_t{1} << 20;  // 1 MiB
inline constexpr std::int64_t kWalMaxChunk = std::int64_t{4} << 20;  // 4 MiB
// The most one cut of a WAL file to journal_size_limit takes off it.
inline constexpr std::int64_t kWalTruncateStep = std::int64_t{256} << 20;  // 256 MiB

// How far a WAL of `size` bytes is extended past a write that goes beyond its prepared part:
// half its size, within [kWalMinChunk, kWalMaxChunk]. A database that is not held open
// elsewhere restarts its WAL after about 1,000 frames (4 MiB), so it stays a few MiB; a held
// WAL soon extends by kWalMaxChunk at a time.
std::int64_t wal_chunk(std::int64_t size);

// The name of the VFS to open readpast's SQLite connections with, or nullptr (SQLite's
// default) when it could not be registered.
const char* wal_vfs_name();

}  // namespace readpast::detail::sqlite
