// engines/sqlite/sqlite_wal_read_lock.cpp — see the header for why a checkpoint asks first.
#include "engines/sqlite/sqlite_wal_read_lock.hpp"

namespace readpast::detail::sqlite {

namespace {

// WAL_READ_LOCK(0) in wal.c: the slot after the write, checkpoint and recovery locks.
constexpr int kReadLockZero = 3;

}  // namespace

bool reader_holds_database_file(sqlite3* db) {
  sqlite3_file* file = nullptr;
  if (sqlite3_file_control(db, "main", SQLITE_FCNTL_FILE_POINTER, &file) != SQLITE_OK ||
      file == nullptr || file->pMethods == nullptr || file->pMethods->iVersion < 2 ||
      file->pMethods->xShmLock == nullptr) {
    return false;
  }
  const auto& methods = *file->pMethods;
  const int rc = methods.xShmLock(file, kReadLockZero, 1, SQLITE_SHM_LOCK | SQLITE_SHM_EXCLUSIVE);
  if (rc == SQLITE_OK) {
    methods.xShmLock(file, kReadLockZero, 1, SQLITE_SHM_UNLOCK | SQLITE_SHM_EXCLUSIVE);
    return false;
  }
  return rc == SQLITE_BUSY;
}

}  // namespace readpast::detail::sqlite
