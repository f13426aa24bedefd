#include "server/router.hpp"

#include "server/responses.hpp"

namespace readpast::server {
namespace {

bool is_parameter(std::string_view segment) {
  return segment.size() > 2 && segment.front() == '{' && segment.back() == '}';
}

}  // namespace

std::vector<std::string_view> split_path(std::string_view path) {
  std::vector<std::string_view> segments;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    if (end > start) segments.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  return segments;
}

void Router::add(std::string method, std::string_view pattern, Route route, Access access) {
  Entry entry{std::move(method), {}, std::move(route), access};
  for (auto segment : split_path(pattern)) entry.segments.emplace_back(segment);
  entries_.push_back(std::move(entry));
}

bool Router::matches(const Entry& entry, const std::vector<std::string_view>& segments,
                     std::map<std::string, std::string, std::less<>>* params) {
  if (entry.segments.size() != segments.size()) return false;
  for (std::size_t i = 0; i < segments.size(); ++i) {
    const std::string& want = entry.segments[i];
    if (is_parameter(want)) {
      if (params) (*params)[want.substr(1, want.size() - 2)] = std::string(segments[i]);
    } else if (want != segments[i]) {
      return false;
    }
  }
  return true;
}

Access Router::access(std::string_view method, std::string_view path) const {
  const auto segments = split_path(path);
  for (const auto& entry : entries_) {
    if (entry.method == method && matches(entry, segments, nullptr)) return entry.access;
  }
  return Access::kToken;
}

HttpResponse Router::dispatch(HttpRequest& request) const {
  const auto segments = split_path(request.path);
  std::string allowed;
  for (const auto& entry : entries_) {
    std::map<std::string, std::string, std::less<>> params;
    if (!matches(entry, segments, &params)) continue;
    if (entry.method != request.method) {
      if (allowed.find(entry.method) == std::string::npos) {
        allowed += allowed.empty() ? entry.method : ", " + entry.method;
      }
      continue;
    }
    request.params = std::move(params);
    return entry.route(request);
  }
  if (!allowed.empty()) {
    HttpResponse response = error_response(405, "method_not_allowed",
                                           request.method + " is not allowed here; use " + allowed);
    response.headers.emplace_back("Allow", allowed);
    return response;
  }
  return error_response(404, "not_found", "no such path: " + request.path);
}

}  // namespace readpast::server
