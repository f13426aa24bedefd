// The JSON arrays the MariaDB engine sends as one parameter of a statement, which reads them
// with JSON_TABLE: ids, [id, "token"] pairs, a batch's rows. MariaDB has no array parameters,
// and one statement over a JSON array replaces one round trip per element.
//
// Only what those statements read can be written: integers, null, and strings that need no
// escaping (validated queue names, hex). Nested arrays are opened and closed explicitly.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "readpast/job.hpp"

namespace readpast::detail::mariadb {

class JsonArray {
 public:
  JsonArray& number(std::int64_t value) {
    separate();
    text_.append(std::to_string(value));
    return *this;
  }
  JsonArray& null() {
    separate();
    text_.append("null");
    return *this;
  }
  // A string written as it is: the caller guarantees that it needs no escaping.
  JsonArray& plain_string(std::string_view value) {
    separate();
    text_.append("\"").append(value).append("\"");
    return *this;
  }
  // Bytes as a string of two lowercase hex digits each (UNHEX() on the server).
  JsonArray& hex_string(std::string_view bytes) {
    static constexpr char kHex[] = "0123456789abcdef";
    separate();
    text_ += '"';
    for (unsigned char byte : bytes) {
      text_ += kHex[byte >> 4];
      text_ += kHex[byte & 0x0f];
    }
    text_ += '"';
    return *this;
  }
  JsonArray& open() {
    separate();
    text_ += '[';
    return *this;
  }
  JsonArray& close() {
    text_ += ']';
    return *this;
  }
  // [first, second]
  JsonArray& pair(std::int64_t first, std::int64_t second) {
    return open().number(first).number(second).close();
  }
  // [id, "token"]: the shape of a lease, as lease_take_many and the *_many settles read it.
  JsonArray& lease(JobId id, const LeaseToken& token) {
    return open().number(id).plain_string(token.hex()).close();
  }

  // The array, closed; the builder is spent.
  std::string finish() && {
    text_ += ']';
    return std::move(text_);
  }

 private:
  // A ',' before every element but the first of its array.
  void separate() {
    if (text_.back() != '[') text_ += ',';
  }

  std::string text_ = "[";
};

}  // namespace readpast::detail::mariadb
