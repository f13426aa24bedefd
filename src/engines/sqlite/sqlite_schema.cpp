#include "engines/sqlite/sqlite_schema.hpp"

#include "core/schema_policy.hpp"
#include "engines/sqlite/sqlite_statements.hpp"

namespace readpast::detail::sqlite {
namespace {

Result<int> read_version(Connection& connection) {
  auto has_table = connection.prepare(sql::has_version_table::text);
  if (!has_table) return fail_with(has_table.error());
  auto row = (*has_table)->step();
  if (!row) return fail_with(row.error());
  if ((*has_table)->int64(0) == 0) return 0;
  auto version = connection.prepare(sql::schema_version::text);
  if (!version) return fail_with(version.error());
  if (auto ok = (*version)->step(); !ok) return fail_with(ok.error());
  return static_cast<int>((*version)->int64(0));  // max() of no rows is NULL → 0
}

// Migrations as SQLite runs them, in the caller's IMMEDIATE transaction.
class SqliteMigrationSteps final : public MigrationSteps {
 public:
  explicit SqliteMigrationSteps(Connection& connection) : connection_(connection) {}
  Result<int> version() override { return read_version(connection_); }
  Status apply(int number) override {
    if (auto ok = connection_.exec(sql::migrations[static_cast<std::size_t>(number - 1)]); !ok) {
      return ok;
    }
    auto insert = connection_.prepare(sql::record_version::text);
    if (!insert) return fail_with(insert.error());
    (*insert)->bind(sql::record_version::version, number);
    if (auto ok = (*insert)->step(); !ok) return fail_with(ok.error());
    return {};
  }

 private:
  Connection& connection_;
};

}  // namespace

Result<int> migrate(Connection& connection, int target) {
  auto transaction = ImmediateTransaction::begin(connection);
  if (!transaction) return fail_with(transaction.error());
  if (auto ok = connection.exec(sql::create_version_table::text); !ok) return fail_with(ok.error());
  SqliteMigrationSteps steps(connection);
  auto version = migrate_schema(steps, target, kSchemaVersion);
  if (!version) return version;
  if (auto ok = transaction->commit(); !ok) return fail_with(ok.error());
  return version;
}

Result<int> schema_version(Connection& connection) {
  auto version = read_version(connection);
  if (!version) return version;
  if (auto ok = check_schema_version(*version, kSchemaVersion); !ok) return fail_with(ok.error());
  return version;
}

}  // namespace readpast::detail::sqlite
