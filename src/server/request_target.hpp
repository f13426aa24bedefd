// server/request_target.hpp — the one place a request line's target (path and query) is
// decoded. The guard, the router and every route see only what parse_request_target()
// returns, so there is exactly one spelling of each path: a target that some other layer
// could read as a different path is refused here, not normalised in two places that might
// disagree (a doubled slash once walked past the token check while the router ignored it).
//
// Refused with kInvalidArgument (400): a target that is not origin-form ("/..."), an empty
// segment ("//", a trailing "/" other than the root's), "." or ".." segments, a malformed
// %XX escape, and any segment whose decoded form has a '/', '\', NUL or another control
// character (so "%2F" cannot smuggle a separator past the router).
//
// Thread-safety: pure functions.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "readpast/error.hpp"

namespace readpast::server {

struct RequestTarget {
  std::string path;  // percent-decoded, canonical: "/" or "/seg/seg" with no empty segment
  std::map<std::string, std::string, std::less<>> query;  // the first value of each name
};

Result<RequestTarget> parse_request_target(std::string_view target);

}  // namespace readpast::server
