// Whether this process is rank 0 of an MPI or Slurm launch (mpirun, srun), read from the
// launchers' environment before MPI is initialised, or was not launched as a rank at all. Every
// rank of `mpirun -np N meshplan ...` parses the same command line and refuses it the same way:
// only rank 0 prints the refusal, so the user reads one line, not N (issue 49).
#pragma once

#include <cstdlib>
#include <string>

namespace meshplan::tools {

inline bool LaunchedAsRankZero() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    if (const char* value = std::getenv(name); value != nullptr && *value != '\0')
      return std::string(value) == "0";
  }
  return true;
}

}  // namespace meshplan::tools
