#include "simulator/flow_network.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace meshplan::sim {

FlowNetwork::FlowNetwork(const Topology& topology)
    : topology_(topology), levels_(topology.num_levels()) {
  const int64_t gpus = topology.num_gpus();
  // Per-GPU egress (even ids) and ingress (odd ids) per level.
  capacity_.assign(static_cast<size_t>(gpus * levels_ * 2), 0.0);
  for (int64_t g = 0; g < gpus; ++g) {
    for (int l = 0; l < levels_; ++l) {
      // The GPU's own port (its unit's fabric on a level with mixed fabrics).
      const double bytes_per_ns = topology.PortBandwidth(l, g) / kNanosecondsPerSecond;
      capacity_[(g * levels_ + l) * 2] = bytes_per_ns;
      capacity_[(g * levels_ + l) * 2 + 1] = bytes_per_ns;
    }
  }
  // Shared uplink/downlink per group of the level below, for oversubscribed levels >= 1.
  uplink_base_.assign(static_cast<size_t>(levels_), -1);
  for (int l = 1; l < levels_; ++l) {
    const NetworkLevel& level = topology.levels[l];
    if (level.oversubscription <= 1.0) continue;
    const int64_t below = topology.Span(l - 1);
    const int64_t groups = gpus / below;
    uplink_base_[l] = static_cast<int64_t>(capacity_.size());
    // A group of the level below is one unit of this level, so one fabric: its first GPU's port.
    for (int64_t group = 0; group < groups; ++group) {
      const double shared = static_cast<double>(below) * topology.PortBandwidth(l, group * below) /
                            level.oversubscription / kNanosecondsPerSecond;
      capacity_.insert(capacity_.end(), 2, shared);
    }
  }
  // One copy link per shared device (ranks_per_device divides level 0's group: its transfers are
  // all on level 0).
  ranks_per_device_ = std::max<int64_t>(1, topology.gpu.ranks_per_device);
  if (ranks_per_device_ > 1 && levels_ > 0) {
    device_link_base_ = static_cast<int64_t>(capacity_.size());
    const double copies =
        std::min(topology.gpu.concurrent_kernels, static_cast<double>(ranks_per_device_));
    for (int64_t device = 0; device < gpus / ranks_per_device_; ++device) {
      const double bytes_per_ns =
          copies * topology.PortBandwidth(0, device * ranks_per_device_) / kNanosecondsPerSecond;
      capacity_.push_back(bytes_per_ns);
    }
  }
  // Neighbour links of ring and torus levels: per unit of the level below, dimension and direction.
  route_link_base_.assign(static_cast<size_t>(levels_), -1);
  for (int l = 0; l < levels_; ++l) {
    if (!topology.HasHopRoutes(l)) continue;
    const int64_t below = l == 0 ? 1 : topology.Span(l - 1);
    const int64_t dims = static_cast<int64_t>(topology.RouteDims(l).size());
    route_link_base_[l] = static_cast<int64_t>(capacity_.size());
    const double bytes_per_ns = static_cast<double>(below) *
                                topology.levels[l].bandwidth_bytes_per_s / kNanosecondsPerSecond;
    capacity_.insert(capacity_.end(), static_cast<size_t>(gpus / below * dims * 2), bytes_per_ns);
  }
  // Pair links of a full-mesh innermost level (Topology::Validate allows none further out).
  if (levels_ > 0 && topology.IsFullMesh(0)) {
    mesh_link_base_ = static_cast<int64_t>(capacity_.size());
    const int64_t n = topology.levels[0].group_size;
    capacity_.insert(capacity_.end(), static_cast<size_t>(gpus * n),
                     topology.levels[0].bandwidth_bytes_per_s / kNanosecondsPerSecond);
  }
  on_link_.resize(capacity_.size());
  link_bytes_.assign(capacity_.size(), 0.0);
  link_mark_.assign(capacity_.size(), 0);
  residual_.assign(capacity_.size(), 0.0);
  unfrozen_.assign(capacity_.size(), 0);
}

int64_t FlowNetwork::MeshLink(int64_t src, int64_t dst) const {
  const int64_t n = topology_.levels[0].group_size;
  return mesh_link_base_ + src * n + dst % n;
}

void FlowNetwork::Advance(Flow& f, SimTime now) const {
  if (now > f.updated) {
    f.remaining = std::max(0.0, f.remaining - f.rate * static_cast<double>(now - f.updated));
    f.updated = now;
  }
}

