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

RingCollectiveSpread RingCollectiveSpreadOf(const Topology& topology, int64_t gpu, int64_t peer) {
  const int level = topology.LevelOf(gpu, peer);
  if (level < 0 || topology.HasHopRoutes(level)) return {};
  if (topology.IsFullMesh(level)) return {topology.Span(level), true};
  if (level == 0) return {};
  return {topology.Span(level - 1), false};
}

double RingCollectiveStepShare(const RingCollectiveSpread& spread, int64_t members_in_span) {
  const int64_t links = spread.links_to_others ? members_in_span - 1 : members_in_span;
  return 1.0 / static_cast<double>(std::max<int64_t>(1, links));
}

namespace {

// Members base + j * stride (j < size) in [unit, unit + span): an arithmetic progression's terms
// in an interval, at least 1 (the sender itself).
int64_t MembersInUnit(int64_t base, int64_t stride, int64_t size, int64_t unit, int64_t span) {
  const int64_t lo = std::max(unit, base);
  const int64_t hi = std::min(unit + span - 1, base + (size - 1) * stride);
  if (hi < lo) return 1;
  const int64_t first = (lo - base + stride - 1) / stride, last = (hi - base) / stride;
  return std::max<int64_t>(1, last - first + 1);
}

}  // namespace

CommModel::CommModel(const Topology& topology) : topology_(topology) {}

void CommModel::GpuStrideAndSize(const Placement& placement, int dim, int64_t* stride,
                                 int64_t* size) {
  *stride = placement.GpuStride(dim);
  *size = placement.DimSize(dim);
}

double CommModel::LinkSeconds(const PatternRoute::ShiftCost& cost, double bytes) const {
  // Ring and torus levels pay the latency per hop (Topology::RouteLatencySeconds).
  const double latency =
      topology_.HasHopRoutes(cost.level) ? cost.latency_s * cost.hops : cost.latency_s;
  return latency + bytes * cost.weight / cost.bandwidth_bytes_per_s;
}

void CommModel::WeighOversubscribedRoutes(const std::vector<int64_t>& peer,
                                          PatternRoute* route) const {
  const int64_t gpus = topology_.num_gpus();
  for (int level = 0; level < topology_.num_levels(); ++level) {
    const double f = topology_.levels[level].oversubscription;
    if (f <= 1.0 || topology_.HasHopRoutes(level)) continue;
    // The flows of the shift leaving and entering each unit of the level below at this level:
    // they share its uplink and downlink of (GPUs in the unit) x bandwidth / f.
    const int64_t below = level == 0 ? 1 : topology_.Span(level - 1);
    std::vector<int32_t> up(static_cast<size_t>(gpus / below), 0);
    std::vector<int32_t> down(up.size(), 0);
    for (int64_t g = 0; g < gpus; ++g) {
      if (route->level[g] != level) continue;
      ++up[g / below];
      ++down[peer[g] / below];
    }
    for (int64_t g = 0; g < gpus; ++g) {
      if (route->level[g] != level) continue;
      const int32_t flows = std::max(up[g / below], down[peer[g] / below]);
      route->weight[g] =
          std::max(route->weight[g], f * static_cast<double>(flows) / static_cast<double>(below));
    }
  }
}

void CommModel::WeighHopRoutes(const std::vector<int64_t>& peer, PatternRoute* route) const {
  const int64_t gpus = topology_.num_gpus();
  const int levels = topology_.num_levels();
  for (int level = 0; level < levels; ++level) {
    if (!topology_.HasHopRoutes(level)) continue;
    const int64_t below = level == 0 ? 1 : topology_.Span(level - 1);
    const int64_t dims = static_cast<int64_t>(topology_.RouteDims(level).size());
    auto link_of = [dims](int64_t unit, int dim, bool up) {
      return (unit * dims + dim) * 2 + (up ? 0 : 1);
    };
    // Flows of the shift on every neighbour link of this level, then each GPU's worst link.
    std::vector<int32_t> load(static_cast<size_t>(gpus / below * dims * 2), 0);
    for (int64_t g = 0; g < gpus; ++g) {
      if (route->level[g] != level) continue;
      topology_.ForEachHop(level, g, peer[g],
                           [&](int64_t unit, int dim, bool up) { ++load[link_of(unit, dim, up)]; });
    }
    for (int64_t g = 0; g < gpus; ++g) {
      if (route->level[g] != level) continue;
      int32_t worst = 0;
      topology_.ForEachHop(level, g, peer[g], [&](int64_t unit, int dim, bool up) {
        worst = std::max(worst, load[link_of(unit, dim, up)]);
      });
      route->weight[g] = std::max(1.0, static_cast<double>(worst) / static_cast<double>(below));
    }
  }
}

