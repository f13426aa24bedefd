#include "cli/usage_errors.hpp"

#include <fmt/format.h>

#include <charconv>
#include <limits>
#include <optional>
#include <string_view>
#include <vector>

#include "cli/job_text.hpp"
#include "cli/nearest_name.hpp"

namespace readpast::cli {
namespace {

// What the user typed, as it may be shown: escaped, and cut short.
std::string printable(std::string_view text) {
  return escape_for_terminal(text, 40);
}

// The command that was being parsed: the deepest subcommand named on the command line.
const CLI::App& command_of(const CLI::App& root) {
  const CLI::App* app = &root;
  while (!app->get_subcommands().empty()) app = app->get_subcommands().back();
  return *app;
}

// "work", "schedule add"; empty for the root.
std::string command_path(const CLI::App& command) {
  std::string path;
  for (const CLI::App* app = &command; app->get_parent() != nullptr; app = app->get_parent()) {
    path = path.empty() ? app->get_name() : app->get_name() + " " + path;
  }
  return path;
}

std::string help_hint(const CLI::App& command) {
  const std::string path = command_path(command);
  return fmt::format("(see 'readpast {}--help')", path.empty() ? "" : path + " ");
}

// The options `command` takes: its own and its parents' (they fall through).
std::vector<std::string> option_names(const CLI::App& command) {
  std::vector<std::string> names;
  for (const CLI::App* app = &command; app != nullptr; app = app->get_parent()) {
    for (const CLI::Option* option : app->get_options()) {
      for (const std::string& name : option->get_lnames()) names.push_back("--" + name);
      for (const std::string& name : option->get_snames()) names.push_back("-" + name);
    }
  }
  return names;
}

std::vector<std::string> subcommand_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    names.push_back(sub->get_name());
  }
  return names;
}

const CLI::Option* find_option(const CLI::App& command, const std::string& name) {
  for (const CLI::App* app = &command; app != nullptr; app = app->get_parent()) {
    if (const CLI::Option* option = app->get_option_no_throw(name)) return option;
  }
  return nullptr;
}

// The option's type name as its help shows it: "N", "DUR" (CLI11 appends its validators'
// descriptions after a ':', "N:INT in [1 - 1024]").
std::string type_name(const CLI::Option& option) {
  std::string type = option.get_type_name();
  return type.substr(0, type.find(':'));
}

// What a value of the option looks like, after "expected".
std::string expected_value(const CLI::Option* option) {
  const std::string type = option == nullptr ? "" : type_name(*option);
  if (type == "N" || type == "INT" || type == "UINT") return "a whole number";
  if (type == "ID") return "a job id (a whole number)";
  if (type == "FLOAT" || type == "NUMBER") return "a number";
  return type.empty() ? "a value" : type;
}

bool is_option(std::string_view arg) {
  return arg.size() > 1 && arg.starts_with('-');
}

// An argument CLI11 could not place: an unknown option, an unknown command, or one word
// too many. nullopt when every argument found its place.
std::optional<std::string> unplaced_argument(const CLI::App& root, const CLI::App& command) {
  const std::vector<std::string> unplaced = root.remaining(true);
  for (const std::string& arg : unplaced) {
    if (!is_option(arg)) continue;
    const std::string name = arg.substr(0, arg.find('='));
    const auto near = nearest_name(name, option_names(command));
    if (near) return fmt::format("unknown option {} (did you mean {}?)", printable(name), *near);
    return fmt::format("unknown option {} {}", printable(name), help_hint(command));
  }
  if (unplaced.empty()) return std::nullopt;
  const std::string& word = unplaced.front();
  // A command that has commands of its own (the root, `schedule`) was given a word that
  // names none of them.
  if (!command.get_subcommands([](const CLI::App*) { return true; }).empty()) {
    std::string path = command_path(command);
    if (!path.empty()) path += ' ';
    const auto near = nearest_name(word, subcommand_names(command));
    if (near)
      return fmt::format("unknown command '{}{}' (did you mean '{}{}'?)", path, printable(word),
                         path, *near);
    return fmt::format("unknown command '{}{}' {}", path, printable(word), help_hint(command));
  }
  return fmt::format("unexpected argument '{}' {}", printable(word), help_hint(command));
}