int32_t FlowNetwork::Add(SimTime now, int64_t src, int64_t dst, double bytes) {
  int32_t id;
  if (!free_flows_.empty()) {
    id = free_flows_.back();
    free_flows_.pop_back();
  } else {
    id = static_cast<int32_t>(flows_.size());
    flows_.emplace_back();
    flow_mark_.push_back(0);
    frozen_.push_back(0);
  }
  Flow& f = flows_[id];
  const int level = std::max(0, topology_.LevelOf(src, dst));
  f.level = static_cast<int8_t>(level);
  f.links.clear();
  f.links.push_back(static_cast<int32_t>((src * levels_ + level) * 2));
  f.links.push_back(static_cast<int32_t>((dst * levels_ + level) * 2 + 1));
  if (uplink_base_[level] >= 0) {
    const int64_t below = topology_.Span(level - 1);
    f.links.push_back(static_cast<int32_t>(uplink_base_[level] + (src / below) * 2));
    f.links.push_back(static_cast<int32_t>(uplink_base_[level] + (dst / below) * 2 + 1));
  }
  if (device_link_base_ >= 0 && src / ranks_per_device_ == dst / ranks_per_device_) {
    f.links.push_back(static_cast<int32_t>(device_link_base_ + src / ranks_per_device_));
  }
  if (level == 0 && mesh_link_base_ >= 0)
    f.links.push_back(static_cast<int32_t>(MeshLink(src, dst)));
  if (route_link_base_[level] >= 0) {
    const int64_t base = route_link_base_[level];
    const int64_t dims = static_cast<int64_t>(topology_.RouteDims(level).size());
    topology_.ForEachHop(level, src, dst, [&](int64_t unit, int dim, bool up) {
      f.links.push_back(static_cast<int32_t>(base + (unit * dims + dim) * 2 + (up ? 0 : 1)));
    });
  }
  if (weighted_) {
    // Each link by its orbit's first link; a flow crossing two links of one orbit counts twice.
    f.weights.clear();
    size_t kept = 0;
    for (size_t k = 0; k < f.links.size(); ++k) {
      const int32_t c = canonical_[f.links[k]];
      size_t at = 0;
      while (at < kept && f.links[at] != c) ++at;
      if (at == kept) {
        f.links[kept++] = c;
        f.weights.push_back(stabilizer_[c]);
      } else {
        f.weights[at] += stabilizer_[c];
      }
    }
    f.links.resize(kept);
    for (size_t k = 0; k < kept; ++k) load_[f.links[k]] += f.weights[k];
  }
  f.active = true;
  f.remaining = bytes;
  f.rate = 0;
  f.updated = now;
  ++f.version;
  for (int32_t link : f.links) {
    on_link_[link].push_back(id);
    link_bytes_[link] += bytes;
  }
  Recompute(now, f.links);
  return id;
}

