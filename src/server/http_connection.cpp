#include "server/http_connection.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <string_view>

#include "server/responses.hpp"

namespace readpast::server {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

namespace {

// Headers that decide access or how the body is read: a second copy could make two readers
// of the request disagree about it, so it is refused rather than one copy chosen.
constexpr std::string_view kSingletonHeaders[] = {"Host",   "Authorization",  "Content-Type",
                                                  "Origin", "Sec-Fetch-Site", "Expect"};

// 503 with Retry-After: the server is at one of its caps; the client may come back shortly.
HttpResponse busy_response(const std::string& message) {
  HttpResponse busy = error_response(503, "unavailable", message + "; retry shortly");
  busy.headers.emplace_back("Retry-After", "1");
  return busy;
}

}  // namespace

HttpConnection::HttpConnection(asio::ip::tcp::socket socket, HttpService::State& state)
    : state_(state),
      stream_(std::move(socket)),
      // Room for the longest head allowed plus one read of body bytes, which the parser moves
      // out into the body as it goes: nothing grows with what the client sends.
      buffer_(state.limits.max_header_bytes + 8192) {}

void HttpConnection::start() {
  read_head();
}

void HttpConnection::read_head() {
  parser_.emplace();
  parser_->header_limit(static_cast<std::uint32_t>(state_.limits.max_header_bytes));
  parser_->body_limit(static_cast<std::uint64_t>(state_.limits.max_body_bytes));
  request_ = HttpRequest{};
  head_method_ = false;
  // One deadline for the whole request, head and body: it is not pushed back by each byte
  // that arrives, so a client that trickles cannot hold the connection past it.
  stream_.expires_after(state_.limits.request_timeout);
  http::async_read_header(
      stream_, buffer_, *parser_,
      [self = shared_from_this()](error_code ec, std::size_t) { self->on_head(ec); });
}

std::optional<HttpResponse> HttpConnection::response_for(error_code ec) const {
  if (ec == http::error::header_limit || ec == http::error::buffer_overflow) {
    return error_response(431, "header_too_large",
                          "the request line and headers are over the limit of " +
                              std::to_string(state_.limits.max_header_bytes) + " bytes");
  }
  if (ec == http::error::body_limit) {
    return error_response(413, "payload_too_large",
                          "the request body is over the limit of " +
                              std::to_string(state_.limits.max_body_bytes) + " bytes");
  }
  // The client went away, or the deadline passed (the stream is closed then): no one to
  // answer.
  if (ec == beast::error::timeout || ec == http::error::end_of_stream ||
      ec == http::error::partial_message || ec == asio::error::eof ||
      ec == asio::error::connection_reset || ec == asio::error::operation_aborted ||
      ec == asio::error::broken_pipe) {
    return std::nullopt;
  }
  return error_response(400, "invalid_argument", "malformed HTTP request: " + ec.message());
}

void HttpConnection::on_head(error_code ec) {
  if (closed_) return;
  if (ec) {
    if (auto response = response_for(ec)) return refuse(std::move(*response));
    return close();
  }
  const auto& head = parser_->get();
  version_ = head.version();
  keep_alive_ = head.keep_alive();
  request_.method = std::string(head.method_string());
  head_method_ = request_.method == "HEAD";
  if (head_method_) request_.method = "GET";
  request_.target = std::string(head.target());
  int fields = 0;
  for (const auto& field : head) {
    if (++fields > state_.limits.max_headers) {
      return refuse(error_response(
          431, "header_too_large",
          "the request has more than " + std::to_string(state_.limits.max_headers) + " headers"));
    }
    std::string name(field.name_string());
    for (auto singleton : kSingletonHeaders) {
      if (equals_ignoring_case(name, singleton) && request_.headers.contains(name)) {
        return refuse(error_response(400, "invalid_argument",
                                     "the header " + name + " is sent more than once"));
      }
    }
    request_.headers.emplace(std::move(name), std::string(field.value()));
  }

  if (auto refusal = state_.screen.screen(request_)) return refuse(std::move(*refusal));

  // A slot before the body: at most max_concurrent_requests bodies are in memory at once.
  if (state_.in_flight.fetch_add(1) >= state_.limits.max_concurrent_requests) {
    --state_.in_flight;
    return refuse(busy_response("the server is busy (" +
                                std::to_string(state_.limits.max_concurrent_requests) +
                                " requests in progress)"));
  }
  holds_slot_ = true;
  busy_ = true;

  if (parser_->is_done()) return run_route();
  auto expect = request_.header("Expect");
  if (expect && equals_ignoring_case(*expect, "100-continue")) {
    static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    asio::async_write(stream_, asio::buffer(kContinue.data(), kContinue.size()),
                      [self = shared_from_this()](error_code write_ec, std::size_t) {
                        if (write_ec) return self->close();
                        self->read_body();
                      });
    return;
  }
  read_body();
}

void HttpConnection::read_body() {
  // The deadline set in read_head() still runs.
  http::async_read(stream_, buffer_, *parser_,
                   [self = shared_from_this()](error_code ec, std::size_t) { self->on_body(ec); });
}

void HttpConnection::on_body(error_code ec) {
  if (closed_) return;
  if (ec) {
    release_slot();
    if (auto response = response_for(ec)) return refuse(std::move(*response));
    return close();
  }
  request_.body = parser_->release().body();
  run_route();
}

void HttpConnection::run_route() {
  // The route may wait on the database: it runs on the pool, and the I/O thread serves
  // other connections meanwhile. The work guard keeps run() from returning before the
  // response is back on the I/O thread.
  asio::post(state_.pool,
             [self = shared_from_this(), work = asio::make_work_guard(state_.io)]() mutable {
               HttpResponse response;
               try {
                 response = self->state_.screen.respond(self->request_);
               } catch (const std::exception&) {
                 response = error_response(500, "internal", "internal error");
               }
               asio::post(self->state_.io, [self, response = std::move(response)]() mutable {
                 self->release_slot();
                 self->write(std::move(response), self->keep_alive_ && !self->state_.stopping
                                                      ? After::kNextRequest
                                                      : After::kClose);
               });
             });
}

void HttpConnection::refuse(HttpResponse response) {
  write(std::move(response), After::kLinger);
}

void HttpConnection::refuse_over_capacity() {
  counted_as_refusing_ = true;
  refuse(busy_response("the server has " + std::to_string(state_.limits.max_connections) +
                       " connections open, its limit"));
}

void HttpConnection::write(HttpResponse response, After after) {
  if (closed_) return;
  busy_ = true;
  state_.screen.finish(request_, response);
  auto& out = response_.emplace(static_cast<http::status>(response.status), version_);
  for (const auto& [name, value] : response.headers) out.set(name, value);
  out.set(http::field::content_type, response.content_type);
  out.body() = std::move(response.body);
  out.keep_alive(after == After::kNextRequest);
  out.prepare_payload();
  // HEAD: the length of the body a GET would get, and no body.
  if (head_method_) out.body().clear();
  stream_.expires_after(state_.limits.request_timeout);
  http::async_write(stream_, out, [self = shared_from_this(), after](error_code ec, std::size_t) {
    self->on_written(ec, after);
  });
}

void HttpConnection::on_written(error_code ec, After after) {
  response_.reset();
  busy_ = false;
  if (ec || closed_) return close();
  if (after == After::kLinger && !state_.stopping) return linger_then_close();
  if (after != After::kNextRequest || state_.stopping) {
    error_code ignored;
    stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
    return close();
  }
  read_head();
}

void HttpConnection::linger_then_close() {
  error_code ignored;
  stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
  stream_.expires_after(kRefusalLinger);
  drain();
}

void HttpConnection::drain() {
  stream_.async_read_some(asio::buffer(drain_buffer_),
                          [self = shared_from_this()](error_code ec, std::size_t n) {
                            self->drained_ += n;
                            if (ec || self->drained_ > kRefusalDrainBytes) return self->close();
                            self->drain();
                          });
}

void HttpConnection::shut_down() {
  if (!busy_) close();
}

void HttpConnection::release_slot() {
  if (holds_slot_) {
    holds_slot_ = false;
    --state_.in_flight;
  }
}

void HttpConnection::close() {
  if (closed_) return;
  closed_ = true;
  release_slot();
  error_code ignored;
  stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  stream_.close();
  if (counted_as_refusing_) --state_.refusing;
  state_.connections.erase(shared_from_this());
}

}  // namespace readpast::server
