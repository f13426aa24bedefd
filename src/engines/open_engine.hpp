// engines/open_engine.hpp — picks the engine a URL names and opens it.
#pragma once

#include <memory>

#include "core/url.hpp"
#include "engines/engine.hpp"

namespace readpast::detail {

Result<std::unique_ptr<Engine>> open_engine(const DatabaseUrl& url, const QueueOptions& options);

}  // namespace readpast::detail
