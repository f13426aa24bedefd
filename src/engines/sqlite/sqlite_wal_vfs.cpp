#include "engines/sqlite/sqlite_wal_vfs.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <cstddef>
#include <vector>

namespace readpast::detail::sqlite {

namespace {

constexpr const char* kVfsName = "readpast-wal";
// The most the default VFS writes in one call is under 128 KiB (os_unix.c, seekAndWriteFd).
constexpr std::int64_t kZeroBlock = std::int64_t{64} << 10;

// A WAL file: SQLite sees `base`; the default VFS's file follows in the same allocation.
// Invariant: every byte of the file SQLite (in any process) has written lies below the file's
// size, and zeros are only ever written at or past it, under SQLite's WAL write lock, which
// every append to a WAL holds.
struct WalFile {
  sqlite3_file base;
  sqlite3_file* real;
  // Below this offset the file was extended already (by this handle or found so); a cache of
  // the file's size, so that a write inside it needs no fstat.
  std::int64_t prepared_end;
  // After an extension failed: no new attempt before a write reaches this offset.
  std::int64_t retry_from;
  // Whether SQLite has synced this file: with PRAGMA synchronous=OFF it never does, and the
  // zeros are then not synced either.
  bool synced;
};

constexpr std::size_t real_offset() {
  constexpr std::size_t align = alignof(std::max_align_t);
  return (sizeof(WalFile) + align - 1) / align * align;
}

WalFile& as_wal(sqlite3_file* file) {
  return *reinterpret_cast<WalFile*>(file);
}
sqlite3_file* real(sqlite3_file* file) {
  return as_wal(file).real;
}
sqlite3_vfs* base(sqlite3_vfs* vfs) {
  return static_cast<sqlite3_vfs*>(vfs->pAppData);
}

// Writes zeros over [from, to) and syncs them when SQLite syncs this file. On a failure the
// file is cut back to `from`: nothing of SQLite's lies past it.
int write_zeros(WalFile& wal, std::int64_t from, std::int64_t to) {
  static const std::vector<char> zeros(static_cast<std::size_t>(kZeroBlock), 0);
  const sqlite3_io_methods* io = wal.real->pMethods;
  int rc = SQLITE_OK;
  for (std::int64_t at = from; at < to && rc == SQLITE_OK;) {
    // Whole blocks after the first, so that the zeros fill whole pages.
    const std::int64_t next = std::min(to, (at / kZeroBlock + 1) * kZeroBlock);
    rc = io->xWrite(wal.real, zeros.data(), static_cast<int>(next - at), at);
    at = next;
  }
  if (rc == SQLITE_OK && wal.synced) {
    rc = io->xSync(wal.real, SQLITE_SYNC_NORMAL | SQLITE_SYNC_DATAONLY);
  }
  if (rc != SQLITE_OK) io->xTruncate(wal.real, from);
  return rc;
}

// Before a write that ends at `end`, past the prepared part: extends the file by a chunk.
void prepare(WalFile& wal, std::int64_t end) {
  sqlite3_int64 size_now = 0;
  if (wal.real->pMethods->xFileSize(wal.real, &size_now) != SQLITE_OK) return;
  const std::int64_t size = size_now;
  if (size >= end) {  // extended already (another process, or a file left so)
    wal.prepared_end = size;
    return;
  }
  const std::int64_t chunk = wal_chunk(size);
  const std::int64_t to =
      (std::max(size + chunk, end) + kWalMinChunk - 1) / kWalMinChunk * kWalMinChunk;
  if (write_zeros(wal, size, to) == SQLITE_OK) {
    wal.prepared_end = to;
  } else {
    wal.prepared_end = size;
    wal.retry_from = size + chunk;
  }
}

// --- the WAL file's methods: the default VFS's, with writes past the prepared end prepared ---

int wal_close(sqlite3_file* file) {
  const int rc = real(file)->pMethods->xClose(real(file));
  file->pMethods = nullptr;
  return rc;
}
int wal_read(sqlite3_file* file, void* out, int amount, sqlite3_int64 offset) {
  return real(file)->pMethods->xRead(real(file), out, amount, offset);
}
int wal_write(sqlite3_file* file, const void* data, int amount, sqlite3_int64 offset) {
  WalFile& wal = as_wal(file);
  const std::int64_t end = offset + amount;
  if (end > wal.prepared_end && end >= wal.retry_from) prepare(wal, end);
  return wal.real->pMethods->xWrite(wal.real, data, amount, offset);
}
int wal_truncate(sqlite3_file* file, sqlite3_int64 size) {
  WalFile& wal = as_wal(file);
  sqlite3_int64 to = size;
  if (size > 0) {  // journal_size_limit's cut: at most one step of it (the header says why)
    sqlite3_int64 size_now = 0;
    if (wal.real->pMethods->xFileSize(wal.real, &size_now) == SQLITE_OK) {
      to = std::max<sqlite3_int64>(size, size_now - kWalTruncateStep);
    }
  }
  const int rc = wal.real->pMethods->xTruncate(wal.real, to);
  wal.prepared_end = std::min<std::int64_t>(wal.prepared_end, to);
  wal.retry_from = 0;
  return rc;
}
int wal_sync(sqlite3_file* file, int flags) {
  as_wal(file).synced = true;
  return real(file)->pMethods->xSync(real(file), flags);
}
int wal_file_size(sqlite3_file* file, sqlite3_int64* size) {
  return real(file)->pMethods->xFileSize(real(file), size);
}
int wal_lock(sqlite3_file* file, int level) {
  return real(file)->pMethods->xLock(real(file), level);
}
int wal_unlock(sqlite3_file* file, int level) {
  return real(file)->pMethods->xUnlock(real(file), level);
}
int wal_check_reserved_lock(sqlite3_file* file, int* out) {
  return real(file)->pMethods->xCheckReservedLock(real(file), out);
}
int wal_file_control(sqlite3_file* file, int op, void* arg) {
  return real(file)->pMethods->xFileControl(real(file), op, arg);
}
int wal_sector_size(sqlite3_file* file) {
  return real(file)->pMethods->xSectorSize(real(file));
}
int wal_device_characteristics(sqlite3_file* file) {
  return real(file)->pMethods->xDeviceCharacteristics(real(file));
}
// Version 1: SQLite maps shared memory and pages through the database file only, never through
// its WAL (wal.c), so the WAL file has no use for the later methods.
constexpr sqlite3_io_methods kWalMethods = {.iVersion = 1,
                                            .xClose = wal_close,
                                            .xRead = wal_read,
                                            .xWrite = wal_write,
                                            .xTruncate = wal_truncate,
                                            .xSync = wal_sync,
                                            .xFileSize = wal_file_size,
                                            .xLock = wal_lock,
                                            .xUnlock = wal_unlock,
                                            .xCheckReservedLock = wal_check_reserved_lock,
                                            .xFileControl = wal_file_control,
                                            .xSectorSize = wal_sector_size,
                                            .xDeviceCharacteristics = wal_device_characteristics,
                                            .xShmMap = nullptr,
                                            .xShmLock = nullptr,
                                            .xShmBarrier = nullptr,
                                            .xShmUnmap = nullptr,
                                            .xFetch = nullptr,
                                            .xUnfetch = nullptr};

// --- the VFS: the default one's, but for opening WAL files ---

int vfs_open(sqlite3_vfs* vfs, const char* name, sqlite3_file* file, int flags, int* out_flags) {
  sqlite3_vfs* under = base(vfs);
  if ((flags & SQLITE_OPEN_WAL) == 0) {
    // The default VFS's own file, in the space SQLite allocated (szOsFile is larger).
    return under->xOpen(under, name, file, flags, out_flags);
  }
  WalFile& wal = as_wal(file);
  wal.real = reinterpret_cast<sqlite3_file*>(reinterpret_cast<char*>(file) + real_offset());
  wal.real->pMethods = nullptr;
  file->pMethods = nullptr;
  const int rc = under->xOpen(under, name, wal.real, flags, out_flags);
  if (rc != SQLITE_OK) {
    if (wal.real->pMethods != nullptr) wal.real->pMethods->xClose(wal.real);
    return rc;
  }
  sqlite3_int64 size = 0;
  if (wal.real->pMethods->xFileSize(wal.real, &size) != SQLITE_OK) size = 0;
  wal.prepared_end = size;
  wal.retry_from = 0;
  wal.synced = false;
  file->pMethods = &kWalMethods;
  return SQLITE_OK;
}
int vfs_delete(sqlite3_vfs* vfs, const char* name, int sync_dir) {
  return base(vfs)->xDelete(base(vfs), name, sync_dir);
}
int vfs_access(sqlite3_vfs* vfs, const char* name, int flags, int* out) {
  return base(vfs)->xAccess(base(vfs), name, flags, out);
}
int vfs_full_pathname(sqlite3_vfs* vfs, const char* name, int size, char* out) {
  return base(vfs)->xFullPathname(base(vfs), name, size, out);
}
void* vfs_dl_open(sqlite3_vfs* vfs, const char* name) {
  return base(vfs)->xDlOpen(base(vfs), name);
}
void vfs_dl_error(sqlite3_vfs* vfs, int size, char* out) {
  base(vfs)->xDlError(base(vfs), size, out);
}
void (*vfs_dl_sym(sqlite3_vfs* vfs, void* handle, const char* symbol))(void) {
  return base(vfs)->xDlSym(base(vfs), handle, symbol);
}
void vfs_dl_close(sqlite3_vfs* vfs, void* handle) {
  base(vfs)->xDlClose(base(vfs), handle);
}
int vfs_randomness(sqlite3_vfs* vfs, int size, char* out) {
  return base(vfs)->xRandomness(base(vfs), size, out);
}
int vfs_sleep(sqlite3_vfs* vfs, int microseconds) {
  return base(vfs)->xSleep(base(vfs), microseconds);
}
int vfs_current_time(sqlite3_vfs* vfs, double* out) {
  return base(vfs)->xCurrentTime(base(vfs), out);
}
int vfs_get_last_error(sqlite3_vfs* vfs, int size, char* out) {
  return base(vfs)->xGetLastError ? base(vfs)->xGetLastError(base(vfs), size, out) : 0;
}
int vfs_current_time_int64(sqlite3_vfs* vfs, sqlite3_int64* out) {
  return base(vfs)->xCurrentTimeInt64(base(vfs), out);
}

// Registers the VFS; returns its name, or nullptr when the default VFS is too old to be
// wrapped (xCurrentTimeInt64 is from version 2) or registration failed.
const char* register_vfs() {
  sqlite3_vfs* under = sqlite3_vfs_find(nullptr);
  if (under == nullptr || under->iVersion < 2) return nullptr;
  // Lives as long as the process: SQLite keeps a pointer to it in its list of VFSes. It is
  // written here once, before registration, and never again.
  static sqlite3_vfs vfs = {
      .iVersion = 2,
      .szOsFile = static_cast<int>(real_offset() + static_cast<std::size_t>(under->szOsFile)),
      .mxPathname = under->mxPathname,
      .pNext = nullptr,
      .zName = kVfsName,
      .pAppData = under,
      .xOpen = vfs_open,
      .xDelete = vfs_delete,
      .xAccess = vfs_access,
      .xFullPathname = vfs_full_pathname,
      .xDlOpen = vfs_dl_open,
      .xDlError = vfs_dl_error,
      .xDlSym = vfs_dl_sym,
      .xDlClose = vfs_dl_close,
      .xRandomness = vfs_randomness,
      .xSleep = vfs_sleep,
      .xCurrentTime = vfs_current_time,
      .xGetLastError = vfs_get_last_error,
      .xCurrentTimeInt64 = vfs_current_time_int64,
      .xSetSystemCall = nullptr,
      .xGetSystemCall = nullptr,
      .xNextSystemCall = nullptr};
  if (sqlite3_vfs_register(&vfs, 0) != SQLITE_OK) return nullptr;
  return kVfsName;
}

}  // namespace

std::int64_t wal_chunk(std::int64_t size) {
  return std::clamp(size / 2, kWalMinChunk, kWalMaxChunk);
}

const char* wal_vfs_name() {
  static const char* const name = register_vfs();  // thread-safe once (C++11 statics)
  return name;
}

}  // namespace readpast::detail::sqlite
