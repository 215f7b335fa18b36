// meshplan command line. Each subcommand lives in its own file (tools/*_command.cc).
#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>

#include "core/base/escape.h"
#include "core/base/temp_files.h"
#include "tools/cli_common.h"
#include "tools/commands.h"
#include "tools/exception_guard.h"
#include "tools/execute_run.h"
#include "tools/forced_outputs.h"

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

// Parses the command line into `app`; returns the exit code when parsing ends the program (help,
// version, a parse error: one line on stderr), else nullopt.
std::optional<int> ParseCommandLine(CLI::App& app, int argc, char** argv) {
  using namespace meshplan::tools;
  if (const std::string flag = EmptyValue(argc, argv); !flag.empty()) {
    std::fprintf(stderr, "meshplan: error: %s: an empty value (give one, or leave the flag out)\n",
                 meshplan::EscapeControlBytes(flag).c_str());
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
    std::fprintf(stderr, "meshplan: error: %s (see meshplan --help)\n",
                 meshplan::EscapeControlBytes(e.what()).c_str());
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
  const std::pair<const char*, Runner> commands[] = {
      {"plan", RegisterPlanCommand(app)},           {"simulate", RegisterSimulateCommand(app)},
      {"topo", RegisterTopoCommand(app)},           {"execute", RegisterExecuteCommand(app)},
      {"sweep", RegisterSweepCommand(app)},         {"fit", RegisterFitCommand(app)},
      {"calibrate", RegisterCalibrateCommand(app)}, {"bench", RegisterBenchCommand(app)}};
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
