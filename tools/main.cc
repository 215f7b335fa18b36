// meshplan command line. Each subcommand lives in its own file (tools/*_command.cc).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/base/did_you_mean.h"
#include "core/base/escape.h"
#include "core/base/temp_files.h"
#include "tools/cli_common.h"
#include "tools/commands.h"
#include "tools/exception_guard.h"
#include "tools/execute_run.h"
#include "tools/forced_outputs.h"
#include "tools/launcher_rank.h"

namespace {

// No meshplan flag takes an empty value ("--top ''" or "--reserve-gib="): CLI11 would read it as
// 0 or as the default without a word (issue 33). The flag at fault, or "" when there is none.
std::string EmptyValue(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.empty() && i > 1 && std::string(argv[i - 1]).rfind("-", 0) == 0) return argv[i - 1];
    if (arg.rfind("--", 0) == 0 && arg.size() > 2 && arg.back() == '=')
      return arg.substr(0, arg.size() - 1);
  }
  return "";
}

// The long flags (without "--") of `app` and the commands above it.
std::vector<std::string> LongFlags(const CLI::App* app) {
  std::vector<std::string> names;
  for (; app != nullptr; app = app->get_parent()) {
    for (const CLI::Option* option : app->get_options()) {
      for (const std::string& name : option->get_lnames()) names.push_back(name);
    }
  }
  return names;
}

// What to say about a mistyped command or flag after a parse error (issue 48): the command path
// is followed through argv; a word where a command goes that names none is reported with the
// nearest command; otherwise the first long flag no command on the path knows gets the nearest
// flag. "" when neither applies.
std::string MistypeHint(CLI::App& app, int argc, char** argv, bool* unknown_command) {
  *unknown_command = false;
  CLI::App* leaf = &app;
  int i = 1;
  for (; i < argc; ++i) {
    const std::string word = argv[i];
    if (word.rfind("-", 0) == 0) break;
    const std::vector<CLI::App*> subs = leaf->get_subcommands([](CLI::App*) { return true; });
    if (subs.empty()) break;  // a positional value of the leaf command
    CLI::App* next = nullptr;
    std::vector<std::string> names;
    for (CLI::App* sub : subs) {
      names.push_back(sub->get_name());
      if (sub->get_name() == word) next = sub;
    }
    if (next == nullptr) {
      *unknown_command = true;
      std::string list;
      for (const std::string& name : names) list += (list.empty() ? "" : ", ") + name;
      return "unknown command '" + meshplan::EscapeControlBytes(word) + "'" +
             meshplan::DidYouMean(word, names) + " (commands: " + list + ")";
    }
    leaf = next;
  }
  const std::vector<std::string> flags = LongFlags(leaf);
  for (int j = i; j < argc; ++j) {
    std::string word = argv[j];
    if (word.rfind("--", 0) != 0 || word.size() <= 2) continue;
    word = word.substr(
        2, word.find('=') == std::string::npos ? std::string::npos : word.find('=') - 2);
    if (std::find(flags.begin(), flags.end(), word) != flags.end()) continue;
    const std::string hint = meshplan::DidYouMean(word, flags);
    if (!hint.empty()) {
      // " (did you mean 'seq'?)" names the flag as it is typed.
      return " (did you mean '--" + hint.substr(hint.find('\'') + 1);
    }
  }
  return "";
}

// Parses the command line into `app`; returns the exit code when parsing ends the program (help,
// version, a parse error: one line on stderr), else nullopt.
std::optional<int> ParseCommandLine(CLI::App& app, int argc, char** argv) {
  using namespace meshplan::tools;
  // Under mpirun every rank parses the same line: rank 0 alone says what is wrong with it.
  const bool speaks = LaunchedAsRankZero();
  if (const std::string flag = EmptyValue(argc, argv); !flag.empty()) {
    if (speaks) {
      std::fprintf(stderr,
                   "meshplan: error: %s: an empty value (give one, or leave the flag out)\n",
                   meshplan::EscapeControlBytes(flag).c_str());
    }
    return kExitInvalidInput;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (!speaks) return kExitInvalidInput;
    bool unknown_command = false;
    const std::string hint = MistypeHint(app, argc, argv, &unknown_command);
    std::fprintf(
        stderr, "meshplan: error: %s (see meshplan --help)\n",
        unknown_command ? hint.c_str() : (meshplan::EscapeControlBytes(e.what()) + hint).c_str());
    return kExitInvalidInput;
  }
  return std::nullopt;
}

int RunMeshplan(int argc, char** argv) {
  using namespace meshplan::tools;
  CLI::App app{
      "meshplan: plan, simulate, execute and validate context-parallel attention on GPU clusters"};
  app.set_version_flag("--version", std::string("meshplan ") + MESHPLAN_VERSION +
                                        " (execute backends: cpu" +
                                        (CudaBackendBuilt() ? ", cuda" : "") + ")");
  app.require_subcommand(1);
  const std::pair<const char*, Runner> commands[] = {{"plan", RegisterPlanCommand(app)},
                                                     {"simulate", RegisterSimulateCommand(app)},
                                                     {"topo", RegisterTopoCommand(app)},
                                                     {"execute", RegisterExecuteCommand(app)},
                                                     {"sweep", RegisterSweepCommand(app)},
                                                     {"fit", RegisterFitCommand(app)},
                                                     {"calibrate", RegisterCalibrateCommand(app)},
                                                     {"bench", RegisterBenchCommand(app)},
                                                     {"step", RegisterStepCommand(app)}};
  bool force = false;
  AddForceFlags(app, &force);
  if (const std::optional<int> code = ParseCommandLine(app, argc, argv)) return *code;
  // --force: read-only output files the command names become writable for its run.
  ForcedOutputs forced;
  if (force) {
    const CLI::App* leaf = &app;
    while (!leaf->get_subcommands().empty()) leaf = leaf->get_subcommands().front();
    if (meshplan::Status st = forced.Allow(OutputPaths(*leaf)); !st.ok()) return ReportError(st);
  }
  for (CLI::App* sub : app.get_subcommands()) {
    for (const auto& [name, run] : commands) {
      if (sub->get_name() == name) return run();
    }
  }
  return kExitInvalidInput;
}

}  // namespace

namespace {

// What the command printed on standard output must have reached it: a full disk or a closed
// pipe otherwise loses it without a word (issue 33). Flushes stdout and, when that or an earlier
// write failed, says so in one line on stderr; returns the exit status to use.
int CheckStandardOutput(int status) {
  const bool failed = std::fflush(stdout) != 0 || std::ferror(stdout) != 0;
  if (!failed) return status;
  std::fprintf(stderr,
               "meshplan: error: writing to standard output failed (a full disk or a "
               "closed pipe): the output is incomplete\n");
  return status == meshplan::tools::kExitOk ? meshplan::tools::kExitFailure : status;
}

}  // namespace

int main(int argc, char** argv) {
  // An interrupted writer leaves no temporary file; an exception nobody caught is one error line.
  meshplan::InstallTempFileCleanupOnSignals();
  // A closed pipe is a failed write (EPIPE), reported by CheckStandardOutput with exit 1, not a
  // silent death by SIGPIPE (141).
  std::signal(SIGPIPE, SIG_IGN);
  meshplan::tools::InstallTerminateGuard();
  const int status = meshplan::tools::RunGuarded([&] { return RunMeshplan(argc, argv); });
  return CheckStandardOutput(status);
}
