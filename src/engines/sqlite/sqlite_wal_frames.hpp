// engines/sqlite/sqlite_wal_frames.hpp — where the newest frame of each database page lies in a
// WAL file, as seen from its writes, so that the page cache keeps those frames while the VFS
// has the kernel drop the rest (sqlite_wal_vfs.hpp).
//
// Why: a held WAL's frames far behind its end are dropped from the page cache to keep the
// cache from growing into free memory. A frame that is still the newest copy of its page is
// read again, though: by every reader whose cache misses that page, and by the checkpoint that
// copies the WAL into the database once the held reader has ended. A first version dropped
// them too, and one of its holds was followed by 70 s at a ninth of the baseline, most likely
// that catch-up reading them back from the disk (docs/benchmarks.md, run 51). A frame that a
// newer frame of the same page has replaced is read only by a reader whose snapshot began
// before the newer one, which a held WAL's readers seldom are, so only those are dropped.
//
// What it sees: SQLite writes a frame as a 24-byte header (the page number first, big-endian)
// and then the page (wal.c, walWriteOneFrame), and a new WAL, or one that restarts, begins with
// its 32-byte header at offset 0, whose bytes 8-11 give the page size. Frames written by other
// processes are not seen: a page they wrote later keeps its older frame here (cached longer
// than it had to be), and their newest frames may be dropped (read from the disk when next
// needed), never anything worse. Only frames at or past `from` are tracked, so that a WAL that
// never grows past it costs nothing. At most kMaxPages pages are tracked (about 100 bytes
// each); past that, nothing is reported replaced until the WAL begins again, and the kernel's
// own eviction is all that is left, as without the VFS.
//
// Thread-safety: none; one per WAL file handle, used under SQLite's WAL write lock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <unordered_map>

namespace readpast::detail::sqlite {

class WalFrames {
 public:
  static constexpr std::int64_t kWalHeaderBytes = 32;
  static constexpr std::int64_t kFrameHeaderBytes = 24;
  static constexpr std::size_t kMaxPages = std::size_t{1} << 20;

  explicit WalFrames(std::int64_t from) : from_(from) {}

  // Every write SQLite makes to the WAL file: notes frame headers and the WAL's header.
  void on_write(const void* data, int amount, std::int64_t offset);
  // The file was cut to `size` bytes: frames past it are gone.
  void on_truncate(std::int64_t size);

  // The page size a WAL header (its first kWalHeaderBytes bytes) gives, or 0 when that is not
  // one of SQLite's page sizes (powers of two from 512 to 65536).
  static std::int64_t page_size_in(const unsigned char* wal_header);

  // The size of a frame (header and page), once a WAL header has been seen, else 0.
  std::int64_t frame_bytes() const { return frame_bytes_; }
  void set_page_size(std::int64_t page_size) { frame_bytes_ = kFrameHeaderBytes + page_size; }

  // Calls `drop(begin, end)` for each stretch of [from, to) that holds no newest frame, in
  // order. Without a known frame size, or past kMaxPages, it calls nothing: nothing is known
  // to be replaced.
  void for_each_replaced(std::int64_t from, std::int64_t to,
                         const std::function<void(std::int64_t, std::int64_t)>& drop) const;

  std::size_t newest_frames() const { return by_offset_.size(); }

 private:
  void forget_from(std::int64_t offset);

  std::int64_t from_;
  std::int64_t frame_bytes_ = 0;
  bool overflowed_ = false;
  // Invariant: the two maps hold the same (page, offset) pairs, one per page: the offset of
  // the newest frame of that page written at or past from_ since the WAL last began.
  std::unordered_map<std::uint32_t, std::int64_t> by_page_;
  std::map<std::int64_t, std::uint32_t> by_offset_;
};

}  // namespace readpast::detail::sqlite
