#include "report/topology/topology_list.h"

#include <cstdio>
#include <sstream>

#include "core/base/json_writer.h"
#include "report/format/fabric_text.h"
#include "report/format/text_table.h"

namespace meshplan::report {

std::string DescribeLevel(const NetworkLevel& level) {
  std::string group = std::to_string(level.group_size);
  if (!level.torus_dims.empty()) {
    group.clear();
    for (int64_t d : level.torus_dims) group += (group.empty() ? "" : "x") + std::to_string(d);
  }
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, " x %g GB/s%s", level.bandwidth_bytes_per_s / 1e9,
                level.kind == LinkKind::kFullMesh ? " a link" : "");
  std::string out = level.name + " " + std::string(LinkKindName(level.kind)) + " " + group + buffer;
  if (level.oversubscription > 1) {
    std::snprintf(buffer, sizeof buffer, " %g:1", level.oversubscription);
    out += buffer;
  }
  return out + FabricsText(level);
}

std::string TopologyListText(const std::string& dir, const std::vector<ShippedTopology>& clusters) {
  std::vector<std::vector<std::string>> rows = {
      {"name", "GPUs", "GPU", "levels (innermost first; GB/s per GPU per direction)"}};
  for (const ShippedTopology& c : clusters) {
    std::string levels;
    for (const NetworkLevel& l : c.topology.levels)
      levels += (levels.empty() ? "" : ", ") + DescribeLevel(l);
    rows.push_back({c.name, std::to_string(c.topology.num_gpus()), c.topology.gpu.model, levels});
  }
  std::string out = "shipped clusters in " + dir + " (use one with -t NAME):\n\n";
  std::istringstream table(Columns(rows, "  ", true));
  std::string line;
  for (int i = 0; std::getline(table, line); ++i) {
    out += line + "\n";
    const int cluster = i - 2;  // after the header and its rule
    if (cluster >= 0 && static_cast<size_t>(cluster) < clusters.size() &&
        !clusters[static_cast<size_t>(cluster)].topology.description.empty()) {
      out += "    " + clusters[static_cast<size_t>(cluster)].topology.description + "\n";
    }
  }
  out +=
      "\nThe source of every number is the comment beside it in its file; README.md there "
      "describes the schema.\n";
  return out;
}

namespace {

// One cluster as a JSON object (TopologyListJson's element; TopologyJson's whole output).
void WriteClusterJson(JsonWriter& j, const std::string& name, const std::string& path,
                      const Topology& t) {
  j.BeginObject();
  j.Key("name");
  j.String(name);
  j.Key("path");
  j.String(path);
  j.Key("description");
  j.String(t.description);
  j.Key("gpus");
  j.Int(t.num_gpus());
  j.Key("gpu");
  j.String(t.gpu.model);
  j.Key("attention_kernel");
  j.String(t.gpu.attention_kernel);
  j.Key("levels");
  j.BeginArray();
  for (const NetworkLevel& l : t.levels) {
    j.BeginObject();
    j.Key("name");
    j.String(l.name);
    j.Key("kind");
    j.String(LinkKindName(l.kind));
    j.Key("group_size");
    j.Int(l.group_size);
    j.Key("bandwidth_GBps");
    j.Number(l.bandwidth_bytes_per_s / 1e9);
    j.Key("latency_us");
    j.Number(l.latency_s * 1e6);
    j.Key("oversubscription");
    j.Number(l.oversubscription);
    if (!l.fabrics.empty()) {
      j.Key("fabrics");
      j.BeginArray();
      for (const LevelFabric& f : l.fabrics) {
        j.BeginObject();
        j.Key("name");
        j.String(f.name);
        j.Key("units");
        j.BeginArray();
        for (const auto& [first, last] : f.units) {
          j.BeginArray();
          j.Int(first);
          j.Int(last);
          j.EndArray();
        }
        j.EndArray();
        j.Key("bandwidth_GBps");
        j.Number(f.bandwidth_bytes_per_s / 1e9);
        j.Key("latency_us");
        j.Number(f.latency_s * 1e6);
        j.EndObject();
      }
      j.EndArray();
    }
    j.EndObject();
  }
  j.EndArray();
  j.EndObject();
}

}  // namespace

std::string TopologyJson(const Topology& topology) {
  JsonWriter j;
  WriteClusterJson(j, topology.name, topology.source, topology);
  return j.Take() + "\n";
}

std::string TopologyListJson(const std::string& dir, const std::vector<ShippedTopology>& clusters) {
  JsonWriter j;
  j.BeginObject();
  j.Key("dir");
  j.String(dir);
  j.Key("clusters");
  j.BeginArray();
  for (const ShippedTopology& c : clusters) WriteClusterJson(j, c.name, c.path, c.topology);
  j.EndArray();
  j.EndObject();
  return j.Take() + "\n";
}

}  // namespace meshplan::report
