// server/router.hpp — maps a method and a canonical path (request_target.hpp) to a route.
// Patterns are literal segments and {name} segments: "/api/jobs/{id}/retry" matches
// "/api/jobs/42/retry" with id = "42".
//
// Every route says who may call it. Access is decided from the route the path matches, not
// from the path's spelling: a path that matches no route, or a route added without
// Access::kPublic, needs the token (deny by default).
//
// Thread-safety: routes are added before serving; after that, access() and dispatch() may
// be called from many threads at once (they only read).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "server/http.hpp"

namespace readpast::server {

enum class Access {
  kToken,   // needs the bearer token when the server has one
  kPublic,  // holds no data (the dashboard's own files): served without the token
};

class Router {
 public:
  void add(std::string method, std::string_view pattern, Route route,
           Access access = Access::kToken);

  // Who may request this method and path: kPublic only when it matches a public route.
  Access access(std::string_view method, std::string_view path) const;

  // The response of the route that matches; 404 not_found when no pattern matches the path,
  // 405 method_not_allowed (with an Allow header) when one does but not for this method.
  HttpResponse dispatch(HttpRequest& request) const;

 private:
  struct Entry {
    std::string method;
    std::vector<std::string> segments;  // "{name}" for a parameter
    Route route;
    Access access;
  };
  // Whether `entry`'s pattern matches `segments`; fills `params` when given.
  static bool matches(const Entry& entry, const std::vector<std::string_view>& segments,
                      std::map<std::string, std::string, std::less<>>* params);
  std::vector<Entry> entries_;
};

// "/a/b" → {"a", "b"}. The path is canonical (no empty segments); "/" → {}.
std::vector<std::string_view> split_path(std::string_view path);

}  // namespace readpast::server
