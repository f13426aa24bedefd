// engines/engine_registry.hpp — the engines of this build, and opening the one a URL names.
//
// Each engine folder (engines/<name>/) defines two functions, named after the engine:
//   const UrlScheme& <name>_url_scheme();      its URLs (core/url.hpp), in <name>_url.cpp,
//                                              which needs nothing but core
//   const EngineEntry& <name>_engine_entry();  how to open it
// and CMake lists the build's engines once, in READPAST_ENGINES (cmake/ReadpastEngines.cmake),
// which generates the two lists below. Nothing outside an engine's folder names it.
//
// Thread-safety: constant data and pure functions.
#pragma once

#include <memory>
#include <span>
#include <string_view>

#include "core/url.hpp"
#include "engines/engine.hpp"

namespace readpast::detail {

struct EngineEntry {
  std::string_view name;  // as in UrlScheme::engine and DatabaseUrl::engine
  Result<std::unique_ptr<Engine>> (*open)(const DatabaseUrl& url, const QueueOptions& options);
};

// Defined by the generated list of the build's engines, in the order of READPAST_ENGINES.
std::span<const EngineEntry* const> registered_engines();

// Opens the engine that parsed `url` (parse_database_url, core/url.hpp).
Result<std::unique_ptr<Engine>> open_engine(const DatabaseUrl& url, const QueueOptions& options);

}  // namespace readpast::detail
