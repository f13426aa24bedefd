// Every JSON body `readpast serve` accepts (server/api_bodies.hpp), from any bytes: the body
// is parsed as the server parses it (server/json_body.hpp) and handed to every reader. For
// any input: nothing crashes, throws or recurses without bound; a parsed body nests no
// deeper than kMaxJsonDepth; each reader either refuses with kInvalidArgument or returns
// values within the API's limits.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "readpast/queue.hpp"
#include "server/api_bodies.hpp"

namespace {

using namespace readpast;
using namespace readpast::server;

template <class T>
void expect_invalid_argument_on_failure(const Result<T>& result) {
  if (!result && result.error().code != ErrorCode::kInvalidArgument) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto body = JsonBody::parse(text);
  if (!body) {
    if (body.error().code != ErrorCode::kInvalidArgument) std::abort();
    return 0;
  }
  // What the server would echo: serialising must be safe for whatever was admitted.
  if (nests_deeper_than(body->value().dump(), kMaxJsonDepth)) std::abort();

  const std::string queue = "q";
  auto job = read_new_job(*body, queue);
  expect_invalid_argument_on_failure(job);
  if (job && (job->max_attempts < 1 || (job->delay && job->run_at))) std::abort();
  if (job && job->unique_for && (!job->unique_key || *job->unique_for <= Duration::zero())) {
    std::abort();
  }
  auto batch = read_job_batch(*body, queue);
  expect_invalid_argument_on_failure(batch);
  if (batch && (batch->empty() || batch->size() > kMaxBatch)) std::abort();
  auto lease = read_lease(*body, queue);
  expect_invalid_argument_on_failure(lease);
  if (lease && (lease->max_jobs < 1 || lease->max_jobs > 10000)) std::abort();
  expect_invalid_argument_on_failure(read_complete(*body));
  expect_invalid_argument_on_failure(read_fail(*body));
  expect_invalid_argument_on_failure(read_extend(*body));
  expect_invalid_argument_on_failure(read_release(*body));
  auto progress = read_progress(*body);
  expect_invalid_argument_on_failure(progress);
  // What it admits is JSON text within the limit that parses back.
  if (progress &&
      (progress->json.size() > kMaxProgressBytes || !nlohmann::json::accept(progress->json))) {
    std::abort();
  }
  auto empty = read_empty(*body);
  if (!empty && empty.error().code != ErrorCode::kInvalidArgument) std::abort();
  auto ids = read_job_ids(*body);
  expect_invalid_argument_on_failure(ids);
  if (ids) {
    for (auto id : *ids) {
      if (id <= 0) std::abort();
    }
  }
  auto state = read_retry_all(*body);
  expect_invalid_argument_on_failure(state);
  if (state && *state != JobState::kDead && *state != JobState::kCancelled) std::abort();
  expect_invalid_argument_on_failure(read_purge(*body, queue));
  // A limits body is accepted only with valid limits (what Queue::set_limits takes).
  auto limits = read_limits(*body);
  expect_invalid_argument_on_failure(limits);
  if (limits && (limits->empty() || !validate_limits(*limits))) std::abort();
  if (limits && limits->rate) {
    auto again = parse_rate(format_rate(*limits->rate));  // what stats and GET print
    if (!again || *again != *limits->rate) std::abort();
  }
  return 0;
}
