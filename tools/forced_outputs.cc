#include "tools/forced_outputs.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace meshplan::tools {
namespace {

constexpr const char* kOutputOptions[] = {"--out", "--trace", "--timeline"};

}  // namespace

void AddForceFlags(CLI::App& app, bool* force) {
  for (CLI::App* sub : app.get_subcommands({})) {
    AddForceFlags(*sub, force);
    bool writes = false;
    for (const char* name : kOutputOptions) writes = writes || sub->get_option_no_throw(name);
    if (writes) {
      sub->add_flag("--force", *force,
                    "Replace output files made read-only (no write bit set); the new file keeps "
                    "the read-only mode");
    }
  }
}

std::vector<std::string> OutputPaths(const CLI::App& command) {
  std::vector<std::string> paths;
  for (const char* name : kOutputOptions) {
    const CLI::Option* option = command.get_option_no_throw(name);
    if (option == nullptr || option->count() == 0) continue;
    for (const std::string& value : option->results()) paths.push_back(value);
  }
  return paths;
}

Status ForcedOutputs::Allow(const std::vector<std::string>& paths) {
  for (const std::string& path : paths) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || (st.st_mode & 0222) != 0)
      continue;
    const mode_t mode = st.st_mode & 07777;
    if (::chmod(path.c_str(), mode | S_IWUSR) != 0) {
      return Status::Io(path + ": --force: cannot make it writable (" +
                        std::string(std::strerror(errno)) + ")");
    }
    modes_.emplace_back(path, mode);
  }
  return Status::Ok();
}

ForcedOutputs::~ForcedOutputs() {
  for (const auto& [path, mode] : modes_) ::chmod(path.c_str(), mode);
}

}  // namespace meshplan::tools
