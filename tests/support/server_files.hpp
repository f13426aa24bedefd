// Small helpers of the test servers (engines/*_server.cpp): their children's descriptors and
// their log files.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

namespace readpast::test {

// Closes every descriptor from `first` on, in a child between fork and exec, so that a server
// does not inherit the test's pipes and sockets (it would hold them open forever).
void close_from(unsigned first);

// The last `bytes` bytes of `file` (all of it when shorter; empty when it cannot be read):
// a server's log for an error message.
std::string read_tail(const std::filesystem::path& file, std::size_t bytes);

}  // namespace readpast::test
