// What docs/worker.md's C++ snippets take as the reader's own code.
#pragma once

#include <readpast/readpast.hpp>
#include <stop_token>
#include <string_view>

bool send(std::string_view payload, readpast::JobId idempotency_key, std::stop_token cancel);
