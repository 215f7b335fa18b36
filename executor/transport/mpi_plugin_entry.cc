// The entry point of libmeshplan_mpi.so (executor/transport/mpi_plugin.h): an MpiJob made of an
// MpiSession and its MpiTransport. Compiled into the plug-in only, with MPI.
#include <memory>
#include <string>
#include <utility>

#include "executor/transport/mpi_plugin.h"
#include "executor/transport/mpi_transport.h"

namespace meshplan::exec {
namespace {

class PluginMpiJob : public MpiJob {
 public:
  explicit PluginMpiJob(std::unique_ptr<MpiSession> session)
      : session_(std::move(session)), transport_(std::make_unique<MpiTransport>(*session_)) {}
  // The transport drains its sends before the session finalizes MPI.
  ~PluginMpiJob() override { transport_.reset(); }
  Transport& transport() override { return *transport_; }
  Status Flush(Clock::time_point deadline) override { return transport_->Flush(deadline); }

 private:
  std::unique_ptr<MpiSession> session_;
  std::unique_ptr<MpiTransport> transport_;
};

}  // namespace
}  // namespace meshplan::exec

extern "C" __attribute__((visibility("default"))) meshplan::exec::MpiJob* meshplan_open_mpi_job(
    std::string* error) {
  auto session = meshplan::exec::MpiSession::Init(nullptr, nullptr);
  if (!session.ok()) {
    *error = session.status().message();
    return nullptr;
  }
  return new meshplan::exec::PluginMpiJob(std::move(session).value());
}
