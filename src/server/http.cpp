#include "server/http.hpp"

#include <algorithm>

namespace readpast::server {
namespace {

char lower(char c) noexcept {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

}  // namespace

bool CaseInsensitiveLess::operator()(std::string_view a, std::string_view b) const noexcept {
  return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(),
                                      [](char x, char y) { return lower(x) < lower(y); });
}

bool equals_ignoring_case(std::string_view a, std::string_view b) noexcept {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](char x, char y) { return lower(x) == lower(y); });
}

std::optional<std::string_view> HttpRequest::header(std::string_view name) const {
  auto it = headers.find(name);
  if (it == headers.end()) return std::nullopt;
  return std::string_view(it->second);
}

std::optional<std::string_view> HttpRequest::query_value(std::string_view name) const {
  auto it = query.find(name);
  if (it == query.end()) return std::nullopt;
  return std::string_view(it->second);
}

std::string_view HttpRequest::param(std::string_view name) const {
  auto it = params.find(name);
  return it == params.end() ? std::string_view() : std::string_view(it->second);
}

}  // namespace readpast::server
