// core/random_bytes.hpp — bytes from the operating system's strong random source, for lease
// tokens (lease_tokens.hpp) and the engines that make a batch of them at once.
//
// Thread-safety: safe from any thread.
#pragma once

#include <span>

namespace readpast::detail {

// Fills `out` (getrandom, retried on EINTR and short reads). Throws std::runtime_error only
// when the system has no random source at all.
void fill_random(std::span<char> out);

}  // namespace readpast::detail
