// server/embedded_file.hpp — the dashboard's files (src/server/web/), built into the binary
// by cmake/EmbedAssets.cmake at build time.
//
// Thread-safety: constant data.
#pragma once

#include <span>
#include <string_view>

namespace readpast::server {

struct EmbeddedFile {
  std::string_view path;  // relative to src/server/web/, e.g. "app.js"
  std::string_view content;
};

std::span<const EmbeddedFile> embedded_files();

}  // namespace readpast::server
