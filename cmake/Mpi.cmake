# Optional MPI for the executor's MPI transport (executor/transport/mpi_transport.h). Debian packages:
# libopenmpi-dev (headers, mpicxx, CMake discovery) and openmpi-bin (mpirun).
#
# Sets MESHPLAN_HAVE_MPI (ON/OFF) and, when ON, MPIEXEC_EXECUTABLE / MPIEXEC_NUMPROC_FLAG /
# MPIEXEC_PREFLAGS / MPIEXEC_POSTFLAGS (from FindMPI) for registering tests. Defines
# meshplan_link_mpi(target [PUBLIC|PRIVATE|INTERFACE]) to build a target against MPI.
option(MESHPLAN_WITH_MPI "Build the MPI transport when MPI is found" ON)

set(MESHPLAN_HAVE_MPI OFF)
if(MESHPLAN_WITH_MPI)
  # Only MPI's C API is used: skip the deprecated C++ bindings (OMPI_SKIP_MPICXX and
  # MPICH_SKIP_MPICXX).
  set(MPI_CXX_SKIP_MPICXX ON CACHE BOOL "Skip MPI's deprecated C++ bindings")
  find_package(MPI COMPONENTS CXX QUIET)
  if(MPI_CXX_FOUND)
    set(MESHPLAN_HAVE_MPI ON)
    message(STATUS "MPI found (MPI ${MPI_CXX_VERSION}, ${MPIEXEC_EXECUTABLE}): MPI transport built")
  else()
    message(STATUS
            "MPI not found: MPI transport not built (apt-get install libopenmpi-dev openmpi-bin)")
  endif()
endif()

# Links `target` with MPI::MPI_CXX and defines MESHPLAN_HAVE_MPI=1 for it (and, with the default
# PUBLIC, for whatever links it). No-op when MPI is not found, so callers need no if().
# The target must use the keyword form of target_link_libraries (PUBLIC/PRIVATE) everywhere.
function(meshplan_link_mpi target)
  set(scope PUBLIC)
  if(ARGC GREATER 1)
    set(scope ${ARGV1})
  endif()
  if(MESHPLAN_HAVE_MPI)
    target_link_libraries(${target} ${scope} MPI::MPI_CXX)
    target_compile_definitions(${target} ${scope} MESHPLAN_HAVE_MPI=1)
  endif()
endfunction()
