#include "engines/sqlite/sqlite_file_access.hpp"

#include <sys/statvfs.h>
#include <unistd.h>

#include <filesystem>

namespace readpast::detail::sqlite {
namespace {

std::string directory_of(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

}  // namespace

std::string why_not_writable(const std::string& path) {
  const std::string dir = directory_of(path);
  struct statvfs fs {};
  if (::statvfs(dir.c_str(), &fs) == 0 && (fs.f_flag & ST_RDONLY) != 0) {
    return "the file system is mounted read-only";
  }
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && ::access(path.c_str(), W_OK) != 0) {
    return "the file is not writable by this user";
  }
  if (::access(dir.c_str(), W_OK) != 0) {
    const std::string name = std::filesystem::path(path).filename().string();
    return "its directory " + dir + " is not writable by this user, and SQLite must create " +
           name + "-wal and " + name + "-shm there";
  }
  return {};
}

bool has_no_wal_files(const std::string& path) {
  std::error_code ec;
  return !std::filesystem::exists(path + "-wal", ec) && !std::filesystem::exists(path + "-shm", ec);
}

std::string immutable_uri(const std::string& path) {
  // RFC 3986 leaves these alone in a path; everything else is escaped.
  auto plain = [](unsigned char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '/' ||
           c == '-' || c == '_' || c == '.' || c == '~';
  };
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string uri = "file:";
  for (unsigned char c : path) {
    if (plain(c)) {
      uri += static_cast<char>(c);
    } else {
      uri += '%';
      uri += kHex[c >> 4];
      uri += kHex[c & 0xf];
    }
  }
  return uri + "?immutable=1";
}

}  // namespace readpast::detail::sqlite
