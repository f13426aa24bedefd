// Enqueues, leases and completes one job through the installed library.
#include <cstdio>
#include <readpast/readpast.hpp>
#include <string>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  auto queue = readpast::Queue::open(std::string("sqlite:") + argv[1], {.init_schema = true});
  if (!queue) {
    std::fprintf(stderr, "open: %s\n", queue.error().message.c_str());
    return 1;
  }
  auto id = queue->enqueue({.queue = "emails", .payload = R"({"to":"a@example.com"})"});
  auto jobs = queue->lease({.queue = "emails", .worker_id = "consumer"});
  if (!id || !jobs || jobs->size() != 1 || jobs->front().id != id->id) return 1;
  if (!queue->complete(jobs->front().id, *jobs->front().lease_token)) return 1;
  auto job = queue->get(id->id);
  if (!job || job->state != readpast::JobState::kSucceeded) return 1;
  std::printf("consumer: job %lld succeeded\n", static_cast<long long>(id->id));
  return 0;
}
