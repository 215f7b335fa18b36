// NCCL, loaded at run time. meshplan does not link libnccl: a binary that did would not start on a
// machine without libnccl.so.2, not even for `meshplan plan`. Only runs that ask for NCCL
// (`execute --backend cuda --transport nccl|mpi`) load it, through LoadNccl, and call NCCL through
// the function pointers of the NcclLibrary it returns. nccl.h is compiled against for its types,
// enums and declarations (the pointers' types are decltype of NCCL's own functions, so a signature
// that changes fails to compile); no NCCL symbol is referenced, so nothing of libnccl is linked.
//
// No global: whoever sets up an NCCL run loads the library and hands the NcclLibrary on to the
// code that calls it (CudaOpsConfig::nccl), which keeps it until its communicators are destroyed.
#pragma once

#include <nccl.h>

#include <memory>
#include <string>

#include "core/base/status.h"

namespace meshplan::exec::cuda {

inline constexpr const char kNcclLibraryName[] = "libnccl.so.2";

// The NCCL functions meshplan calls, named as in nccl.h without the "nccl" prefix. Every pointer
// is non-null in a NcclLibrary that LoadNccl returned.
struct NcclLibrary {
  decltype(&::ncclGetVersion) GetVersion = nullptr;
  decltype(&::ncclGetErrorString) GetErrorString = nullptr;
  decltype(&::ncclGetUniqueId) GetUniqueId = nullptr;
  decltype(&::ncclCommInitAll) CommInitAll = nullptr;
  decltype(&::ncclCommInitRank) CommInitRank = nullptr;
  decltype(&::ncclCommDestroy) CommDestroy = nullptr;
  decltype(&::ncclCommAbort) CommAbort = nullptr;
  decltype(&::ncclCommGetAsyncError) CommGetAsyncError = nullptr;
  decltype(&::ncclGroupStart) GroupStart = nullptr;
  decltype(&::ncclGroupEnd) GroupEnd = nullptr;
  decltype(&::ncclSend) Send = nullptr;
  decltype(&::ncclRecv) Recv = nullptr;

  std::string path;  // the name it was loaded by (`library` of LoadNccl)
  void* handle = nullptr;

  NcclLibrary() = default;
  NcclLibrary(const NcclLibrary&) = delete;
  NcclLibrary& operator=(const NcclLibrary&) = delete;
  ~NcclLibrary();  // dlclose; the library itself stays mapped (RTLD_NODELETE, see nccl_library.cc)
};

// dlopen(library, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE) and every function above. A library that
// cannot be opened, or lacks a function (an NCCL older than this build's nccl.h), is the user's to
// fix (install NCCL 2, or put it on LD_LIBRARY_PATH): kInvalidInput, naming the library, the
// missing symbol if any, and dlerror()'s reason, on one line.
Result<std::shared_ptr<const NcclLibrary>> LoadNccl(const std::string& library = kNcclLibraryName);

// "2.28.9" from ncclGetVersion's code (2.x before 2.9 used major*1000 + minor*100 + patch, later
// versions major*10000 + minor*100 + patch).
std::string NcclVersionName(int code);

}  // namespace meshplan::exec::cuda
