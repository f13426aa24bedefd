// Where the newest frame of each page lies in a WAL (src/engines/sqlite/sqlite_wal_frames.hpp):
// from the writes SQLite makes, which stretches of the file hold only frames that newer ones
// replaced, and so may leave the page cache.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "engines/sqlite/sqlite_wal_frames.hpp"

namespace readpast::test {
namespace {

using detail::sqlite::WalFrames;
using Stretch = std::pair<std::int64_t, std::int64_t>;

constexpr std::int64_t kPageSize = 2048;
constexpr std::int64_t kFrame = WalFrames::kFrameHeaderBytes + kPageSize;

// The WAL's own 32-byte header, as SQLite writes it at offset 0 when the WAL begins.
void begin_wal(WalFrames& frames, std::uint32_t page_size = kPageSize) {
  std::array<unsigned char, WalFrames::kWalHeaderBytes> header{};
  header[0] = 0x37;  // magic, unread
  header[8] = static_cast<unsigned char>(page_size >> 24);
  header[9] = static_cast<unsigned char>(page_size >> 16);
  header[10] = static_cast<unsigned char>(page_size >> 8);
  header[11] = static_cast<unsigned char>(page_size);
  frames.on_write(header.data(), static_cast<int>(header.size()), 0);
}

// Frame `n` (from 0) of the WAL, holding `page`: its header, then its page, as walWriteOneFrame.
std::int64_t write_frame(WalFrames& frames, std::int64_t n, std::uint32_t page) {
  const std::int64_t offset = WalFrames::kWalHeaderBytes + n * kFrame;
  std::array<unsigned char, WalFrames::kFrameHeaderBytes> header{};
  header[0] = static_cast<unsigned char>(page >> 24);
  header[1] = static_cast<unsigned char>(page >> 16);
  header[2] = static_cast<unsigned char>(page >> 8);
  header[3] = static_cast<unsigned char>(page);
  frames.on_write(header.data(), static_cast<int>(header.size()), offset);
  const std::vector<unsigned char> body(kPageSize, 0xab);
  frames.on_write(body.data(), static_cast<int>(body.size()), offset + header.size());
  return offset;
}

std::vector<Stretch> replaced(const WalFrames& frames, std::int64_t from, std::int64_t to) {
  std::vector<Stretch> out;
  frames.for_each_replaced(from, to,
                           [&](std::int64_t b, std::int64_t e) { out.emplace_back(b, e); });
  return out;
}

TEST(WalFramesTest, OnlyTheNewestFrameOfEachPageIsKept) {
  WalFrames frames(0);
  begin_wal(frames);
  const std::int64_t a1 = write_frame(frames, 0, 7);
  const std::int64_t b = write_frame(frames, 1, 9);
  const std::int64_t a2 = write_frame(frames, 2, 7);  // replaces a1
  const std::int64_t end = a2 + kFrame;
  EXPECT_EQ(frames.newest_frames(), 2u);
  EXPECT_EQ(replaced(frames, 0, end), (std::vector<Stretch>{{0, b}}))
      << "the WAL header and page 7's first frame are replaced; page 9's and page 7's second "
         "frames are not";
  (void)a1;
}

TEST(WalFramesTest, AFrameReachingIntoTheRangeFromBeforeItIsKept) {
  WalFrames frames(0);
  begin_wal(frames);
  const std::int64_t only = write_frame(frames, 0, 3);
  const std::int64_t mid = only + kFrame / 2;
  EXPECT_EQ(replaced(frames, mid, mid + 4 * kFrame),
            (std::vector<Stretch>{{only + kFrame, mid + 4 * kFrame}}));
}

TEST(WalFramesTest, ARestartForgetsEveryFrame) {
  WalFrames frames(0);
  begin_wal(frames);
  for (int n = 0; n < 10; ++n) write_frame(frames, n, static_cast<std::uint32_t>(n + 1));
  begin_wal(frames);  // the WAL restarts: its old frames are no page's newest any more
  EXPECT_EQ(frames.newest_frames(), 0u);
  EXPECT_EQ(replaced(frames, 0, 10 * kFrame), (std::vector<Stretch>{{0, 10 * kFrame}}));
}

TEST(WalFramesTest, ACutForgetsTheFramesPastIt) {
  WalFrames frames(0);
  begin_wal(frames);
  write_frame(frames, 0, 1);
  const std::int64_t second = write_frame(frames, 1, 2);
  frames.on_truncate(second);
  EXPECT_EQ(frames.newest_frames(), 1u);
  write_frame(frames, 1, 1);  // page 1 again, where page 2's frame was
  EXPECT_EQ(frames.newest_frames(), 1u);
  EXPECT_EQ(replaced(frames, 0, second), (std::vector<Stretch>{{0, second}}));
}

TEST(WalFramesTest, FramesBeforeItsStartAreNotTracked) {
  const std::int64_t from = WalFrames::kWalHeaderBytes + 4 * kFrame;
  WalFrames frames(from);
  begin_wal(frames);
  for (int n = 0; n < 4; ++n) write_frame(frames, n, 5);
  EXPECT_EQ(frames.newest_frames(), 0u);
  write_frame(frames, 4, 5);
  EXPECT_EQ(frames.newest_frames(), 1u);
}

TEST(WalFramesTest, WithoutAKnownPageSizeNothingIsReplaced) {
  WalFrames frames(0);
  write_frame(frames, 0, 1);  // the WAL's header was written by another connection
  EXPECT_TRUE(replaced(frames, 0, 8 * kFrame).empty());
  frames.set_page_size(kPageSize);
  EXPECT_EQ(replaced(frames, 0, 8 * kFrame),
            (std::vector<Stretch>{{0, WalFrames::kWalHeaderBytes},
                                  {WalFrames::kWalHeaderBytes + kFrame, 8 * kFrame}}));
}

TEST(WalFramesTest, OnlyOneOfSqlitesPageSizesIsTakenFromAHeader) {
  for (const std::uint32_t size : {512u, 2048u, 65536u}) {
    WalFrames frames(0);
    begin_wal(frames, size);
    EXPECT_EQ(frames.frame_bytes(), WalFrames::kFrameHeaderBytes + size) << size;
  }
  for (const std::uint32_t size : {0u, 256u, 1000u, 131072u}) {
    WalFrames frames(0);
    begin_wal(frames, size);
    EXPECT_EQ(frames.frame_bytes(), 0) << size;
  }
}

TEST(WalFramesTest, TheSameFrameWrittenAgainStaysOneEntry) {
  WalFrames frames(0);
  begin_wal(frames);
  write_frame(frames, 0, 4);
  write_frame(frames, 0, 4);  // SQLite rewrites a frame's header when it redoes checksums
  EXPECT_EQ(frames.newest_frames(), 1u);
}

}  // namespace
}  // namespace readpast::test
