#include "core/schema_policy.hpp"

#include <algorithm>
#include <string>

namespace readpast::detail {
namespace {

Error too_new(int found, int supported) {
  return Error::schema("database schema version " + std::to_string(found) +
                       " is newer than this readpast understands (" + std::to_string(supported) +
                       "); upgrade readpast");
}

}  // namespace

Result<int> migrate_schema(MigrationSteps& steps, int target, int supported) {
  auto version = steps.version();
  if (!version) return fail_with(version.error());
  if (*version > supported) return fail_with(too_new(*version, supported));
  for (int next = *version + 1; next <= target; ++next) {
    if (auto ok = steps.apply(next); !ok) {
      if (ok.error().is_unavailable()) return fail_with(ok.error());
      return fail_with(
          Error::schema("migration " + std::to_string(next) + " failed: " + ok.error().message));
    }
  }
  return std::max(*version, target);
}

Status check_schema_version(int found, int supported, std::string_view where) {
  if (found == 0) {
    std::string schema = where.empty() ? "" : " (\"" + std::string(where) + "\")";
    return fail_with(
        Error::schema("the database has no readpast schema" + schema + "; run `readpast init`"));
  }
  if (found > supported) return fail_with(too_new(found, supported));
  if (found < supported) {
    return fail_with(Error::schema("database schema version " + std::to_string(found) +
                                   " is older than this readpast's (" + std::to_string(supported) +
                                   "); run `readpast init` to upgrade it in place"));
  }
  return {};
}

}  // namespace readpast::detail
