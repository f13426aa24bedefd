#include "support/server_files.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

namespace readpast::test {

void close_from(unsigned first) {
  ::syscall(SYS_close_range, first, ~0U, 0U);
}

std::string read_tail(const std::filesystem::path& file, std::size_t bytes) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return {};
  std::ostringstream content;
  content << in.rdbuf();
  std::string text = content.str();
  return text.size() > bytes ? text.substr(text.size() - bytes) : text;
}

}  // namespace readpast::test
