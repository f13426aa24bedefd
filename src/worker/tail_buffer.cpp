#include "worker/tail_buffer.hpp"

#include "core/utf8.hpp"

namespace readpast::worker {

void TailBuffer::append(std::string_view bytes) {
  if (bytes.size() >= capacity_) {
    truncated_ = truncated_ || bytes.size() > capacity_ || !data_.empty();
    data_.assign(bytes.substr(bytes.size() - capacity_));
    return;
  }
  std::size_t overflow = data_.size() + bytes.size();
  if (overflow > capacity_) {
    data_.erase(0, overflow - capacity_);
    truncated_ = true;
  }
  data_.append(bytes);
}

std::string TailBuffer::text() const {
  std::string_view kept = data_;
  while (!kept.empty()) {
    char c = kept.back();
    if (c != '\n' && c != '\r' && c != ' ' && c != '\t') break;
    kept.remove_suffix(1);
  }
  if (kept.empty()) return {};
  std::string text = truncated_ ? "..." : "";
  text += detail::sanitize_utf8(detail::without_cut_character(kept));
  return text;
}

}  // namespace readpast::worker
