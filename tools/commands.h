// Subcommands of the meshplan CLI. Each registers its flags on the app and returns a runner.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>

namespace meshplan::tools {

// Returns the exit code when the subcommand was chosen.
using Runner = std::function<int()>;

Runner RegisterPlanCommand(CLI::App& app);
Runner RegisterTopoCommand(CLI::App& app);
Runner RegisterSimulateCommand(CLI::App& app);
Runner RegisterExecuteCommand(CLI::App& app);
Runner RegisterSweepCommand(CLI::App& app);
Runner RegisterFitCommand(CLI::App& app);
Runner RegisterCalibrateCommand(CLI::App& app);
Runner RegisterBenchCommand(CLI::App& app);
Runner RegisterStepCommand(CLI::App& app);

}  // namespace meshplan::tools
