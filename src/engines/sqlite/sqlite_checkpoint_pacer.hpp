// engines/sqlite/sqlite_checkpoint_pacer.hpp — when a writing connection attempts its WAL
// checkpoint after a commit.
//
// SQLite's automatic checkpoint runs in every commit that leaves more than 1,000 frames in
// the WAL. An attempt first sorts every frame not yet checkpointed by page number
// (walIteratorInit in SQLite's wal.c) and only then asks for WAL read lock 0, which a read
// transaction holds when it began on a fully checkpointed WAL (it reads the database file
// alone, so nothing may be copied into it). While such a reader stays open (a report, a
// backup, a held `BEGIN`), no attempt can copy a frame, yet every commit pays for a sort that
// grows with the WAL: run 28 (docs/benchmarks.md) found three quarters of the process's CPU
// in it and throughput down to 15-20% of its baseline. A reader that began on a WAL with
// frames in it holds a later read lock instead; then an attempt stops at its mark before
// sorting anything.
//
// So the commit that is due an attempt first asks whether a reader holds WAL read lock 0
// (sqlite_wal_read_lock.hpp), which costs a lock and an unlock, and skips the attempt while
// one does; the first commit after that reader has ended checkpoints. Run 49
// (docs/benchmarks.md) measured what attempting anyway cost: about 20 ns a frame, 0.3-0.4 s
// late in a 10-minute hold.
//
// The pacer attempts as SQLite does for as long as attempts move the checkpoint on. After an
// attempt that moved nothing all the same (a reader took lock 0 after the question, or the
// attempt failed), it attempts again only once the WAL has doubled since, or once a pause has
// passed that is kPauseFactor times what that attempt took (from kMinPause to kMaxPause):
// futile sorts then cost at most about 1/kPauseFactor of the time, and a WAL left by a reader
// that has ended is checkpointed within kMaxPause.
//
// Thread-safety: none; one per connection, used by the thread that holds the connection.
#pragma once

#include <chrono>
#include <cstdint>

namespace readpast::detail::sqlite {

class CheckpointPacer {
 public:
  using Clock = std::chrono::steady_clock;
  // SQLite's default PRAGMA wal_autocheckpoint.
  static constexpr int kThresholdFrames = 1000;
  static constexpr int kPauseFactor = 20;
  static constexpr std::chrono::milliseconds kMinPause{100};
  static constexpr std::chrono::milliseconds kMaxPause{5000};

  // Whether the commit that left `wal_frames` frames in the WAL should attempt a checkpoint.
  bool due(int wal_frames, Clock::time_point now) const;

  // What an attempt that ran from `started` to `ended` found: the frames in the WAL and how
  // many of them are checkpointed (sqlite3_wal_checkpoint_v2's pnLog and pnCkpt); -1 for
  // both when it failed.
  void attempted(int wal_frames, int checkpointed_frames, Clock::time_point started,
                 Clock::time_point ended);

  // A commit that was due an attempt skipped it: a reader held the database file.
  void skipped() { ++skipped_; }

  // Attempts so far, how many of them moved nothing, and the attempts skipped.
  std::int64_t attempts() const { return attempts_; }
  std::int64_t futile_attempts() const { return futile_attempts_; }
  std::int64_t skipped_attempts() const { return skipped_; }
  bool paused() const { return paused_; }

 private:
  int last_wal_frames_ = 0;
  int last_checkpointed_ = 0;
  bool paused_ = false;
  Clock::time_point resume_at_;        // while paused: attempt again from then on
  std::int64_t resume_at_frames_ = 0;  // while paused: or once the WAL has this many frames
  std::int64_t attempts_ = 0;
  std::int64_t futile_attempts_ = 0;
  std::int64_t skipped_ = 0;
};

}  // namespace readpast::detail::sqlite
