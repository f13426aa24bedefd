// A small tmpfs mounted on a temporary directory for as long as the object lives: a disk that
// fills up, or a file system that can be remounted read-only. Mounting needs root; a test
// skips itself with why_not() when the mount could not be made.
// Thread-safety: none needed; each test owns its own.
#pragma once

#include <filesystem>
#include <string>

#include "support/temp_dir.hpp"

namespace readpast::test {

class SmallTmpfs {
 public:
  // `options` as mount(8) takes them, e.g. "size=8m,mode=0755".
  explicit SmallTmpfs(std::string options);
  ~SmallTmpfs();
  SmallTmpfs(const SmallTmpfs&) = delete;
  SmallTmpfs& operator=(const SmallTmpfs&) = delete;

  // Empty once mounted; else why not (not root, or mount's error).
  const std::string& why_not() const noexcept { return why_not_; }
  const std::string& options() const noexcept { return options_; }
  const std::filesystem::path& path() const noexcept { return dir_.path(); }
  std::string file(const std::string& name) const { return dir_.file(name); }

 private:
  TempDir dir_;
  std::string options_;
  std::string why_not_;
};

}  // namespace readpast::test
