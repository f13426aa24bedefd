// readpast/version.hpp — library and schema versions.
#pragma once

namespace readpast {

inline constexpr const char* kVersion = "0.1.0";

}  // namespace readpast
