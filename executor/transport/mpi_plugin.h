// The MPI transport as a plug-in: libmeshplan_mpi.so (built when CMake finds MPI) holds
// MpiSession and MpiTransport and is the only part of meshplan linked against libmpi, so the
// meshplan binary starts, plans and runs on threads where MPI is not installed (issue 32).
// `execute --transport mpi` opens it at run time (OpenMpiJob), as the CUDA backend opens NCCL.
//
// Where the plug-in is looked for, in order: $MESHPLAN_MPI_PLUGIN (a path; for tests and
// unusual installs), then beside the running binary (the build tree: build/tools/), then
// PREFIX/LIBDIR/meshplan/ relative to PREFIX/bin/ (an installed tree).
#pragma once

#include <memory>
#include <string>

#include "core/base/status.h"
#include "executor/transport/transport.h"

namespace meshplan::exec {

// One process's part of an MPI job: MPI initialized (MPI_Init_thread) and its transport over
// MPI_COMM_WORLD. Destroying it drains the transport's sends, then finalizes MPI.
class MpiJob {
 public:
  virtual ~MpiJob() = default;
  virtual Transport& transport() = 0;
  // Waits until every send issued so far completed locally, or `deadline` passes (kIo).
  virtual Status Flush(Clock::time_point deadline) = 0;
};

// Opens the plug-in and starts this process's part of the job. Errors, one line each:
// kInvalidInput when this build has no MPI transport or the plug-in cannot be opened (naming
// each place looked at and dlopen's reason, e.g. a missing libmpi.so.40), kInternal when MPI
// itself fails to initialize.
Result<std::unique_ptr<MpiJob>> OpenMpiJob();

}  // namespace meshplan::exec

// The plug-in's one exported entry point (C linkage, looked up by name): returns a new job, or
// null with the reason in *error.
extern "C" meshplan::exec::MpiJob* meshplan_open_mpi_job(std::string* error);
