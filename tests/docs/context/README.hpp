// What README.md's C++ snippets take as the reader's own code.
#pragma once

#include <readpast/readpast.hpp>
#include <stop_token>
#include <string_view>

// Sends one mail; the job's id makes a repeated send harmless.
bool send_mail(std::string_view payload, readpast::JobId idempotency_key, std::stop_token cancel);
bool send_mail(std::string_view payload);
