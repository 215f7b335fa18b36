#include "planner/comm_model.h"

#include <algorithm>

namespace meshplan::planner {

std::vector<double> Traffic::MaxPerLevel() const {
  std::vector<double> out(levels_, 0.0);
  for (size_t g = 0; g < bytes_.size(); g += levels_) {
    for (int l = 0; l < levels_; ++l) out[l] = std::max(out[l], bytes_[g + l]);
  }
  return out;
}

double Traffic::MaxTotal() const {
  double best = 0;
  for (size_t g = 0; g < bytes_.size(); g += levels_) {
    double sum = 0;
    for (int l = 0; l < levels_; ++l) sum += bytes_[g + l];
    best = std::max(best, sum);
  }
  return best;
}

CommModel::CommModel(const Topology& topology) : topology_(topology) {}

void CommModel::GpuStrideAndSize(const Placement& placement, int dim, int64_t* stride, int64_t* size) {
  *stride = placement.GpuStride(dim);
  *size = placement.DimSize(dim);
}

double CommModel::LinkSeconds(int level, int32_t hops, double bytes) const {
  const NetworkLevel& l = topology_.levels[level];
  return l.latency_s + bytes * hops * l.oversubscription / l.bandwidth_bytes_per_s;
}

const PatternRoute& CommModel::Route(int64_t stride, int64_t size, bool all_to_all) {
  auto key = std::make_tuple(stride, size, all_to_all);
  auto it = routes_.find(key);
  if (it != routes_.end()) return *it->second;
  auto route = std::make_unique<PatternRoute>();
  const int64_t gpus = topology_.num_gpus();
  const int levels = topology_.num_levels();
  if (!all_to_all) {
    route->level.resize(gpus);
    route->hops.resize(gpus);
    route->shift_entry.assign(static_cast<size_t>(gpus * levels), 0.0);
    for (int64_t g = 0; g < gpus; ++g) {
      const int64_t coord = (g / stride) % size;
      const int64_t peer = coord > 0 ? g - stride : g + (size - 1) * stride;
      const int level = topology_.LevelOf(g, peer);
      route->level[g] = static_cast<int8_t>(level);
      route->hops[g] = level < 0 ? 0 : static_cast<int32_t>(topology_.Hops(level, g, peer));
      if (level >= 0) route->shift_entry[g * levels + level] = 1.0;
      std::pair<int, int32_t> lh{level, route->hops[g]};
      if (level >= 0 && std::find(route->distinct.begin(), route->distinct.end(), lh) == route->distinct.end()) {
        route->distinct.push_back(lh);
      }
    }
  } else {
    route->a2a_weight.assign(static_cast<size_t>(gpus * levels), 0.0);
    route->a2a_peers.assign(static_cast<size_t>(gpus * levels), 0.0);
    for (int64_t g = 0; g < gpus; ++g) {
      const int64_t coord = (g / stride) % size;
      const int64_t base = g - coord * stride;
      for (int64_t j = 0; j < size; ++j) {
        if (j == coord) continue;
        const int64_t peer = base + j * stride;
        const int level = topology_.LevelOf(g, peer);
        route->a2a_weight[g * levels + level] += static_cast<double>(topology_.Hops(level, g, peer));
        route->a2a_peers[g * levels + level] += 1.0;
      }
      double slope = 0, latency = 0;
      for (int l = 0; l < levels; ++l) {
        const double weight = route->a2a_weight[g * levels + l];
        if (weight <= 0) continue;
        const NetworkLevel& nl = topology_.levels[l];
        slope = std::max(slope, weight * nl.oversubscription / nl.bandwidth_bytes_per_s);
        latency = std::max(latency, nl.latency_s);
      }
      const std::pair<double, double> term{slope, static_cast<double>(size - 1) * latency};
      if (std::find(route->a2a_time_terms.begin(), route->a2a_time_terms.end(), term) ==
          route->a2a_time_terms.end()) {
        route->a2a_time_terms.push_back(term);
      }
    }
  }
  return *routes_.emplace(key, std::move(route)).first->second;
}

double CommModel::RingShift(const Placement& placement, int dim, double bytes, int64_t count,
                            Traffic* traffic) {
  int64_t stride, size;
  GpuStrideAndSize(placement, dim, &stride, &size);
  if (size <= 1 || bytes <= 0 || count <= 0) return 0.0;
  const PatternRoute& route = Route(stride, size, false);
  if (traffic != nullptr) traffic->AddScaled(route.shift_entry, bytes * static_cast<double>(count));
  double worst = 0;
  for (const auto& [level, hops] : route.distinct) worst = std::max(worst, LinkSeconds(level, hops, bytes));
  return worst;
}

double CommModel::RingCollective(const Placement& placement, int dim, double chunk_bytes,
                                 Traffic* traffic) {
  const int64_t p = placement.DimSize(dim);
  if (p <= 1) return 0.0;
  return static_cast<double>(p - 1) * RingShift(placement, dim, chunk_bytes, p - 1, traffic);
}

double CommModel::AllToAll(const Placement& placement, int dim, double bytes, Traffic* traffic) {
  int64_t stride, size;
  GpuStrideAndSize(placement, dim, &stride, &size);
  if (size <= 1 || bytes <= 0) return 0.0;
  const PatternRoute& route = Route(stride, size, true);
  const double per_peer = bytes / static_cast<double>(size);
  if (traffic != nullptr) traffic->AddScaled(route.a2a_peers, per_peer);
  double worst = 0;
  for (const auto& [slope, intercept] : route.a2a_time_terms) worst = std::max(worst, per_peer * slope + intercept);
  return worst;
}

int CommModel::BottleneckLevel(const Placement& placement, int dim, double bytes) {
  int64_t stride, size;
  GpuStrideAndSize(placement, dim, &stride, &size);
  if (size <= 1) return -1;
  const PatternRoute& route = Route(stride, size, false);
  int best_level = -1;
  double worst = -1;
  for (const auto& [level, hops] : route.distinct) {
    const double t = LinkSeconds(level, hops, std::max(bytes, 1.0));
    if (t > worst) {
      worst = t;
      best_level = level;
    }
  }
  return best_level;
}

}  // namespace meshplan::planner
