// server/api_support.hpp — small pieces every API route uses: reading path parameters and
// the body, and turning a Result into a response.
//
// Thread-safety: pure functions.
#pragma once

#include <functional>
#include <string>

#include "readpast/error.hpp"
#include "readpast/job.hpp"
#include "server/http.hpp"
#include "server/json_body.hpp"

namespace readpast::server {

// {id} of the path: a positive integer, else kInvalidArgument.
Result<JobId> job_id_param(const HttpRequest& request);
// {queue} of the path, checked against the queue-name rule.
Result<std::string> queue_param(const HttpRequest& request);
// ?name= as an integer within [low, high], or `fallback` when absent.
Result<std::int64_t> query_integer(const HttpRequest& request, std::string_view name,
                                   std::int64_t low, std::int64_t high, std::int64_t fallback);

// A route written as a function that returns a response or an Error; the Error becomes the
// JSON error response with its status (see responses.hpp).
Route api_route(std::function<Result<HttpResponse>(const HttpRequest&)> handler);

}  // namespace readpast::server
