#include "support/temp_dir.hpp"

#include <cstdlib>
#include <stdexcept>
#include <system_error>
#include <vector>

namespace readpast::test {

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "readpast-test-XXXXXX").string();
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (::mkdtemp(buffer.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = buffer.data();
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace readpast::test
