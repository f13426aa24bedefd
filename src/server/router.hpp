// server/router.hpp — maps a method and a path to a route. Patterns are literal segments
// and {name} segments: "/api/jobs/{id}/retry" matches "/api/jobs/42/retry" with id = "42".
//
// Thread-safety: routes are added before serving; after that, dispatch() may be called from
// many threads at once (it only reads).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "server/http.hpp"

namespace readpast::server {

class Router {
 public:
  void add(std::string method, std::string_view pattern, Route route);

  // The response of the route that matches; 404 not_found when no pattern matches the path,
  // 405 method_not_allowed (with an Allow header) when one does but not for this method.
  HttpResponse dispatch(HttpRequest& request) const;

 private:
  struct Entry {
    std::string method;
    std::vector<std::string> segments;  // "{name}" for a parameter
    Route route;
  };
  std::vector<Entry> entries_;
};

// "/a/b/" → {"a", "b"}
std::vector<std::string_view> split_path(std::string_view path);

}  // namespace readpast::server
