// `meshplan topo new`: a cluster file from a few numbers, so that no one guesses a GPU's rates or
// kernel curves. The GPU's numbers (memory, HBM, peaks, attention kernel curves) and its NVLink
// (or an MI300X's xGMI mesh) come from the shipped cluster file of that GPU, where every number
// has its source; a PCIe node
// (GPUs without NVLink, or `--node-link pcie`) is written from NCCL's own PCIe model instead
// (PcieNode below); the network between nodes is one NIC per GPU at the rate given.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/status.h"
#include "core/cluster/topology.h"

namespace meshplan {

// Nodes of the template on another fabric than the rest (`--fabric NAME:NODES:GBPS[:US]`, a
// LevelFabric of the network level): NODES a comma-separated list of node indices and
// "first-last" ranges, GBPS each GPU's NIC in Gb/s, US its latency (negative: the network's).
struct TemplateFabric {
  std::string name;
  std::vector<std::pair<int64_t, int64_t>> nodes;
  double nic_gbits = 0;
  double latency_us = -1;
  std::string spec;  // as given, for the file's header
};
// Parses one --fabric value; errors name the flag and the part that is wrong.
Result<TemplateFabric> ParseTemplateFabric(std::string_view spec);

// How the GPUs of a node reach each other over PCIe, as NCCL's topology model rates it (NVIDIA/nccl
// 5067397, src/graph/topo.cc and topo.h): each GPU's x16 link at width x speed / 80 GB/s (Gen3
// 12, Gen4 24, Gen5 48), whether NCCL copies peer to peer or, where P2P is off (GeForce cards,
// paths across the CPU), through host memory: both paths are rated at the link; GPUs of one CPU
// socket share nothing but their links; traffic between sockets shares the CPUs' link (NCCL's
// AMD_BW 16, Intel BDW_QPI_BW 6, SKL_QPI_BW 10, SRP_QPI_BW 22, ERP_QPI_BW 40 GB/s).
struct PcieNode {
  int generation = 0;   // 3, 4 or 5; 0: the GPU's own (Gen4 for the shipped PCIe cards)
  int64_t sockets = 0;  // CPU sockets the node's GPUs spread over evenly; 0: 1 up to 4 GPUs, else 2
  std::string cpu;      // amd, intel-bdw, intel-skl, intel-spr, intel-emr; "": amd
  // GPUs behind each PCIe switch, whose one x16 uplink to the CPU they share; 0: 1 (every GPU on
  // its own CPU root port). With switches, `p2p` says whether NCCL copies between GPUs of one
  // switch peer to peer through it (NCCL's default below the CPU, p2pLevel PATH_PXB: src/graph/
  // paths.cc) or, with P2P off (GeForce drivers, NCCL_P2P_DISABLE), through host memory, up and
  // down the shared uplink: "on", "off"; "": off for GeForce cards, else on.
  int64_t gpus_per_switch = 0;
  std::string p2p;
};

// The per-GPU bandwidth NCCL rates a Gen `generation` x16 link at, in GB/s; 0 for other values.
double PcieLinkGBps(int generation);
// The link between two sockets of `cpu` as NCCL rates it, in GB/s; 0 for an unknown name.
double InterSocketGBps(std::string_view cpu);

struct ClusterTemplate {
  std::string gpu;              // h100, h200, h800, a100, gb200, mi300x, l40s, rtx-4090
  int64_t nodes = 1;            // nodes (GB200: NVL72 racks)
  int64_t gpus_per_node = 8;    // GPUs in one node (its NVLink domain, or its PCIe server)
  std::string node_link;        // nvlink, xgmi or pcie; "": the GPU's own (pcie without one)
  PcieNode pcie;                // with node_link pcie
  double nic_gbits = 400;       // each GPU's NIC, Gb/s (per direction)
  std::string name;             // the cluster's name ("" : gpu-NxG)
  std::string net_name = "ib";  // the network level's name, as the shipped files name theirs
  double net_latency_us = -1;   // its latency; negative: the source file's network latency
  std::vector<TemplateFabric> fabrics;  // nodes on other fabrics (mixed fabrics)
};

// The shipped cluster file (by name) whose GPU and NVLink a template of `gpu` takes. Errors: an
// unknown GPU, listing the known ones.
Result<std::string> ShippedClusterOfGpu(std::string_view gpu);

// True when `gpu` (a --gpu value) has neither NVLink nor xGMI: its nodes are PCIe nodes.
bool IsPcieOnlyGpu(std::string_view gpu);

// The cluster: `source`'s GPU (every curve) and its innermost level (NVLink, or xGMI's full mesh)
// with group_size = gpus_per_node (with node_link pcie: the PCIe levels of PcieNode: with switches,
// "pcie-switch" of the GPUs of one switch, then "pcie" of one socket's switches, whose
// oversubscription makes a switch's uplink the share of its GPUs; without, "pcie" of one socket's
// GPUs at the link's bandwidth; with more than one socket, "socket" across them, whose
// oversubscription makes the sockets' link the share of all their GPUs' traffic), then a level
// `net_name` ("ib" unless given; rail-optimised fat tree, non-blocking, net_latency_us or else the
// source's latency between nodes or 5 us) of `nodes` groups at nic_gbits / 8 GB/s per GPU, the
// nodes of `fabrics` on theirs. Errors name the flag: sizes below 1, more GPUs per node than the
// source's NVLink domain holds, a NIC rate not in (0, 1600] Gb/s, a network name empty or the
// NVLink level's, a latency above 1e6 us, a fabric's node outside the cluster or in two fabrics;
// --node-link nvlink for a GPU without NVLink, a PCIe generation other than 3-5, sockets that do
// not divide the node's GPUs, an unknown --cpu; --node-link nvlink or xgmi on a GPU whose node
// fabric is the other one.
Result<Topology> MakeCluster(const ClusterTemplate& t, const Topology& source);

// Comment lines that head the written file: the command, where each number comes from, and what to
// replace with measurements.
std::string ClusterHeader(const ClusterTemplate& t, const std::string& source_name);

}  // namespace meshplan
