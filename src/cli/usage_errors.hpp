// cli/usage_errors.hpp — CLI11's parse errors as readpast's usage errors: one line that
// names the option or command at fault, says what was expected, and suggests the known
// name a misspelt one is close to ("unknown option --exce (did you mean --exec?)").
//
// CLI11 reports the first rule it checks, not the first mistake: an unknown option's value
// can fill a positional, so `work q --exce true` fails with "--exec is required". An
// argument CLI11 could not place is the cause, so it is reported before anything else.
// The texts of CLI11's errors are read where they carry no structure (the option and
// value of a failed conversion); tests/cli/usage_errors_test.cpp pins each one.
//
// Thread-safety: pure functions of the parsed app.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace readpast::cli {

// The message for `error`, thrown by `root.parse(...)`: one line, without the "readpast: "
// prefix.
std::string usage_error_message(const CLI::ParseError& error, const CLI::App& root);

}  // namespace readpast::cli
