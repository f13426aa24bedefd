// Queue names: [A-Za-z0-9][A-Za-z0-9_.-]{0,127}, nothing else.
#include <gtest/gtest.h>

#include <string>

#include "readpast/queue.hpp"

namespace readpast {
namespace {

TEST(ValidateQueueName, AcceptsTheDocumentedAlphabet) {
  for (std::string name :
       {std::string("a"), std::string("Z"), std::string("0"), std::string("emails"),
        std::string("Emails.Daily-v2_x"), std::string("9lives"), std::string("a.b.c"),
        std::string("a--b"), std::string("a_"), std::string("a."), std::string("a-"),
        std::string(128, 'q'), "x" + std::string(127, '-')}) {
    auto status = validate_queue_name(name);
    EXPECT_TRUE(status.has_value()) << "'" << name << "': " << status.error().message;
  }
}

TEST(ValidateQueueName, RejectsEverythingElse) {
  using namespace std::string_literals;
  for (std::string name : {""s,
                           std::string(129, 'q'),
                           std::string(10000, 'q'),
                           "'q'"s,
                           "\"q\""s,
                           "q'"s,
                           "q;"s,
                           "q;drop table jobs"s,
                           "--q"s,
                           "-q"s,
                           "_q"s,
                           ".q"s,
                           ".."s,
                           "q]"s,
                           "[q]"s,
                           "q q"s,
                           " q"s,
                           "q "s,
                           "q\t"s,
                           "q\n"s,
                           "q\0x"s,
                           "\0"s,
                           "caf\xc3\xa9"s,
                           "\xff"s,
                           "q/x"s,
                           "q\\x"s,
                           "q*"s,
                           "q%"s,
                           "q:x"s,
                           "q,x"s,
                           "q`"s,
                           "q$"s,
                           "q@x"s,
                           "q+x"s}) {
    auto status = validate_queue_name(name);
    EXPECT_FALSE(status.has_value()) << "accepted '" << name << "' (" << name.size() << " bytes)";
    if (!status) {
      EXPECT_EQ(status.error().code, ErrorCode::kInvalidArgument);
      EXPECT_FALSE(status.error().message.empty());
      // A one-line message even for a name with a newline in it, and not a 10 kB echo.
      EXPECT_EQ(status.error().message.find('\n'), std::string::npos) << status.error().message;
      EXPECT_LT(status.error().message.size(), 1000u);
    }
  }
}

}  // namespace
}  // namespace readpast
