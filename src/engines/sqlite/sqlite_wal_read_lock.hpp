// engines/sqlite/sqlite_wal_read_lock.hpp — whether another connection reads the database
// file alone, so that no checkpoint may copy a frame into it.
//
// A read transaction that begins on a fully checkpointed WAL holds WAL read lock 0 and reads
// the database file without the WAL. While it is open, a checkpoint may copy nothing, yet
// SQLite's checkpoint first sorts every frame not yet copied and only then asks for that lock
// (walCheckpoint in wal.c): late in a long hold, 0.3-0.4 s of sorting for nothing
// (docs/benchmarks.md, runs 28 and 49). Asking for the lock first costs a lock and an unlock
// of one byte of the WAL index's shared memory. The locks' layout is part of SQLite's WAL
// file format (the write lock, the checkpoint lock, the recovery lock, then read locks 0 to
// 4), so every process that opens the file agrees on it.
//
// Thread-safety: call it on the thread that holds the connection, outside a transaction of
// its own (the WAL hook, after a commit).
#pragma once

#include <sqlite3.h>

namespace readpast::detail::sqlite {

// True when another connection, in this process or another, holds WAL read lock 0 of `db`'s
// main database. False when none does, and when it cannot tell (no WAL index open yet): then
// a checkpoint is attempted as before. The lock is taken exclusively for the moment of the
// test; a reader that asks for it in that moment retries, as it does behind a checkpoint.
bool reader_holds_database_file(sqlite3* db);

}  // namespace readpast::detail::sqlite
