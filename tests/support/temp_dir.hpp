// A temporary directory removed (recursively) when the object is destroyed.
// Thread-safety: none needed; each test owns its own.
#pragma once

#include <filesystem>
#include <string>

namespace readpast::test {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const noexcept { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace readpast::test
