#include "report/capacity/sweep_table.h"

#include <charconv>
#include <cmath>

#include "core/base/csv.h"
#include "core/base/json_writer.h"
#include "core/base/units.h"
#include "planner/schemes/registry.h"
#include "report/format/text_table.h"

namespace meshplan::report {
namespace {

using capacity::SweepRow;

// Shortest text that reads back as the same double (as JsonWriter::Number).
std::string ShortNumber(double value) {
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

}  // namespace

std::string SweepCsv(const std::vector<SweepRow>& rows) {
  std::string out =
      "topology,gpus,seq_len,scheme,valid,parameters,time_s,compute_s,exposed_comm_s,comm_share,"
      "bytes_per_gpu,"
      "peak_memory_bytes,fits,simulated_s,reason,tp,all_layers_s\n";
  for (const SweepRow& r : rows) {
    out += CsvField(r.topology) + "," + std::to_string(r.gpus) + "," + std::to_string(r.seq_len) +
           "," + std::string(SchemeName(r.scheme)) + "," + (r.valid ? "true" : "false") + ",";
    if (r.valid) {
      out += CsvField(planner::DescribeParams(r.params)) + "," + ShortNumber(r.time_s) + "," +
             ShortNumber(r.compute_s) + "," + ShortNumber(r.exposed_comm_s) + "," +
             ShortNumber(r.comm_share) + "," + CsvBytes(r.bytes_per_gpu) + "," +
             CsvBytes(r.peak_memory_bytes) + "," + (r.fits ? "true" : "false") + ",";
      // Empty field: not simulated.
      if (r.simulated_s >= 0) out += ShortNumber(r.simulated_s);
      out += ",";
    } else {
      out += ",,,,,,,,," + CsvField(r.reason);
    }
    // The TP degree beside the plan; empty all_layers_s: no model (or no valid plan).
    out += "," + std::to_string(r.tp) + ",";
    if (r.valid && r.all_layers_s >= 0 && std::isfinite(r.all_layers_s))
      out += ShortNumber(r.all_layers_s);
    out += "\n";
  }
  return out;
}

std::string SweepTextTable(const std::vector<SweepRow>& rows) {
  bool tp = false, layers = false, invalid = false;
  for (const SweepRow& r : rows) {
    tp = tp || r.tp > 1;
    layers = layers || (r.valid && r.all_layers_s >= 0);
    invalid = invalid || !r.valid;
  }
  std::vector<std::vector<std::string>> table;
  std::vector<std::string> header = {"topology",  "gpus", "seq",     "scheme",
                                     "plan",      "time", "exposed", "comm",
                                     "bytes/gpu", "mem",  "fits",    "simulated"};
  if (tp) header.push_back("tp");
  if (layers) header.push_back("all layers");
  if (invalid) header.push_back("no valid plan");
  table.push_back(header);
  for (const SweepRow& r : rows) {
    std::vector<std::string> row = {r.topology, std::to_string(r.gpus), FormatCount(r.seq_len),
                                    std::string(SchemeName(r.scheme))};
    if (r.valid) {
      row.insert(row.end(),
                 {planner::DescribeParams(r.params), ShortSeconds(r.time_s),
                  ShortSeconds(r.exposed_comm_s), Fixed(100 * r.comm_share, 1) + "%",
                  ShortBytes(r.bytes_per_gpu), ShortBytes(r.peak_memory_bytes),
                  r.fits ? "yes" : "no", r.simulated_s >= 0 ? ShortSeconds(r.simulated_s) : "-"});
    } else {
      row.insert(row.end(), {"-", "-", "-", "-", "-", "-", "-", "-"});
    }
    if (tp) row.push_back(std::to_string(r.tp));
    if (layers) {
      row.push_back(r.valid && r.all_layers_s >= 0 && std::isfinite(r.all_layers_s)
                        ? ShortSeconds(r.all_layers_s)
                        : "-");
    }
    if (invalid) row.push_back(r.valid ? "" : r.reason);
    table.push_back(std::move(row));
  }
  return Columns(table, "", true);
}

std::string SweepJson(const std::vector<SweepRow>& rows) {
  JsonWriter json;
  json.Reserve(rows.size() * 320 + 16);
  json.BeginObject();
  json.Key("rows");
  json.BeginArray();
  for (const SweepRow& r : rows) {
    json.BeginObject();
    json.Key("topology");
    json.String(r.topology);
    json.Key("gpus");
    json.Int(r.gpus);
    json.Key("seq_len");
    json.Int(r.seq_len);
    json.Key("scheme");
    json.String(SchemeName(r.scheme));
    json.Key("valid");
    json.Bool(r.valid);
    if (!r.valid) {
      json.Key("reason");
      json.String(r.reason);
      json.Key("tp");
      json.Int(r.tp);
      json.EndObject();
      continue;
    }
    json.Key("parameters");
    json.String(planner::DescribeParams(r.params));
    json.Key("time_s");
    json.Number(r.time_s);
    if (r.all_layers_s >= 0 && std::isfinite(r.all_layers_s)) {
      json.Key("all_layers_s");
      json.Number(r.all_layers_s);
    }
    json.Key("compute_s");
    json.Number(r.compute_s);
    json.Key("exposed_comm_s");
    json.Number(r.exposed_comm_s);
    json.Key("comm_share");
    json.Number(r.comm_share);
    json.Key("bytes_per_gpu");
    json.Bytes(r.bytes_per_gpu);
    json.Key("peak_memory_bytes");
    json.Bytes(r.peak_memory_bytes);
    json.Key("fits");
    json.Bool(r.fits);
    if (r.simulated_s >= 0) {
      json.Key("simulated_s");
      json.Number(r.simulated_s);
    }
    json.Key("tp");  // the TP degree beside the plan (1: none)
    json.Int(r.tp);
    json.EndObject();
  }
  json.EndArray();
  json.EndObject();
  std::string text = json.Take();
  text += '\n';
  return text;
}

}  // namespace meshplan::report
