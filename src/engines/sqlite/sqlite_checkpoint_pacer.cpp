// engines/sqlite/sqlite_checkpoint_pacer.cpp — see the header for why the pacer exists.
#include "engines/sqlite/sqlite_checkpoint_pacer.hpp"

#include <algorithm>

namespace readpast::detail::sqlite {

bool CheckpointPacer::due(int wal_frames, Clock::time_point now) const {
  if (wal_frames < kThresholdFrames) return false;
  if (!paused_) return true;
  return now >= resume_at_ || wal_frames >= resume_at_frames_;
}

void CheckpointPacer::attempted(int wal_frames, int checkpointed_frames, Clock::time_point started,
                                Clock::time_point ended) {
  ++attempts_;
  const bool failed = wal_frames < 0 || checkpointed_frames < 0;
  // A WAL with fewer frames than at the last attempt has restarted from its beginning: the
  // counts start over, and the restart itself was progress.
  const bool restarted = !failed && wal_frames < last_wal_frames_;
  const bool moved = !failed && (checkpointed_frames >= wal_frames || restarted ||
                                 checkpointed_frames > last_checkpointed_);
  if (moved) {
    paused_ = false;
  } else {
    ++futile_attempts_;
    paused_ = true;
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(ended - started);
    resume_at_ = ended + std::clamp(took * kPauseFactor, kMinPause, kMaxPause);
    resume_at_frames_ = 2 * static_cast<std::int64_t>(std::max(wal_frames, kThresholdFrames));
  }
  if (!failed) {
    last_wal_frames_ = wal_frames;
    last_checkpointed_ = checkpointed_frames;
  }
}

}  // namespace readpast::detail::sqlite
