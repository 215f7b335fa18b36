#include "simulator/shared_device.h"

#include <algorithm>

namespace meshplan::sim {

double SharedDevice::RateOf(size_t i) const {
  const double copies = static_cast<double>(copies_);
  const double m = static_cast<double>(kernels_.size()) + copies;
  if (sharing_ == DeviceSharing::kSerial) {
    return std::clamp(concurrent_ - copies - static_cast<double>(i), 0.0, 1.0);
  }
  return std::min(1.0, concurrent_ / m);
}

void SharedDevice::Advance(SimTime now) {
  const double elapsed = static_cast<double>(now - updated_);
  if (elapsed > 0) {
    for (size_t i = 0; i < kernels_.size(); ++i) {
      kernels_[i].remaining_ns = std::max(0.0, kernels_[i].remaining_ns - elapsed * RateOf(i));
    }
  }
  updated_ = now;
}

void SharedDevice::Start(SimTime now, int32_t rank, int32_t op, double work_ns) {
  Advance(now);
  kernels_.push_back(Kernel{rank, op, std::max(0.0, work_ns)});
}

void SharedDevice::StartCopy(SimTime now) {
  Advance(now);
  ++copies_;
}

void SharedDevice::EndCopy(SimTime now) {
  Advance(now);
  if (copies_ > 0) --copies_;
}

void SharedDevice::Finish(SimTime now, int32_t rank, int32_t op) {
  Advance(now);
  auto it = std::find_if(kernels_.begin(), kernels_.end(),
                         [&](const Kernel& k) { return k.rank == rank && k.op == op; });
  if (it != kernels_.end()) kernels_.erase(it);
}

}  // namespace meshplan::sim
