// `--force` (issue 33): an output file made read-only on purpose (no write bit set) is refused
// by every writer (core/base/atomic_file.h); with --force the command replaces it, and the new file
// keeps the old one's read-only mode. The writers stay strict: the flag makes the named files
// writable for the command's run and restores their modes after it.
#pragma once

#include <sys/types.h>

#include <CLI/CLI.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/base/status.h"

namespace meshplan::tools {

// Adds --force to every command that writes named output files (each leaf subcommand with one
// of the options OutputPaths reads).
void AddForceFlags(CLI::App& app, bool* force);

// The output files a parsed command names: the values of its --out, -o, --trace and --timeline.
std::vector<std::string> OutputPaths(const CLI::App& command);

class ForcedOutputs {
 public:
  ForcedOutputs() = default;
  ForcedOutputs(const ForcedOutputs&) = delete;
  ForcedOutputs& operator=(const ForcedOutputs&) = delete;
  // Makes each of `paths` that is (or links to) a regular file with no write bit writable by its
  // owner, remembering its mode. An error (kIo) names the file chmod refused.
  Status Allow(const std::vector<std::string>& paths);
  // Gives whatever file is at each allowed path now (the replaced one) the remembered mode.
  ~ForcedOutputs();

 private:
  std::vector<std::pair<std::string, mode_t>> modes_;
};

}  // namespace meshplan::tools