std::optional<double> parse_bound(std::string_view text) {
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// CLI::Range's bounds as words: "from 1 to 1024", or "of at least 1" when the top is
// just the largest int. (Its bounds are printed with std::to_string: a Range over doubles,
// such as CLI::PositiveNumber, would read "from 0.000000 to 1797...", so the commands use
// Ranges of whole numbers.)
std::string range_words(std::string_view low, std::string_view high) {
  const auto max = parse_bound(high);
  if (max && *max >= std::numeric_limits<int>::max()) return fmt::format("of at least {}", low);
  return fmt::format("from {} to {}", low, high);
}

// CLI::IsMember's set, "{text,json}", as "text, json".
std::string member_list(std::string_view set) {
  if (set.starts_with('{') && set.ends_with('}')) set = set.substr(1, set.size() - 2);
  std::string out;
  for (char c : set) out += c == ',' ? std::string(", ") : std::string(1, c);
  return out;
}

// "NAME: MSG" from a validator (CLI::Range, CLI::IsMember).
std::string validation_message(std::string_view text, const CLI::App& command) {
  const auto colon = text.find(": ");
  if (colon == std::string_view::npos) return std::string(text);
  const std::string name(text.substr(0, colon));
  const std::string_view message = text.substr(colon + 2);
  const std::string expected = expected_value(find_option(command, name));
  constexpr std::string_view kValue = "Value ";
  if (message.starts_with(kValue)) {
    const std::string_view rest = message.substr(kValue.size());
    if (auto at = rest.find(" not in range "); at != std::string_view::npos) {
      const std::string_view bounds = rest.substr(at + 14);
      if (auto to = bounds.find(" to "); to != std::string_view::npos) {
        return fmt::format("{}: expected {} {}, got '{}'", name, expected,
                           range_words(bounds.substr(0, to), bounds.substr(to + 4)),
                           printable(rest.substr(0, at)));
      }
    }
    if (auto at = rest.find(" could not be converted"); at != std::string_view::npos) {
      return fmt::format("{}: expected {}, got '{}'", name, expected,
                         printable(rest.substr(0, at)));
    }
  }
  if (auto at = message.rfind(" not in {"); at != std::string_view::npos) {
    return fmt::format("{}: expected one of {}, got '{}'", name,
                       member_list(message.substr(at + 8)), printable(message.substr(0, at)));
  }
  return std::string(text);
}

// "Could not convert: NAME = VALUE".
std::string conversion_message(std::string_view text, const CLI::App& command) {
  constexpr std::string_view kPrefix = "Could not convert: ";
  const auto equals = text.find(" = ");
  if (!text.starts_with(kPrefix) || equals == std::string_view::npos) return std::string(text);
  const std::string name(text.substr(kPrefix.size(), equals - kPrefix.size()));
  return fmt::format("{}: expected {}, got '{}'", name, expected_value(find_option(command, name)),
                     printable(text.substr(equals + 3)));
}

// "NAME is required", or "A subcommand is required".
std::string required_message(std::string_view text, const CLI::App& command) {
  constexpr std::string_view kSuffix = " is required";
  if (!text.ends_with(kSuffix)) return fmt::format("{} {}", text, help_hint(command));
  const std::string name(text.substr(0, text.size() - kSuffix.size()));
  if (name == "A subcommand") {
    if (command.get_parent() == nullptr) return "no command given (see 'readpast --help')";
    std::string names;
    for (const std::string& sub : subcommand_names(command)) {
      names += (names.empty() ? "" : ", ") + sub;
    }
    return fmt::format("'{}' needs a command: one of {}", command_path(command), names);
  }
  const CLI::Option* option = find_option(command, name);
  const bool takes_value =
      option != nullptr && option->get_items_expected_max() > 0 && option->nonpositional();
  return fmt::format("missing {}{} {}", name, takes_value ? " " + type_name(*option) : "",
                     help_hint(command));
}

// "NAME: 1 required TYPE missing": an option at the end of the line without its value.
std::string mismatch_message(std::string_view text, const CLI::App& command) {
  const auto colon = text.find(": ");
  if (colon == std::string_view::npos || !text.ends_with(" missing")) return std::string(text);
  const std::string name(text.substr(0, colon));
  return fmt::format("{}: the value is missing (expected {})", name,
                     expected_value(find_option(command, name)));
}

// "A excludes B".
std::string excludes_message(std::string_view text) {
  const auto at = text.find(" excludes ");
  if (at == std::string_view::npos) return std::string(text);
  return fmt::format("{} and {} cannot be used together", text.substr(0, at), text.substr(at + 10));
}

}  // namespace

std::string usage_error_message(const CLI::ParseError& error, const CLI::App& root) {
  const CLI::App& command = command_of(root);
  if (auto unplaced = unplaced_argument(root, command)) return *unplaced;
  const std::string_view text = error.what();
  if (dynamic_cast<const CLI::ConversionError*>(&error)) return conversion_message(text, command);
  if (dynamic_cast<const CLI::ValidationError*>(&error)) return validation_message(text, command);
  if (dynamic_cast<const CLI::RequiredError*>(&error)) return required_message(text, command);
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&error)) return mismatch_message(text, command);
  if (dynamic_cast<const CLI::ExcludesError*>(&error)) return excludes_message(text);
  return fmt::format("{} {}", text, help_hint(command));
}

}  // namespace readpast::cli
