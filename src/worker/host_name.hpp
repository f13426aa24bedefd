// worker/host_name.hpp — this machine's name, as worker ids and the workers page show it.
#pragma once

#include <string>

namespace readpast::worker {

// gethostname(), or "localhost" when the system has none.
std::string host_name();

}  // namespace readpast::worker
