// core/schema_policy.hpp: the schema-version rules every engine follows. The engines' own
// schema tests (tests/sqlite, tests/postgres) run them on real databases; these pin the
// decisions themselves with a recorder of the steps asked for.
#include "core/schema_policy.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace readpast::detail {
namespace {

class RecordedSteps final : public MigrationSteps {
 public:
  explicit RecordedSteps(int version, int failing = 0, ErrorCode failure = ErrorCode::kInternal)
      : version_(version), failing_(failing), failure_(failure) {}
  Result<int> version() override { return version_; }
  Status apply(int number) override {
    if (number == failing_) return fail_with(Error{failure_, "syntax error"});
    applied.push_back(number);
    version_ = number;
    return {};
  }
  std::vector<int> applied;

 private:
  int version_;
  int failing_;
  ErrorCode failure_;
};

TEST(SchemaPolicy, AppliesEveryMissingMigrationInOrder) {
  RecordedSteps fresh(0);
  EXPECT_EQ(migrate_schema(fresh, 4, 4).value_or(-1), 4);
  EXPECT_EQ(fresh.applied, (std::vector<int>{1, 2, 3, 4}));
  RecordedSteps old(2);
  EXPECT_EQ(migrate_schema(old, 4, 4).value_or(-1), 4);
  EXPECT_EQ(old.applied, (std::vector<int>{3, 4}));
  RecordedSteps current(4);
  EXPECT_EQ(migrate_schema(current, 4, 4).value_or(-1), 4);
  EXPECT_TRUE(current.applied.empty());
  RecordedSteps earlier_target(1);  // tests build a database as an older release left it
  EXPECT_EQ(migrate_schema(earlier_target, 2, 4).value_or(-1), 2);
  EXPECT_EQ(earlier_target.applied, (std::vector<int>{2}));
}

TEST(SchemaPolicy, ANewerSchemaIsRefusedAndNothingRuns) {
  RecordedSteps newer(5);
  auto result = migrate_schema(newer, 4, 4);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ErrorCode::kSchema);
  EXPECT_NE(result.error().message.find("newer"), std::string::npos);
  EXPECT_TRUE(newer.applied.empty());
}

TEST(SchemaPolicy, AFailedMigrationSaysWhichAndAnOutagePassesThrough) {
  RecordedSteps broken(1, 3);
  auto result = migrate_schema(broken, 4, 4);
  ASSERT_FALSE(result);
  EXPECT_EQ(result.error().code, ErrorCode::kSchema);
  EXPECT_EQ(result.error().message, "migration 3 failed: syntax error");
  EXPECT_EQ(broken.applied, (std::vector<int>{2}));
  RecordedSteps down(0, 1, ErrorCode::kUnavailable);
  auto outage = migrate_schema(down, 4, 4);
  ASSERT_FALSE(outage);
  EXPECT_EQ(outage.error().code, ErrorCode::kUnavailable);  // retried, not a schema error
}

TEST(SchemaPolicy, CommandsSayWhatToDoWithTheVersionTheyFind) {
  EXPECT_TRUE(check_schema_version(4, 4));
  for (int found : {0, 3, 5}) {
    auto status = check_schema_version(found, 4, "readpast");
    ASSERT_FALSE(status) << found;
    EXPECT_EQ(status.error().code, ErrorCode::kSchema);
  }
  EXPECT_NE(
      check_schema_version(0, 4, "jobs").error().message.find("(\"jobs\"); run `readpast init`"),
      std::string::npos);
  EXPECT_NE(check_schema_version(3, 4).error().message.find("upgrade it in place"),
            std::string::npos);
  EXPECT_NE(check_schema_version(5, 4).error().message.find("upgrade readpast"), std::string::npos);
}

}  // namespace
}  // namespace readpast::detail