Status FlowNetwork::UseSymmetry(const std::vector<std::vector<int64_t>>& gpu_maps,
                                int64_t group_order) {
  if (device_link_base_ >= 0) return Status::Invalid("devices that ranks share have copy links");
  for (int l = 0; l < levels_; ++l) {
    if (route_link_base_[l] >= 0)
      return Status::Invalid("level " + topology_.levels[l].name + " routes hop by hop");
  }
  const size_t links = capacity_.size();
  std::vector<int32_t> parent(links);
  for (size_t i = 0; i < links; ++i) parent[i] = static_cast<int32_t>(i);
  auto find = [&](int32_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  auto unite = [&](int64_t a, int64_t b) {  // the smaller id stays the root
    const int32_t ra = find(static_cast<int32_t>(a)), rb = find(static_cast<int32_t>(b));
    if (ra < rb) parent[rb] = ra;
    if (rb < ra) parent[ra] = rb;
  };
  const int64_t gpus = topology_.num_gpus();
  for (const std::vector<int64_t>& image : gpu_maps) {
    if (static_cast<int64_t>(image.size()) != gpus)
      return Status::Invalid("a GPU map does not cover the GPUs");
    for (int64_t g = 0; g < gpus; ++g) {
      const int64_t to = image[static_cast<size_t>(g)];
      for (int l = 0; l < levels_; ++l) {
        unite((g * levels_ + l) * 2, (to * levels_ + l) * 2);
        unite((g * levels_ + l) * 2 + 1, (to * levels_ + l) * 2 + 1);
      }
    }
    if (mesh_link_base_ >= 0) {
      // Pair links map to pair links: the map keeps groups of level 0 whole (checked here too).
      const int64_t n = topology_.levels[0].group_size;
      for (int64_t a = 0; a < gpus; ++a) {
        for (int64_t b = a - a % n; b < a - a % n + n; ++b) {
          const int64_t ia = image[static_cast<size_t>(a)], ib = image[static_cast<size_t>(b)];
          if (ia / n != ib / n) {
            return Status::Invalid("a GPU map splits a group under level " +
                                   topology_.levels[0].name);
          }
          unite(MeshLink(a, b), MeshLink(ia, ib));
        }
      }
    }
    for (int l = 1; l < levels_; ++l) {
      if (uplink_base_[l] < 0) continue;
      const int64_t below = topology_.Span(l - 1);
      for (int64_t first = 0; first < gpus; first += below) {
        const int64_t group = image[static_cast<size_t>(first)] / below;
        for (int64_t g = first; g < first + below; ++g) {
          if (image[static_cast<size_t>(g)] / below != group) {
            return Status::Invalid("a GPU map splits a group under level " +
                                   topology_.levels[l].name);
          }
        }
        unite(uplink_base_[l] + (first / below) * 2, uplink_base_[l] + group * 2);
        unite(uplink_base_[l] + (first / below) * 2 + 1, uplink_base_[l] + group * 2 + 1);
      }
    }
  }
  canonical_.assign(links, 0);
  std::vector<int64_t> orbit(links, 0);
  for (size_t i = 0; i < links; ++i) {
    canonical_[i] = find(static_cast<int32_t>(i));
    ++orbit[static_cast<size_t>(canonical_[i])];
    // An orbit's links must be alike for one to stand for all (mixed fabrics differ).
    if (capacity_[i] != capacity_[static_cast<size_t>(canonical_[i])])
      return Status::Invalid("a GPU map joins links of different bandwidth");
  }
  stabilizer_.assign(links, 0);
  for (size_t i = 0; i < links; ++i) {
    if (orbit[i] == 0) continue;
    if (group_order % orbit[i] != 0)
      return Status::Invalid("a link orbit's size does not divide the group's order");
    stabilizer_[i] = static_cast<int32_t>(group_order / orbit[i]);
  }
  load_.assign(links, 0);
  weighted_ = true;
  return Status::Ok();
}

void FlowNetwork::Remove(SimTime now, int32_t id) {
  Flow& f = flows_[id];
  f.active = false;
  ++f.version;
  std::vector<int32_t> seeds = f.links;
  for (size_t k = 0; k < f.links.size(); ++k) {
    const int32_t link = f.links[k];
    if (weighted_) load_[link] -= f.weights[k];
    auto& v = on_link_[link];
    auto it = std::find(v.begin(), v.end(), id);
    if (it != v.end()) {
      *it = v.back();
      v.pop_back();
    }
  }
  free_flows_.push_back(id);
  Recompute(now, seeds);
}

std::vector<int32_t> FlowNetwork::TakeChanged() {
  std::vector<int32_t> out;
  out.swap(changed_);
  return out;
}

SimTime FlowNetwork::FinishTime(int32_t id, SimTime now) const {
  const Flow& f = flows_[id];
  const double remaining =
      std::max(0.0, f.remaining - f.rate * static_cast<double>(now - f.updated));
  if (remaining <= 0) return now;
  if (!(f.rate > 0)) return std::numeric_limits<SimTime>::max() / 4;
  const double ns = std::ceil(remaining / f.rate);
  if (!(static_cast<double>(now) + ns < static_cast<double>(kSimHorizon))) return kSimHorizon;
  return now + static_cast<SimTime>(ns);
}

// Max-min fair rates for the connected component of the seed links: progressive filling.
void FlowNetwork::Recompute(SimTime now, const std::vector<int32_t>& seeds) {
  if (++mark_ == 0) {  // wrapped: clear the marks
    std::fill(link_mark_.begin(), link_mark_.end(), 0);
    std::fill(flow_mark_.begin(), flow_mark_.end(), 0);
    mark_ = 1;
  }
  comp_links_.clear();
  comp_flows_.clear();
  stack_.clear();
  for (int32_t l : seeds) {
    if (link_mark_[l] != mark_) {
      link_mark_[l] = mark_;
      stack_.push_back(l);
    }
  }
  while (!stack_.empty()) {
    const int32_t l = stack_.back();
    stack_.pop_back();
    comp_links_.push_back(l);
    for (int32_t id : on_link_[l]) {
      if (flow_mark_[id] == mark_) continue;
      flow_mark_[id] = mark_;
      comp_flows_.push_back(id);
      const Flow& f = flows_[id];
      for (int32_t link : f.links) {
        if (link_mark_[link] != mark_) {
          link_mark_[link] = mark_;
          stack_.push_back(link);
        }
      }
    }
  }
  if (comp_flows_.empty()) return;
  for (int32_t id : comp_flows_) {
    Advance(flows_[id], now);
    frozen_[id] = 0;
  }
  for (int32_t l : comp_links_) {
    residual_[l] = capacity_[l];
    unfrozen_[l] = weighted_ ? load_[l] : static_cast<int32_t>(on_link_[l].size());
  }
  size_t left = comp_flows_.size();
  while (left > 0) {
    // The bottleneck: the link offering the smallest equal share to its unfrozen flows.
    int32_t bottleneck = -1;
    double share = std::numeric_limits<double>::infinity();
    for (int32_t l : comp_links_) {
      if (unfrozen_[l] == 0) continue;
      const double s = residual_[l] / unfrozen_[l];
      if (s < share) {
        share = s;
        bottleneck = l;
      }
    }
    if (bottleneck < 0) break;
    share = std::max(share, 0.0);
    for (int32_t id : on_link_[bottleneck]) {
      if (frozen_[id]) continue;
      frozen_[id] = 1;
      --left;
      Flow& f = flows_[id];
      if (f.rate != share) {
        f.rate = share;
        ++f.version;
        changed_.push_back(id);
      }
      if (weighted_) {
        for (size_t k = 0; k < f.links.size(); ++k) {
          residual_[f.links[k]] -= share * f.weights[k];
          unfrozen_[f.links[k]] -= f.weights[k];
        }
      } else {
        for (int32_t link : f.links) {
          residual_[link] -= share;
          --unfrozen_[link];
        }
      }
    }
  }
}

FlowNetwork::LinkLoad FlowNetwork::BusiestRouteLink(int level) const {
  LinkLoad out;
  if (level == 0 && mesh_link_base_ >= 0) {
    const int64_t n = topology_.levels[0].group_size;
    int64_t best = -1;
    for (int64_t i = 0; i < topology_.num_gpus() * n; ++i) {
      if (best < 0 || link_bytes_[mesh_link_base_ + i] > link_bytes_[mesh_link_base_ + best])
        best = i;
    }
    if (best < 0) return out;
    const int64_t src = best / n, dst = src - src % n + best % n;
    out.bytes = link_bytes_[mesh_link_base_ + best];
    out.bytes_per_s = capacity_[mesh_link_base_ + best] * kNanosecondsPerSecond;
    out.name = "gpu " + std::to_string(src) + " -> " + std::to_string(dst);
    return out;
  }
  if (route_link_base_[level] < 0) return out;
  const int64_t below = level == 0 ? 1 : topology_.Span(level - 1);
  const std::vector<int64_t> dims = topology_.RouteDims(level);
  const int64_t count = topology_.num_gpus() / below * static_cast<int64_t>(dims.size()) * 2;
  int64_t best = -1;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t link = route_link_base_[level] + i;
    if (best < 0 || link_bytes_[link] > link_bytes_[best]) best = link;
  }
  if (best < 0) return out;
  const int64_t i = best - route_link_base_[level];
  const int64_t unit = i / 2 / static_cast<int64_t>(dims.size());
  const int dim = static_cast<int>(i / 2 % static_cast<int64_t>(dims.size()));
  const bool up = i % 2 == 0;
  // The neighbour: one step along `dim` within the unit's ring.
  int64_t stride = 1;
  for (int d = 0; d < dim; ++d) stride *= dims[d];
  const int64_t size = topology_.levels[level].group_size;
  const int64_t coord = unit % size, x = (coord / stride) % dims[dim];
  const int64_t next = up ? (x + 1) % dims[dim] : (x + dims[dim] - 1) % dims[dim];
  const int64_t neighbour = unit + (next - x) * stride;
  out.bytes = link_bytes_[best];
  out.bytes_per_s = capacity_[best] * kNanosecondsPerSecond;
  out.name = "unit " + std::to_string(unit) + " -> " + std::to_string(neighbour) + " (dimension " +
             std::to_string(dim) + ")";
  return out;
}

}  // namespace meshplan::sim
