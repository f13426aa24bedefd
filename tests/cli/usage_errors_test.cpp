// What a malformed command line says: one line that names the option or command, what was
// expected, and the known name a misspelt one is close to. Each case pins the exact line,
// and that nothing was done.
#include "cli_fixture.hpp"

namespace readpast::test {
namespace {

struct UsageCase {
  const char* name;
  std::vector<std::string> args;  // after --db DB
  std::string message;            // stderr, without "readpast: " and the newline
};

// Test names say the case; the arguments show in a failure's message.
void PrintTo(const UsageCase& c, std::ostream* os) {
  *os << c.name;
}

class UsageErrorTest : public CliTest, public ::testing::WithParamInterface<UsageCase> {};

TEST_P(UsageErrorTest, SaysWhatIsWrongInOneLineAndDoesNothing) {
  enqueue("q", "already there");
  const UsageCase& c = GetParam();
  auto r = rp(c.args);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(is_one_line_reason(r.err));
  EXPECT_EQ(r.err, "readpast: " + c.message + "\n");
  EXPECT_EQ(r.out, "");
  auto s = stats("q");
  EXPECT_EQ(s["available"], 1);
  EXPECT_EQ(s["running"], 0);
  EXPECT_EQ(s["succeeded"], 0);
}

INSTANTIATE_TEST_SUITE_P(
    Cli, UsageErrorTest,
    ::testing::Values(
        // Misspelt names, with the nearest known one.
        UsageCase{"MisspeltOption",
                  {"work", "q", "--exce", "true"},
                  "unknown option --exce (did you mean --exec?)"},
        UsageCase{"MisspeltOptionWithItsValueAttached",
                  {"work", "q", "--exec", "true", "--concurency=2"},
                  "unknown option --concurency (did you mean --concurrency?)"},
        UsageCase{"AbbreviatedOption",
                  {"work", "q", "--exec", "true", "--conc", "2"},
                  "unknown option --conc (did you mean --concurrency?)"},
        UsageCase{"MisspeltGlobalOption",
                  {"stats", "--verbos"},
                  "unknown option --verbos (did you mean --verbose?)"},
        UsageCase{"UnknownOption",
                  {"stats", "--frobnicate"},
                  "unknown option --frobnicate (see 'readpast stats --help')"},
        UsageCase{"MisspeltCommand", {"stat"}, "unknown command 'stat' (did you mean 'stats'?)"},
        UsageCase{"MisspeltSubcommand",
                  {"schedule", "ad", "nightly", "q"},
                  "unknown command 'schedule ad' (did you mean 'schedule add'?)"},
        UsageCase{"MisspeltShortOptionIsNotGuessed",
                  {"stats", "-x"},
                  "unknown option -x (see 'readpast stats --help')"},
        UsageCase{"UnknownCommand",
                  {"frobnicate"},
                  "unknown command 'frobnicate' (see 'readpast --help')"},
        UsageCase{"OneArgumentTooMany",
                  {"show", "1", "2"},
                  "unexpected argument '2' (see 'readpast show --help')"},
        // Values of the wrong kind.
        UsageCase{"NotANumber",
                  {"enqueue", "q", "x", "--priority", "high"},
                  "--priority: expected a whole number, got 'high'"},
        UsageCase{"NotAnId", {"cancel", "seven"}, "ID: expected a whole number, got 'seven'"},
        UsageCase{"OutOfRange",
                  {"work", "q", "--exec", "true", "--concurrency", "0"},
                  "--concurrency: expected a whole number from 1 to 1024, got '0'"},
        UsageCase{"NotANumberWithARange",
                  {"list", "q", "--limit", "many"},
                  "--limit: expected a whole number from 1 to 10000, got 'many'"},
        UsageCase{"NotPositive",
                  {"enqueue", "q", "x", "--max-attempts", "0"},
                  "--max-attempts: expected a whole number of at least 1, got '0'"},
        UsageCase{"NotOneOfTheChoices",
                  {"--log-format", "yaml", "stats"},
                  "--log-format: expected one of text, json, got 'yaml'"},
        // Something missing.
        UsageCase{"ValueMissing",
                  {"enqueue", "q", "x", "--priority"},
                  "--priority: the value is missing (expected a whole number)"},
        UsageCase{"RequiredOptionMissing",
                  {"work", "q"},
                  "missing --exec CMD (see 'readpast work --help')"},
        UsageCase{"RequiredArgumentMissing",
                  {"enqueue"},
                  "missing QUEUE (see 'readpast enqueue --help')"},
        UsageCase{"ValueOfTheLastOptionMissing",
                  {"work", "q", "--exec"},
                  "--exec: the value is missing (expected CMD)"},
        UsageCase{"NoCommand", {}, "no command given (see 'readpast --help')"},
        UsageCase{"NoSubcommand",
                  {"schedule"},
                  "'schedule' needs a command: one of add, list, remove, run"},
        // Options that do not go together.
        UsageCase{"ExcludedOptions",
                  {"stats", "-v", "-q"},
                  "--verbose and --quiet cannot be used together"}),
    [](const ::testing::TestParamInfo<UsageCase>& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace readpast::test
