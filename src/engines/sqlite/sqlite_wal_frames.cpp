#include "engines/sqlite/sqlite_wal_frames.hpp"

#include <algorithm>

namespace readpast::detail::sqlite {

namespace {

std::uint32_t big_endian_32(const unsigned char* bytes) {
  return (std::uint32_t{bytes[0]} << 24) | (std::uint32_t{bytes[1]} << 16) |
         (std::uint32_t{bytes[2]} << 8) | std::uint32_t{bytes[3]};
}

}  // namespace

std::int64_t WalFrames::page_size_in(const unsigned char* wal_header) {
  const std::uint32_t size = big_endian_32(wal_header + 8);  // bytes 8-11 (SQLite's wal.c)
  const bool power_of_two = (size & (size - 1)) == 0;
  return size >= 512 && size <= 65536 && power_of_two ? std::int64_t{size} : 0;
}

void WalFrames::on_write(const void* data, int amount, std::int64_t offset) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  if (offset == 0 && amount == kWalHeaderBytes) {  // a new WAL, or one that restarts
    by_page_.clear();
    by_offset_.clear();
    overflowed_ = false;
    if (const std::int64_t page_size = page_size_in(bytes); page_size > 0) set_page_size(page_size);
    return;
  }
  if (amount != kFrameHeaderBytes || offset < from_ || overflowed_) return;
  const std::uint32_t page = big_endian_32(bytes);
  if (by_page_.size() >= kMaxPages && !by_page_.contains(page)) {
    overflowed_ = true;  // too many to keep: nothing is dropped until the WAL begins again
    by_page_.clear();
    by_offset_.clear();
    return;
  }
  auto [it, inserted] = by_page_.try_emplace(page, offset);
  if (!inserted) {
    if (it->second == offset) return;  // the same frame again (its checksums rewritten)
    by_offset_.erase(it->second);
    it->second = offset;
  }
  // A frame written where another page's frame was (the next transaction writes over the
  // frames of one that rolled back) replaces that page's entry: its frame is gone.
  if (auto [at, fresh] = by_offset_.try_emplace(offset, page); !fresh) {
    by_page_.erase(at->second);
    at->second = page;
  }
}

void WalFrames::on_truncate(std::int64_t size) {
  forget_from(size);
}

void WalFrames::forget_from(std::int64_t offset) {
  for (auto it = by_offset_.lower_bound(offset); it != by_offset_.end();) {
    by_page_.erase(it->second);
    it = by_offset_.erase(it);
  }
}

void WalFrames::for_each_replaced(
    std::int64_t from, std::int64_t to,
    const std::function<void(std::int64_t, std::int64_t)>& drop) const {
  if (frame_bytes_ == 0 || overflowed_ || to <= from) return;
  std::int64_t begin = from;
  // A frame that starts before `from` may reach into it.
  auto it = by_offset_.lower_bound(from - frame_bytes_ + 1);
  for (; it != by_offset_.end() && it->first < to; ++it) {
    if (it->first > begin) drop(begin, it->first);
    begin = std::max(begin, it->first + frame_bytes_);
  }
  if (begin < to) drop(begin, to);
}

}  // namespace readpast::detail::sqlite
