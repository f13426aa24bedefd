// engines/sqlite/sqlite_file_access.hpp — why a database file cannot be written, in words a
// user can act on, and the URI that reads a file in a place nobody can write.
//
// SQLite reports a database it cannot write as "attempt to write a readonly database" or,
// when it cannot create the -wal and -shm files beside it, "unable to open database file":
// neither names the file nor the cause. These helpers look at the file, its directory and its
// file system to say which.
//
// Thread-safety: pure functions (they read the file system).
#pragma once

#include <string>

namespace readpast::detail::sqlite {

// Why `path` cannot be written by this process: "the file system is mounted read-only",
// "the file is not writable by this user", "its directory D is not writable by this user,
// and SQLite must create F-wal and F-shm there". Empty when none of these holds.
std::string why_not_writable(const std::string& path);

// Whether neither PATH-wal nor PATH-shm exists: no connection has the file open in WAL mode
// (the last one to close removes them), so its main file holds every committed change.
bool has_no_wal_files(const std::string& path);

// "file:PATH?immutable=1" with PATH percent-encoded where a URI needs it: opens a file that
// no one can change while it is read (a read-only file system) without the -shm file that a
// WAL-mode read needs otherwise.
std::string immutable_uri(const std::string& path);

}  // namespace readpast::detail::sqlite
