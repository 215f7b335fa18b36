#include "report/runs/timeline_comparison.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include "core/base/units.h"
#include "executor/timing/repeat.h"
#include "report/format/text_table.h"

namespace meshplan::report {

std::optional<double> ErrorPct(double measured, double predicted) {
  if (!(predicted > 0) || !std::isfinite(measured)) return std::nullopt;
  return exec::ErrorPercent(measured, predicted);
}

std::string ErrorCell(std::optional<double> percent) {
  if (!percent || !std::isfinite(*percent)) return "n/a";
  const double x = *percent;
  const double magnitude = std::abs(x);
  char buffer[32];
  if (magnitude < 999.95) {
    std::snprintf(buffer, sizeof buffer, "%+.1f%%", x);
  } else if (magnitude < 99999.5) {
    std::snprintf(buffer, sizeof buffer, "%+.0f%%", x);
  } else {
    int exponent = static_cast<int>(std::floor(std::log10(magnitude)));
    double mantissa = magnitude / std::pow(10.0, exponent);
    if (mantissa >= 9.95) {  // rounds up to the next power of ten
      mantissa = 1;
      ++exponent;
    }
    std::snprintf(buffer, sizeof buffer, "%c%.1fe%d%%", x < 0 ? '-' : '+', mantissa, exponent);
  }
  return buffer;
}

namespace {

size_t CommonRanks(const exec::RunTimeline& predicted, const exec::RunTimeline& measured) {
  return std::min(predicted.ranks.size(), measured.ranks.size());
}

}  // namespace

std::vector<size_t> RanksShown(const exec::RunTimeline& predicted,
                               const exec::RunTimeline& measured) {
  const size_t n = CommonRanks(predicted, measured);
  std::vector<size_t> ranks(n);
  for (size_t r = 0; r < n; ++r) ranks[r] = r;
  if (n <= kMaxRanksListed) return ranks;
  // |error| of busy time, -1 for ranks without one (they sort last).
  std::vector<double> key(n);
  for (size_t r = 0; r < n; ++r) {
    const std::optional<double> e = ErrorPct(measured.ranks[r].BusyS(), predicted.ranks[r].BusyS());
    key[r] = e ? std::abs(*e) : -1;
  }
  std::stable_sort(ranks.begin(), ranks.end(), [&](size_t a, size_t b) { return key[a] > key[b]; });
  ranks.resize(kRanksShownWhenMany);
  return ranks;
}

namespace {

// Where each column of `rows` starts as Columns lays them out (after the indent).
std::vector<size_t> ColumnStarts(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    if (width.size() < row.size()) width.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::vector<size_t> starts;
  size_t at = 0;
  for (size_t w : width) {
    starts.push_back(at);
    at += w + 2;
  }
  return starts;
}

}  // namespace

std::string RenderRankComparison(const exec::RunTimeline& predicted,
                                 const exec::RunTimeline& measured, Errors errors) {
  const bool with_errors = errors == Errors::kWithErrors;
  const std::vector<size_t> shown = RanksShown(predicted, measured);
  // Per group: predicted, measured and (with errors) the error.
  const size_t group_width = with_errors ? 3 : 2;
  std::vector<std::string> header = {"rank"};
  for (int group = 0; group < 3; ++group) {
    header.push_back("predicted");
    header.push_back("measured");
    if (with_errors) header.push_back("error");
  }
  std::vector<std::vector<std::string>> rows = {header};
  for (size_t r : shown) {
    const exec::RankTimes& p = predicted.ranks[r];
    const exec::RankTimes& m = measured.ranks[r];
    std::vector<std::string> row = {std::to_string(r)};
    for (const auto& [p_s, m_s] : {std::pair{p.compute_s, m.compute_s},
                                   {p.exposed_comm_s, m.exposed_comm_s},
                                   {p.idle_s, m.idle_s}}) {
      row.push_back(FormatSeconds(p_s));
      row.push_back(FormatSeconds(m_s));
      if (with_errors) row.push_back(ErrorCell(ErrorPct(m_s, p_s)));
    }
    rows.push_back(std::move(row));
  }
  const std::string indent = "  ";
  // The group labels over each group's first column.
  const std::vector<size_t> starts = ColumnStarts(rows);
  std::string groups = indent;
  for (const auto& [group, label] :
       {std::pair<size_t, const char*>{0, "compute"}, {1, "exposed comm"}, {2, "idle"}}) {
    groups.resize(indent.size() + starts[1 + group * group_width], ' ');
    groups += label;
  }
  std::string out = with_errors ? "per rank, predicted vs measured (error vs predicted):\n"
                                : "per rank, predicted and measured:\n";
  out += groups + "\n";
  out += Columns(rows, indent);
  const size_t ranks = CommonRanks(predicted, measured);
  if (shown.size() < ranks) {
    out += indent + "(" + std::to_string(shown.size()) + " of " + std::to_string(ranks) +
           " ranks: those with the largest |error| in busy time, compute + exposed comm;\n" +
           indent + " --format json lists every rank)\n";
  }
  if (predicted.ranks.size() != measured.ranks.size()) {
    out += indent + "(the prediction has " + std::to_string(predicted.ranks.size()) +
           " ranks, the run " + std::to_string(measured.ranks.size()) + ")\n";
  }
  return out;
}

std::string RenderOpClassComparison(const exec::RunTimeline& predicted,
                                    const exec::RunTimeline& measured, Errors errors) {
  const bool with_errors = errors == Errors::kWithErrors;
  std::string out = "per op class, predicted vs measured (sum over ranks of op durations):\n";
  if (!predicted.op_classes || !measured.op_classes) {
    out += std::string("  unavailable: ") + (predicted.op_classes
                                                 ? "the run recorded no per-op times\n"
                                                 : "the prediction recorded no per-op times\n");
    return out;
  }
  std::vector<std::vector<std::string>> rows = {{"class", "ops", "predicted", "measured"}};
  if (with_errors) rows[0].push_back("error vs predicted");
  for (size_t c = 0; c < exec::kNumOpClasses; ++c) {
    const exec::OpClassTimes& p = (*predicted.op_classes)[c];
    const exec::OpClassTimes& m = (*measured.op_classes)[c];
    if (p.ops == 0 && m.ops == 0) continue;
    std::string ops = std::to_string(m.ops);
    if (p.ops != m.ops) ops += " (predicted " + std::to_string(p.ops) + ")";
    rows.push_back({std::string(exec::OpClassName(static_cast<exec::OpClass>(c))), ops,
                    FormatSeconds(p.sum_s), FormatSeconds(m.sum_s)});
    if (with_errors) rows.back().push_back(ErrorCell(ErrorPct(m.sum_s, p.sum_s)));
  }
  out += Columns(rows, "  ");
  return out;
}

namespace {

void NumberOrNull(JsonWriter& j, std::optional<double> value) {
  if (value) {
    j.Number(*value);
  } else {
    j.Raw("null");
  }
}

}  // namespace

void TimelineDetailJson(JsonWriter& j, const exec::RunTimeline& t) {
  j.Key("ranks");
  j.BeginArray();
  for (size_t r = 0; r < t.ranks.size(); ++r) {
    const exec::RankTimes& times = t.ranks[r];
    j.BeginObject();
    j.Key("rank");
    j.Int(static_cast<long long>(r));
    j.Key("compute_s");
    j.Number(times.compute_s);
    j.Key("exposed_comm_s");
    j.Number(times.exposed_comm_s);
    j.Key("idle_s");
    j.Number(times.idle_s);
    j.Key("busy_s");
    j.Number(times.BusyS());
    j.EndObject();
  }
  j.EndArray();
  j.Key("op_classes");
  if (!t.op_classes) {
    j.Raw("null");
    return;
  }
  j.BeginArray();
  for (size_t c = 0; c < exec::kNumOpClasses; ++c) {
    j.BeginObject();
    j.Key("class");
    j.String(exec::OpClassName(static_cast<exec::OpClass>(c)));
    j.Key("ops");
    j.Int((*t.op_classes)[c].ops);
    j.Key("time_s");
    j.Number((*t.op_classes)[c].sum_s);
    j.EndObject();
  }
  j.EndArray();
}

void ErrorsJson(JsonWriter& j, const exec::RunTimeline& predicted,
                const exec::RunTimeline& measured, double measured_time_s) {
  j.BeginObject();
  j.Key("time");
  NumberOrNull(j, ErrorPct(measured_time_s, predicted.run_s));
  j.Key("compute");
  NumberOrNull(j, ErrorPct(measured.compute.mean, predicted.compute.mean));
  j.Key("exposed_comm");
  NumberOrNull(j, ErrorPct(measured.exposed.mean, predicted.exposed.mean));
  j.Key("idle");
  NumberOrNull(j, ErrorPct(measured.idle.mean, predicted.idle.mean));
  j.Key("ranks");
  j.BeginArray();
  for (size_t r = 0; r < CommonRanks(predicted, measured); ++r) {
    const exec::RankTimes& p = predicted.ranks[r];
    const exec::RankTimes& m = measured.ranks[r];
    j.BeginObject();
    j.Key("rank");
    j.Int(static_cast<long long>(r));
    j.Key("compute");
    NumberOrNull(j, ErrorPct(m.compute_s, p.compute_s));
    j.Key("exposed_comm");
    NumberOrNull(j, ErrorPct(m.exposed_comm_s, p.exposed_comm_s));
    j.Key("idle");
    NumberOrNull(j, ErrorPct(m.idle_s, p.idle_s));
    j.Key("busy");
    NumberOrNull(j, ErrorPct(m.BusyS(), p.BusyS()));
    j.EndObject();
  }
  j.EndArray();
  j.Key("op_classes");
  if (predicted.op_classes && measured.op_classes) {
    j.BeginArray();
    for (size_t c = 0; c < exec::kNumOpClasses; ++c) {
      j.BeginObject();
      j.Key("class");
      j.String(exec::OpClassName(static_cast<exec::OpClass>(c)));
      j.Key("time");
      NumberOrNull(j, ErrorPct((*measured.op_classes)[c].sum_s, (*predicted.op_classes)[c].sum_s));
      j.EndObject();
    }
    j.EndArray();
  } else {
    j.Raw("null");
  }
  j.EndObject();
}

}  // namespace meshplan::report
