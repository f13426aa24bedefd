// chaos_figures: turns the figures the fault tests append to READPAST_FIGURES (one JSON
// object per checked run, see chaos.hpp) into the Markdown table of docs/reliability.md.
//
//   chaos_figures FIGURES.jsonl
//
// Exit 1 when a run had violations, a lost job or a double completion.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace {

std::string join(const nlohmann::json& counts) {
  std::string out;
  for (const auto& [key, value] : counts.items()) {
    if (value.get<long long>() == 0) continue;
    if (!out.empty()) out += ", ";
    out += key + " " + std::to_string(value.get<long long>());
  }
  return out.empty() ? "-" : out;
}

// "; N overlapping" when runs of one job overlapped in time, else nothing.
std::string overlapping(const nlohmann::json& figures) {
  const long long n = figures.at("overlapping_executions").get<long long>();
  return n > 0 ? "; " + std::to_string(n) + " overlapping" : "";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: chaos_figures FIGURES.jsonl\n");
    return 2;
  }
  std::ifstream in(argv[1]);
  if (!in) {
    std::fprintf(stderr, "chaos_figures: cannot read %s\n", argv[1]);
    return 1;
  }
  std::cout << "| run | engine | jobs | succeeded / dead | faults injected | lost | completed "
               "twice | violations | executions | retries | duplicate executions (cause) |\n"
            << "|---|---|---:|---:|---|---:|---:|---:|---:|---:|---|\n";
  long long jobs = 0, faults = 0, lost = 0, twice = 0, violations = 0, executions = 0,
            duplicates = 0;
  std::map<std::string, long long> causes;
  bool bad = false;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto run = nlohmann::json::parse(line);
    const auto& f = run.at("figures");
    long long run_faults = 0;
    for (const auto& [kind, n] : f.at("faults").items()) run_faults += n.get<long long>();
    std::cout << "| " << run.at("test").get<std::string>() << " | "
              << run.at("engine").get<std::string>() << " | " << f.at("jobs") << " | "
              << f.at("succeeded") << " / " << f.at("dead") << " | " << join(f.at("faults"))
              << " | " << f.at("lost") << " | " << f.at("double_completions") << " | "
              << f.at("violations") << " | " << f.at("executions") << " | " << f.at("retries")
              << " | " << f.at("duplicate_executions") << " (" << join(f.at("duplicate_causes"))
              << ")" << overlapping(f) << " |\n";
    jobs += f.at("jobs").get<long long>();
    faults += run_faults;
    lost += f.at("lost").get<long long>();
    twice += f.at("double_completions").get<long long>();
    violations += f.at("violations").get<long long>();
    executions += f.at("executions").get<long long>();
    duplicates += f.at("duplicate_executions").get<long long>();
    for (const auto& [cause, n] : f.at("duplicate_causes").items())
      causes[cause] += n.get<long long>();
    bad = bad || f.at("violations").get<long long>() > 0 || f.at("lost").get<long long>() > 0 ||
          f.at("double_completions").get<long long>() > 0;
  }
  std::ostringstream cause_text;
  for (const auto& [cause, n] : causes) {
    if (cause_text.tellp() > 0) cause_text << ", ";
    cause_text << cause << " " << n;
  }
  std::cout << "| **total** | | **" << jobs << "** | | **" << faults << "** | **" << lost
            << "** | **" << twice << "** | **" << violations << "** | " << executions << " | | "
            << duplicates << " (" << cause_text.str() << ") |\n";
  return bad ? 1 : 0;
}
