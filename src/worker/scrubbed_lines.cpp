#include "worker/scrubbed_lines.hpp"

namespace readpast::worker {

void ScrubbedLines::append(std::string_view bytes) {
  pending_.append(bytes);
  std::size_t start = 0;
  for (auto end = pending_.find('\n'); end != std::string::npos; end = pending_.find('\n', start)) {
    emit_(secrets_.scrub(std::string_view(pending_).substr(start, end + 1 - start)));
    start = end + 1;
  }
  pending_.erase(0, start);
  if (pending_.size() >= kMaxLineBytes) {
    // Keeps back only what may be the beginning of a secret.
    std::string piece;
    pending_.erase(0, secrets_.scrub_prefix(pending_, piece));
    if (!piece.empty()) emit_(piece);
  }
}

void ScrubbedLines::finish() {
  if (pending_.empty()) return;
  emit_(secrets_.scrub(pending_));
  pending_.clear();
}

}  // namespace readpast::worker
