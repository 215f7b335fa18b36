#include "executor/transport/mpi_plugin.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace meshplan::exec {
namespace {

namespace fs = std::filesystem;

constexpr const char* kPluginName = "libmeshplan_mpi.so";

// The places OpenMpiJob tries, in order (mpi_plugin.h).
std::vector<std::string> PluginCandidates() {
  std::vector<std::string> out;
  if (const char* path = std::getenv("MESHPLAN_MPI_PLUGIN"); path != nullptr && *path != '\0') {
    out.push_back(path);
    return out;
  }
  std::error_code error;
  const fs::path exe = fs::read_symlink("/proc/self/exe", error);
  if (error) return out;
  out.push_back((exe.parent_path() / kPluginName).string());
#ifdef MESHPLAN_MPI_PLUGIN_FROM_BINDIR
  out.push_back((exe.parent_path() / MESHPLAN_MPI_PLUGIN_FROM_BINDIR / kPluginName)
                    .lexically_normal()
                    .string());
#endif
  return out;
}

}  // namespace

Result<std::unique_ptr<MpiJob>> OpenMpiJob() {
#if !MESHPLAN_HAVE_MPI
  return Status::Invalid(
      "mpi is not available: this binary was built without MPI (apt-get install libopenmpi-dev "
      "openmpi-bin, then build again)");
#else
  std::string tried;
  for (const std::string& path : PluginCandidates()) {
    // Never closed: MPI libraries do not support being unloaded.
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = ::dlerror();
      // dlerror names the file itself ("PATH: cannot open shared object file: ...").
      tried += (tried.empty() ? "" : "; ") + (why != nullptr ? std::string(why) : path);
      continue;
    }
    using Open = MpiJob* (*)(std::string*);
    auto open = reinterpret_cast<Open>(::dlsym(handle, "meshplan_open_mpi_job"));
    if (open == nullptr) {
      return Status::Invalid(path + ": not meshplan's MPI plug-in (no meshplan_open_mpi_job)");
    }
    std::string error;
    std::unique_ptr<MpiJob> job(open(&error));
    if (job == nullptr) return Status::Internal(error);
    return job;
  }
  return Status::Invalid("mpi is not available: cannot open the MPI plug-in " +
                         std::string(kPluginName) + " (" +
                         (tried.empty() ? std::string("no place to look") : tried) +
                         "); is OpenMPI installed (libopenmpi3)?");
#endif
}

}  // namespace meshplan::exec