const PatternRoute& CommModel::Route(int64_t stride, int64_t size, bool all_to_all,
                                     bool collective) {
  auto key = std::make_tuple(stride, size, all_to_all, collective);
  auto it = routes_.find(key);
  if (it != routes_.end()) return *it->second;
  auto route = std::make_unique<PatternRoute>();
  const int64_t gpus = topology_.num_gpus();
  const int levels = topology_.num_levels();
  if (!all_to_all) {
    route->level.resize(gpus);
    route->hops.resize(gpus);
    route->weight.assign(static_cast<size_t>(gpus), 1.0);
    route->shift_entry.assign(static_cast<size_t>(gpus * levels), 0.0);
    std::vector<int64_t> peers(static_cast<size_t>(gpus));
    for (int64_t g = 0; g < gpus; ++g) {
      const int64_t coord = (g / stride) % size;
      const int64_t peer = coord > 0 ? g - stride : g + (size - 1) * stride;
      peers[g] = peer;
      const int level = topology_.LevelOf(g, peer);
      route->level[g] = static_cast<int8_t>(level);
      route->hops[g] = level < 0 ? 0 : static_cast<int32_t>(topology_.Hops(level, g, peer));
      if (level >= 0) route->shift_entry[g * levels + level] = 1.0;
    }
    WeighHopRoutes(peers, route.get());
    if (collective) {
      for (int64_t g = 0; g < gpus; ++g) {
        const RingCollectiveSpread spread = RingCollectiveSpreadOf(topology_, g, peers[g]);
        if (spread.span == 0) continue;
        const int64_t base = g - ((g / stride) % size) * stride;
        const double share = RingCollectiveStepShare(
            spread, MembersInUnit(base, stride, size, g - g % spread.span, spread.span));
        route->weight[g] *= share;
        route->shift_entry[g * levels + route->level[g]] = share;
      }
    }
    WeighOversubscribedRoutes(peers, route.get());
    for (int64_t g = 0; g < gpus; ++g) {
      const int level = route->level[g];
      if (level < 0) continue;
      // Hop-routed levels have no fabrics (Topology::ValidateFabrics): the level's latency per hop.
      const PatternRoute::ShiftCost cost{
          level, route->hops[g], route->weight[g], topology_.PairBandwidth(level, g, peers[g]),
          topology_.HasHopRoutes(level) ? topology_.levels[level].latency_s
                                        : topology_.RouteLatencySeconds(level, g, peers[g])};
      if (std::find(route->distinct.begin(), route->distinct.end(), cost) ==
          route->distinct.end()) {
        route->distinct.push_back(cost);
      }
    }
  } else {
    route->a2a_weight.assign(static_cast<size_t>(gpus * levels), 0.0);
    route->a2a_peers.assign(static_cast<size_t>(gpus * levels), 0.0);
    const bool mixed = topology_.HasMixedFabrics();
    for (int64_t g = 0; g < gpus; ++g) {
      const int64_t coord = (g / stride) % size;
      const int64_t base = g - coord * stride;
      double latency = 0;
      for (int64_t j = 0; j < size; ++j) {
        if (j == coord) continue;
        const int64_t peer = base + j * stride;
        const int level = topology_.LevelOf(g, peer);
        route->a2a_weight[g * levels + level] +=
            static_cast<double>(topology_.Hops(level, g, peer));
        route->a2a_peers[g * levels + level] += 1.0;
        if (mixed && !topology_.HasHopRoutes(level))
          latency = std::max(latency, topology_.RouteLatencySeconds(level, g, peer));
      }
      double slope = 0;
      for (int l = 0; l < levels; ++l) {
        const double weight = route->a2a_weight[g * levels + l];
        if (weight <= 0) continue;
        const NetworkLevel& nl = topology_.levels[l];
        slope = std::max(slope, weight * nl.oversubscription / topology_.PortBandwidth(l, g));
        // On a full mesh each peer's share crosses its own link, one link's bandwidth.
        if (topology_.IsFullMesh(l)) slope = std::max(slope, 1.0 / nl.bandwidth_bytes_per_s);
        // With mixed fabrics a switch or fat-tree level's latency is the peers' (above).
        if (!mixed || topology_.HasHopRoutes(l)) latency = std::max(latency, nl.latency_s);
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
  for (const PatternRoute::ShiftCost& cost : route.distinct)
    worst = std::max(worst, LinkSeconds(cost, bytes));
  return worst;
}

double CommModel::RingCollective(const Placement& placement, int dim, double chunk_bytes,
                                 Traffic* traffic) {
  int64_t stride, size;
  GpuStrideAndSize(placement, dim, &stride, &size);
  if (size <= 1 || chunk_bytes <= 0) return 0.0;
  const PatternRoute& route = Route(stride, size, false, /*collective=*/true);
  if (traffic != nullptr)
    traffic->AddScaled(route.shift_entry, chunk_bytes * static_cast<double>(size - 1));
  double worst = 0;
  for (const PatternRoute::ShiftCost& cost : route.distinct)
    worst = std::max(worst, LinkSeconds(cost, chunk_bytes));
  return static_cast<double>(size - 1) * worst;
}

double CommModel::AllToAll(const Placement& placement, int dim, double bytes, Traffic* traffic) {
  int64_t stride, size;
  GpuStrideAndSize(placement, dim, &stride, &size);
  if (size <= 1 || bytes <= 0) return 0.0;
  const PatternRoute& route = Route(stride, size, true);
  const double per_peer = bytes / static_cast<double>(size);
  if (traffic != nullptr) traffic->AddScaled(route.a2a_peers, per_peer);
  double worst = 0;
  for (const auto& [slope, intercept] : route.a2a_time_terms)
    worst = std::max(worst, per_peer * slope + intercept);
  return worst;
}

int CommModel::BottleneckLevel(const Placement& placement, int dim, double bytes) {
  int64_t stride, size;
  GpuStrideAndSize(placement, dim, &stride, &size);
  if (size <= 1) return -1;
  const PatternRoute& route = Route(stride, size, false);
  int best_level = -1;
  double worst = -1;
  for (const PatternRoute::ShiftCost& cost : route.distinct) {
    const double t = LinkSeconds(cost, std::max(bytes, 1.0));
    if (t > worst) {
      worst = t;
      best_level = cost.level;
    }
  }
  return best_level;
}

}  // namespace meshplan::planner
