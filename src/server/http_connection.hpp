// server/http_connection.hpp — one client connection of HttpService: reads requests one
// after another (keep-alive), each through the steps and limits of http_service.hpp.
//
// Lifetime: shared; the service's set of connections and every pending operation hold it.
// Thread-safety: every member function runs on the I/O thread, except the route itself,
// which runs on the pool and hands its response back to the I/O thread.
#pragma once

#include <array>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <memory>
#include <optional>

#include "server/http_service_state.hpp"

namespace readpast::server {

class HttpConnection : public std::enable_shared_from_this<HttpConnection> {
 public:
  HttpConnection(boost::asio::ip::tcp::socket socket, HttpService::State& state);

  // Serves requests until the client or a limit ends the connection.
  void start();
  // Answers 503 at once and closes: the server is at its connection cap.
  void refuse_over_capacity();
  // The service stops: an idle connection closes now, one with a request in progress after
  // its response.
  void shut_down();

 private:
  using error_code = boost::system::error_code;
  // What follows a response.
  enum class After {
    kNextRequest,  // keep-alive: read the next request
    kClose,        // close (the client asked for it, or the server stops)
    kLinger,       // a refusal: the rest of the request is unread (linger_then_close)
  };

  void read_head();
  void on_head(error_code ec);
  void read_body();
  void on_body(error_code ec);
  void run_route();
  void write(HttpResponse response, After after);
  void on_written(error_code ec, After after);
  // Answers and closes without reading what is left of the request.
  void refuse(HttpResponse response);
  // Stops sending, then reads and drops what the client still sends (bounded), then closes.
  void linger_then_close();
  void drain();
  void close();
  void release_slot();
  // The response for a failed read of the head or the body; nullopt: close without one.
  std::optional<HttpResponse> response_for(error_code ec) const;

  HttpService::State& state_;
  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  std::optional<boost::beast::http::response<boost::beast::http::string_body>> response_;
  std::array<char, 4096> drain_buffer_{};  // what a refused client still sends, dropped
  std::size_t drained_ = 0;
  HttpRequest request_;
  unsigned version_ = 11;
  bool head_method_ = false;
  bool keep_alive_ = false;
  bool busy_ = false;        // a request is past its head: its response is owed
  bool holds_slot_ = false;  // counted in state_.in_flight
  bool closed_ = false;
  bool counted_as_refusing_ = false;
};

}  // namespace readpast::server
