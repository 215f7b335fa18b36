#include "executor/cuda/nccl_library.h"

#include <dlfcn.h>

namespace meshplan::exec::cuda {
namespace {

// dlerror() of the last failed dl* call, or a stand-in when it has none.
std::string DlError() {
  const char* why = dlerror();
  return why != nullptr ? why : "no reason given";
}

// Resolves `name` into `*fn`; the error names the symbol and the library.
template <typename Fn>
Status Resolve(void* handle, const std::string& library, const char* name, Fn* fn) {
  dlerror();  // clear a stale error, so a failure below reports its own
  void* symbol = dlsym(handle, name);
  if (symbol == nullptr) {
    return Status::Invalid(library + " has no " + name +
                           " (NCCL 2.7 or newer is needed): " + DlError());
  }
  *fn = reinterpret_cast<Fn>(symbol);
  return Status::Ok();
}

}  // namespace

// dlclose only drops the reference: the library was opened RTLD_NODELETE, because NCCL may leave
// threads or exit handlers behind that would then run in unmapped code, and a second run in the
// same process finds it already loaded.
NcclLibrary::~NcclLibrary() {
  if (handle != nullptr) dlclose(handle);
}

Result<std::shared_ptr<const NcclLibrary>> LoadNccl(const std::string& library) {
  dlerror();
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (handle == nullptr) {
    return Status::Invalid(
        "cannot load " + library +
        " (NCCL: install it, or add its directory to LD_LIBRARY_PATH): " + DlError());
  }
  auto nccl = std::make_shared<NcclLibrary>();
  nccl->handle = handle;  // closed by ~NcclLibrary from here on, on every return below too
  nccl->path = library;
  MESHPLAN_RETURN_IF_ERROR(Resolve(handle, library, "ncclGetVersion", &nccl->GetVersion));
  MESHPLAN_RETURN_IF_ERROR(Resolve(handle, library, "ncclGetErrorString", &nccl->GetErrorString));
  MESHPLAN_RETURN_IF_ERROR(Resolve(handle, library, "ncclGetUniqueId", &nccl->GetUniqueId));
  MESHPLAN_RETURN_IF_ERROR(Resolve(handle, library, "ncclCommInitAll", &nccl->CommInitAll));
  MESHPLAN_RETURN_IF_ERROR(Resolve(handle, library, "ncclCommInitRank", &nccl->CommInitRank));
  MESHPLAN_RETURN_IF_ERROR(Resolve(handle, library, "ncclCommDestroy", &nccl->CommDestroy));
  MESHPLAN_RETURN_IF_ERROR(Resolve(handle, library, "ncclCommAbort", &nccl->CommAbort));
  MESHPLAN_RETURN_IF_ERROR(
      Resolve(handle, library, "ncclCommGetAsyncError", &nccl->CommGetAsyncError));
  MESHPLAN_RETURN_IF_ERROR(Resolve(handle, library, "ncclGroupStart", &nccl->GroupStart));
  MESHPLAN_RETURN_IF_ERROR(Resolve(handle, library, "ncclGroupEnd", &nccl->GroupEnd));
  MESHPLAN_RETURN_IF_ERROR(Resolve(handle, library, "ncclSend", &nccl->Send));
  MESHPLAN_RETURN_IF_ERROR(Resolve(handle, library, "ncclRecv", &nccl->Recv));
  return std::shared_ptr<const NcclLibrary>(std::move(nccl));
}

std::string NcclVersionName(int code) {
  const int major = code >= 10000 ? code / 10000 : code / 1000;
  const int minor = code >= 10000 ? code / 100 % 100 : code / 100 % 10;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(code % 100);
}

}  // namespace meshplan::exec::cuda
