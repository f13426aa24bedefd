// mailer — a small, complete program on readpast::Worker: it sends "emails" (files in an
// outbox directory, standing in for an SMTP server) with retries, and uses the job id as
// an idempotency key so that a job run twice (a worker that crashed after sending and
// before completing) never sends twice.
//
//   mailer DB_URL OUTBOX_DIR enqueue N     enqueue N emails
//   mailer DB_URL OUTBOX_DIR work          send until stopped (Ctrl-C) ...
//   mailer DB_URL OUTBOX_DIR drain         ... or until the queue is empty
//
// Every third email fails on its first attempt (a "temporary SMTP error") and succeeds on
// the retry, to show the backoff at work.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <readpast/readpast.hpp>
#include <string>

namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

// Sends one email, at most once per idempotency key: the outbox file is created
// exclusively, so a second send of the same key finds it and does nothing.
readpast::JobResult send_email(const fs::path& outbox, const readpast::Job& job) {
  nlohmann::json email = nlohmann::json::parse(job.payload, nullptr, /*allow_exceptions=*/false);
  if (email.is_discarded() || !email.contains("to")) {
    // A malformed job will never send: no retry.
    return readpast::JobResult::discard("payload is not an email: " + job.payload.substr(0, 80));
  }
  if (email.value("flaky", false) && job.attempts == 1) {
    return readpast::JobResult::failure("421 temporary failure, try again later");
  }
  const fs::path sent = outbox / fmt::format("{}.eml", job.id);  // the idempotency key
  const fs::path partial = outbox / fmt::format(".{}.{}.tmp", job.id, job.attempts);
  {
    std::ofstream out(partial);
    out << "To: " << email["to"].get<std::string>() << "\n"
        << "Subject: " << email.value("subject", "") << "\n\n"
        << email.value("body", "") << "\n";
  }
  std::error_code ec;
  fs::create_hard_link(partial, sent, ec);  // fails if it exists: already sent
  fs::remove(partial);
  if (ec && ec != std::errc::file_exists) return readpast::JobResult::failure(ec.message());
  return readpast::JobResult::success();
}

int enqueue(readpast::Queue& queue, int count) {
  std::vector<readpast::NewJob> jobs;
  for (int i = 1; i <= count; ++i) {
    readpast::NewJob job;
    job.queue = "emails";
    job.payload = nlohmann::json{
        {"to", fmt::format("user{}@example.com", i)},
        {"subject", fmt::format("Welcome, user {}", i)},
        {"body", "Thanks for signing up."},
        {"flaky",
         i % 3 == 0}}.dump();
    jobs.push_back(std::move(job));
  }
  auto enqueued = queue.enqueue_batch(jobs);
  if (!enqueued) {
    fmt::print(stderr, "mailer: {}\n", enqueued.error().message);
    return 1;
  }
  fmt::print("enqueued {} emails\n", enqueued->size());
  return 0;
}

int work(readpast::Queue& queue, readpast::ShutdownSignals& signals, const fs::path& outbox,
         bool drain) {
  readpast::WorkerOptions options;
  options.drain = drain;
  options.logger = [](const readpast::LogRecord& record) {
    if (record.level >= readpast::LogLevel::kWarn) fmt::print(stderr, "{}\n", record.message);
  };
  readpast::Worker worker(queue, options);
  readpast::QueueConfig config;
  config.concurrency = 4;
  config.timeout = 30s;
  config.backoff = readpast::Backoff{100ms, 10s, 0.2};
  auto handled = worker.handle(
      "emails", [&](const readpast::Job& job, std::stop_token) { return send_email(outbox, job); },
      config);
  if (!handled) {
    fmt::print(stderr, "mailer: {}\n", handled.error().message);
    return 1;
  }
  signals.on_signal([&](int) { worker.stop(); });  // Ctrl-C: a graceful stop; twice: at once
  if (auto ok = worker.run(); !ok) {
    fmt::print(stderr, "mailer: {}\n", ok.error().message);
    return 1;
  }
  auto done = worker.counters();
  fmt::print("sent {} emails, {} failed attempts, {} dead\n", done.succeeded, done.failed,
             done.dead);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    fmt::print(stderr, "usage: mailer DB_URL OUTBOX_DIR enqueue N | work | drain\n");
    return 2;
  }
  const std::string command = argv[3];
  // First, before any thread starts: SIGINT and SIGTERM go to this watcher only.
  readpast::ShutdownSignals signals;
  readpast::QueueOptions queue_options;
  queue_options.init_schema = true;
  auto queue = readpast::Queue::open(argv[1], queue_options);
  if (!queue) {
    fmt::print(stderr, "mailer: {}\n", queue.error().message);
    return 1;
  }
  const fs::path outbox = argv[2];
  fs::create_directories(outbox);
  if (command == "enqueue" && argc == 5) return enqueue(*queue, std::stoi(argv[4]));
  if (command == "work" || command == "drain") {
    return work(*queue, signals, outbox, command == "drain");
  }
  fmt::print(stderr, "usage: mailer DB_URL OUTBOX_DIR enqueue N | work | drain\n");
  return 2;
}
