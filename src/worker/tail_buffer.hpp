// worker/tail_buffer.hpp — keeps the last N bytes of a stream (a command's stderr).
//
// Thread-safety: none; owned by the one thread that reads the stream.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace readpast::worker {

class TailBuffer {
 public:
  explicit TailBuffer(std::size_t capacity) : capacity_(capacity) {}

  void append(std::string_view bytes);
  // The bytes kept, oldest first.
  const std::string& bytes() const noexcept { return data_; }
  // True when older bytes were dropped to stay within the capacity.
  bool truncated() const noexcept { return truncated_; }

  // The tail as one piece of text for last_error: valid UTF-8, trailing whitespace
  // trimmed, "..." in front when older output was dropped. Empty when there was none.
  std::string text() const;

 private:
  std::size_t capacity_;
  std::string data_;  // invariant: data_.size() <= capacity_
  bool truncated_ = false;
};

}  // namespace readpast::worker
