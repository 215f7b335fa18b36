// Chart builders from sweep rows written by hand (so every expected point and winner is computed
// here, not by the code under test), the timeline of a small replayed ring, and the plot files.
#include "report/capacity/charts.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/base/units.h"
#include "core/sequence/layout.h"
#include "planner/context.h"
#include "planner/schemes/registry.h"
#include "planner/strategy.h"
#include "simulator/simulate.h"
#include "tests/planner/test_cluster.h"

namespace meshplan::report {
namespace {

namespace fs = std::filesystem;

SweepRow Row(Scheme scheme, int64_t gpus, int64_t seq, double time_s, bool valid = true,
             bool fits = true, double comm_share = 0.1) {
  SweepRow r;
  r.topology = "test";
  r.gpus = gpus;
  r.seq_len = seq;
  r.scheme = scheme;
  r.valid = valid;
  r.reason = valid ? "" : "does not divide";
  r.time_s = valid ? time_s : 0;
  r.comm_share = comm_share;
  r.fits = valid && fits;
  return r;
}

constexpr int64_t k64K = 64 * 1024;
constexpr int64_t k128K = 128 * 1024;

// 3 schemes x GPUs {8, 16, 32} x seqs {64K, 128K}, in sweep order (gpus, seq, scheme).
std::vector<SweepRow> Rows() {
  const Scheme R = Scheme("ring"), U = Scheme("ulysses"), M = Scheme("mesh");
  return {
      // 8 GPUs
      Row(R, 8, k64K, 0.100, true, true, 0.05),
      Row(U, 8, k64K, 0.090, true, true, 0.20),
      Row(M, 8, k64K, 0.095, true, true, 0.10),
      Row(R, 8, k128K, 0.400, true, true, 0.02),
      Row(U, 8, k128K, 0.380, true, false),  // too big
      Row(M, 8, k128K, 0.390, true, true, 0.04),
      // 16 GPUs
      Row(R, 16, k64K, 0.060, true, true, 0.15),
      Row(U, 16, k64K, 0.050, false),  // invalid
      Row(M, 16, k64K, 0.055, true, true, 0.12),
      Row(R, 16, k128K, 0.210, true, true, 0.07),
      Row(U, 16, k128K, 0.200, true, true, 0.30),
      Row(M, 16, k128K, 0.205, true, true, 0.06),
      // 32 GPUs: nothing fits at 128K
      Row(R, 32, k64K, 0.040, true, true),
      Row(U, 32, k64K, 0.045, true, true),
      Row(M, 32, k64K, 0.030, true, true),
      Row(R, 32, k128K, 0.120, true, false),
      Row(U, 32, k128K, 0.0, false),
      Row(M, 32, k128K, 0.110, true, false),
  };
}

using Points = std::vector<std::pair<double, double>>;

void ExpectPoints(const plot::Series& s, const Points& want) {
  ASSERT_EQ(s.points.size(), want.size()) << s.name;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_DOUBLE_EQ(s.points[i].first, want[i].first) << s.name << " point " << i;
    EXPECT_NEAR(s.points[i].second, want[i].second, 1e-9) << s.name << " point " << i;
  }
}

TEST(Charts, TimeVsGpusHasOneSeriesPerSchemeWithValidFittingPoints) {
  const plot::LineChart c = TimeVsGpus(Rows(), k128K);
  EXPECT_TRUE(c.log_x);
  EXPECT_TRUE(c.log_y);
  EXPECT_NE(c.title.find("128K"), std::string::npos) << c.title;
  EXPECT_NE(c.y_label.find("(ms)"), std::string::npos) << c.y_label;
  EXPECT_NE(c.x_label.find("GPUs"), std::string::npos) << c.x_label;
  ASSERT_EQ(c.series.size(), 3u);
  // Scheme order (ring, ulysses, mesh), so colours agree across charts.
  EXPECT_EQ(c.series[0].name, "ring");
  EXPECT_EQ(c.series[1].name, "ulysses");
  EXPECT_EQ(c.series[2].name, "mesh");
  ExpectPoints(c.series[0], {{8, 400}, {16, 210}});  // 32: does not fit
  ExpectPoints(c.series[1], {{16, 200}});            // 8: does not fit, 32: invalid
  ExpectPoints(c.series[2], {{8, 390}, {16, 205}});

  const plot::LineChart small = TimeVsGpus(Rows(), k64K);
  ExpectPoints(small.series[1], {{8, 90}, {32, 45}});  // 16: invalid
  ExpectPoints(small.series[2], {{8, 95}, {16, 55}, {32, 30}});
}

TEST(Charts, TimeVsSeqHasOneSeriesPerSchemeOnTheGpuCount) {
  // 8 GPUs: ring 100 ms at 64K and 400 at 128K; ulysses 90 at 64K (128K does not fit); mesh 95
  // and 390 (Rows()).
  const plot::LineChart c = TimeVsSeq(Rows(), 8);
  EXPECT_TRUE(c.log_x);
  EXPECT_TRUE(c.log_y);
  EXPECT_NE(c.title.find("on 8 GPUs"), std::string::npos) << c.title;
  EXPECT_NE(c.title.find("attention layer"), std::string::npos) << c.title;
  EXPECT_NE(c.x_label.find("sequence length"), std::string::npos) << c.x_label;
  ASSERT_EQ(c.series.size(), 3u);
  ExpectPoints(c.series[0], {{k64K, 100}, {k128K, 400}});
  ExpectPoints(c.series[1], {{k64K, 90}});
  ExpectPoints(c.series[2], {{k64K, 95}, {k128K, 390}});
  // With a model, all its attention layers: ring at 64K is 80 layers x 100 ms = 8 s, and a
  // replay 1.5x the estimate (150 ms) makes it 12 s.
  std::vector<SweepRow> rows = Rows();
  for (SweepRow& r : rows) r.all_layers_s = r.time_s * 80;
  rows[0].simulated_s = 0.150;
  const plot::LineChart model = TimeVsSeq(rows, 8);
  EXPECT_NE(model.title.find("training step"), std::string::npos) << model.title;
  EXPECT_NE(model.y_label.find("all layers"), std::string::npos) << model.y_label;
  ExpectPoints(model.series[0], {{k64K, 12000}, {k128K, 32000}});
}

TEST(Charts, SimulatedTimesWinOverEstimates) {
  std::vector<SweepRow> rows = Rows();
  rows[0].simulated_s = 0.150;  // ring, 8 GPUs, 64K
  EXPECT_DOUBLE_EQ(RowTime(rows[0]), 0.150);
  EXPECT_DOUBLE_EQ(RowTime(rows[1]), 0.090);
  const plot::LineChart c = TimeVsGpus(rows, k64K);
  EXPECT_NE(c.y_label.find("simulated"), std::string::npos) << c.y_label;
  ExpectPoints(c.series[0], {{8, 150}, {16, 60}, {32, 40}});
}

TEST(Charts, SchemesWithNoFittingPointAreNamedSo) {
  std::vector<SweepRow> rows = Rows();
  for (SweepRow& r : rows) {
    if (r.scheme == Scheme("ulysses") && r.seq_len == k128K) r.fits = false;
  }
  const plot::LineChart c = TimeVsGpus(rows, k128K);
  ASSERT_EQ(c.series.size(), 3u);
  EXPECT_TRUE(c.series[1].points.empty());
  EXPECT_EQ(c.series[1].name, "ulysses (does not fit)");
  // Ulysses at 32 GPUs and 128K is invalid, the others there do not fit.
  std::vector<SweepRow> at32;
  for (const SweepRow& r : Rows()) {
    if (r.gpus == 32) at32.push_back(r);
  }
  const plot::LineChart d = TimeVsGpus(at32, k128K);
  ASSERT_EQ(d.series.size(), 3u);
  EXPECT_EQ(d.series[0].name, "ring (does not fit)");
  EXPECT_EQ(d.series[1].name, "ulysses (no valid plan)");
}

TEST(Charts, CommShareVsSeqInPercent) {
  const plot::LineChart c = CommShareVsSeq(Rows(), 16);
  EXPECT_TRUE(c.log_x);
  EXPECT_FALSE(c.log_y);
  EXPECT_NE(c.y_label.find("%"), std::string::npos) << c.y_label;
  EXPECT_NE(c.title.find("16 GPUs"), std::string::npos) << c.title;
  ASSERT_EQ(c.series.size(), 3u);
  ExpectPoints(c.series[0], {{k64K, 15}, {k128K, 7}});
  ExpectPoints(c.series[1], {{k128K, 30}});
  ExpectPoints(c.series[2], {{k64K, 12}, {k128K, 6}});
}

TEST(Charts, BestSchemeMapPicksTheFastestValidFittingScheme) {
  const plot::CategoryMap m = BestSchemeMap(Rows());
  EXPECT_EQ(m.categories, (std::vector<std::string>{"ring", "ulysses", "mesh"}));
  EXPECT_EQ(m.x_ticks, (std::vector<std::string>{"8", "16", "32"}));
  EXPECT_EQ(m.y_ticks, (std::vector<std::string>{"64K", "128K"}));
  const int ulysses = 1, mesh = 2, none = -1;  // ring = 0 wins nowhere
  // 64K:  8 -> ulysses 90 ms; 16 -> mesh 55 ms (ulysses invalid); 32 -> mesh 30 ms.
  // 128K: 8 -> mesh 390 ms (ulysses does not fit); 16 -> ulysses 200 ms; 32 -> nothing fits.
  const std::vector<std::vector<int>> want = {{ulysses, mesh, mesh}, {mesh, ulysses, none}};
  EXPECT_EQ(m.cells, want);
  ASSERT_EQ(m.notes.size(), 2u);
  EXPECT_EQ(m.notes[0][0], FormatSeconds(0.090));
  EXPECT_EQ(m.notes[0][1], FormatSeconds(0.055));
  EXPECT_EQ(m.notes[1][0], FormatSeconds(0.390));
  EXPECT_EQ(m.notes[1][2], "");
  // Rows in any order give the same map.
  std::vector<SweepRow> reversed = Rows();
  std::reverse(reversed.begin(), reversed.end());
  EXPECT_EQ(BestSchemeMap(reversed).cells, want);
}

TEST(Charts, BestSchemeMapMarksSchemesWithinHalfAPercentAsTies) {
  const Scheme R = Scheme("ring"), U = Scheme("ulysses"), M = Scheme("mesh");
  const std::vector<SweepRow> rows = {
      // 8 GPUs, 64K: ring and ulysses exactly equal (ring, the earlier scheme, is drawn), mesh
      // 0.4% slower (100.4 ms <= 100 x 1.005 = 100.5 ms): both are ties, fastest first.
      Row(R, 8, k64K, 0.1000),
      Row(U, 8, k64K, 0.1000),
      Row(M, 8, k64K, 0.1004),
      // 16 GPUs, 64K: mesh best, ring 0.6% slower (100.6 ms > 100.5 ms): no tie; ulysses 0.2%
      // slower but does not fit, so it is no candidate.
      Row(R, 16, k64K, 0.1006),
      Row(U, 16, k64K, 0.1002, true, false),
      Row(M, 16, k64K, 0.1000),
  };
  const plot::CategoryMap m = BestSchemeMap(rows);
  const int ring = 0, ulysses = 1, mesh = 2;
  EXPECT_EQ(m.cells, (std::vector<std::vector<int>>{{ring, mesh}}));
  ASSERT_EQ(m.ties.size(), 1u);
  ASSERT_EQ(m.ties[0].size(), 2u);
  ASSERT_EQ(m.ties[0][0].size(), 2u);
  EXPECT_EQ(m.ties[0][0][0].category, ulysses);
  EXPECT_EQ(m.ties[0][0][0].note, FormatSeconds(0.1000));
  EXPECT_EQ(m.ties[0][0][1].category, mesh);
  EXPECT_EQ(m.ties[0][0][1].note, FormatSeconds(0.1004));
  EXPECT_TRUE(m.ties[0][1].empty());
  // The tolerance is stated where the chart shows it.
  EXPECT_EQ(m.tie_label, "within 0.5%");
  EXPECT_NE(m.tie_legend.find("0.5%"), std::string::npos) << m.tie_legend;
  // Row order does not change the winner of an exact tie.
  std::vector<SweepRow> reversed = rows;
  std::reverse(reversed.begin(), reversed.end());
  EXPECT_EQ(BestSchemeMap(reversed).cells, m.cells);
  // The rendered map carries the ties in the cell's tooltip.
  const std::string svg = plot::RenderCategoryMap(m);
  EXPECT_NE(svg.find("ring (" + FormatSeconds(0.1) + "); within 0.5%: ulysses (" +
                     FormatSeconds(0.1) + "), mesh (" + FormatSeconds(0.1004) + ")"),
            std::string::npos);
}

// ---- The timeline of a replayed 4-GPU ring
// -------------------------------------------------------

struct Replay {
  Schedule schedule;
  sim::SimResult result;
};

Replay RingOnFourGpus() {
  const Topology topology = testing::SmallCluster(4, 1);
  Workload w;
  w.seq_len = 4096;
  w.q_heads = 8;
  w.kv_heads = 4;
  w.head_dim = 64;
  w.mask = Mask::Causal();
  w.pass = Pass::kForwardBackward;
  SchemeParams params;
  params.scheme = Scheme("ring");
  params.ring = 4;
  params.layout = Layout::kZigzag;
  params.placement = CanonicalPlacement(planner::RankDims(params));
  const planner::PlanContext ctx(w, topology);
  const auto strategy = planner::MakeStrategy(params.scheme);
  const planner::Estimate e = strategy->Evaluate(ctx, params);
  EXPECT_TRUE(e.valid) << e.reason;
  Replay out;
  auto schedule = strategy->Expand(ctx, params);
  EXPECT_TRUE(schedule.ok()) << schedule.status().message();
  if (!schedule.ok()) return out;
  out.schedule = std::move(schedule).value();
  std::vector<int64_t> rank_to_gpu = {0, 1, 2, 3};
  auto result = sim::Simulate(out.schedule, topology, rank_to_gpu, w.dtype);
  EXPECT_TRUE(result.ok()) << result.status().message();
  if (result.ok()) out.result = std::move(result).value();
  return out;
}

TEST(Charts, SimulatedTimelineHasOneLanePerRankAndOneBarPerOp) {
  const Replay replay = RingOnFourGpus();
  ASSERT_EQ(replay.schedule.num_ranks, 4);
  ASSERT_EQ(replay.result.op_times.size(), 4u);
  const plot::Timeline t = SimulatedTimeline(replay.schedule, replay.result, 16);
  EXPECT_EQ(t.lanes, (std::vector<std::string>{"rank 0", "rank 1", "rank 2", "rank 3"}));
  EXPECT_EQ(t.categories,
            (std::vector<std::string>{"compute fwd", "compute bwd", "send/recv", "collective"}));
  EXPECT_EQ(t.time_label, "time (ms)");
  EXPECT_NE(t.title.find("ring"), std::string::npos) << t.title;
  EXPECT_EQ(t.title.find("shown"), std::string::npos) << t.title;
  ASSERT_EQ(static_cast<int64_t>(t.bars.size()), replay.schedule.TotalOps());
  // Bars follow the ops rank by rank, in program order.
  size_t k = 0;
  int seen[4] = {0, 0, 0, 0};
  for (size_t r = 0; r < 4; ++r) {
    const auto& ops = replay.schedule.ranks[r].ops;
    for (size_t i = 0; i < ops.size(); ++i, ++k) {
      const plot::Timeline::Bar& b = t.bars[k];
      EXPECT_EQ(b.lane, static_cast<int>(r));
      EXPECT_NEAR(b.start, replay.result.op_times[r][i].start * 1e-6, 1e-12);
      EXPECT_NEAR(b.end, replay.result.op_times[r][i].end * 1e-6, 1e-12);
      int want = 3;
      if (ops[i].stream == StreamId::kCompute) {
        want = ops[i].phase == Phase::kForward ? 0 : 1;
      } else if (ops[i].kind == OpKind::kSend || ops[i].kind == OpKind::kRecv) {
        want = 2;
      }
      EXPECT_EQ(b.category, want) << "rank " << r << " op " << i;
      ++seen[b.category];
    }
  }
  // A ring forward+backward computes in both phases and talks point to point.
  EXPECT_GT(seen[0], 0);
  EXPECT_GT(seen[1], 0);
  EXPECT_GT(seen[2], 0);
  EXPECT_EQ(seen[3], 0);
  // The last bar ends at the simulated step time.
  double last = 0;
  for (const auto& b : t.bars) last = std::max(last, b.end);
  EXPECT_NEAR(last, replay.result.total_s * 1e3, 1e-6);
}

TEST(Charts, SimulatedTimelineShowsTheFirstRanksWhenThereAreMany) {
  const Replay replay = RingOnFourGpus();
  const plot::Timeline t = SimulatedTimeline(replay.schedule, replay.result, 2);
  EXPECT_EQ(t.lanes, (std::vector<std::string>{"rank 0", "rank 1"}));
  EXPECT_NE(t.title.find("first 2 ranks shown"), std::string::npos) << t.title;
  EXPECT_EQ(t.bars.size(),
            replay.schedule.ranks[0].ops.size() + replay.schedule.ranks[1].ops.size());
  for (const auto& b : t.bars) EXPECT_LT(b.lane, 2);
  // Without recorded op times: lanes but no bars, and the title says so.
  sim::SimResult bare = replay.result;
  bare.op_times.clear();
  const plot::Timeline none = SimulatedTimeline(replay.schedule, bare, 0);
  EXPECT_EQ(none.lanes.size(), 4u);
  EXPECT_TRUE(none.bars.empty());
  EXPECT_NE(none.title.find("not recorded"), std::string::npos) << none.title;
}

TEST(Charts, RenderedTimelineHasOneBarPerOp) {
  const Replay replay = RingOnFourGpus();
  const std::string svg =
      plot::RenderTimeline(SimulatedTimeline(replay.schedule, replay.result, 16));
  size_t bars = 0;
  for (size_t at = svg.find("class=\"bar\""); at != std::string::npos;
       at = svg.find("class=\"bar\"", at + 1))
    ++bars;
  EXPECT_EQ(static_cast<int64_t>(bars), replay.schedule.TotalOps());
  EXPECT_NE(svg.find(">rank 3</text>"), std::string::npos);
}

// ---- WriteSweepPlots ----------------------------------------------------------------------------

class SweepPlots : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("meshplan_charts_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  static std::string Read(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  fs::path dir_;
};

TEST_F(SweepPlots, WritesEveryChartIntoANewDirectory) {
  const fs::path out = dir_ / "nested" / "plots";
  const Status st = WriteSweepPlots(Rows(), out.string());
  ASSERT_TRUE(st.ok()) << st.message();
  for (const char* name : {"time-vs-gpus.svg", "time-vs-gpus-64K.svg", "time-vs-gpus-128K.svg",
                           "time-vs-seq.svg", "time-vs-seq-8.svg", "time-vs-seq-16.svg",
                           "time-vs-seq-32.svg", "comm-share-vs-seq.svg", "best-scheme.svg"}) {
    const std::string text = Read(out / name);
    EXPECT_EQ(text.rfind("<?xml", 0), 0u) << name;
    EXPECT_NE(text.find("</svg>"), std::string::npos) << name;
  }
  // The main time chart is for the largest sequence length, the share chart for the most GPUs.
  EXPECT_NE(Read(out / "time-vs-gpus.svg").find("128K tokens"), std::string::npos);
  EXPECT_NE(Read(out / "comm-share-vs-seq.svg").find("on 32 GPUs"), std::string::npos);
  EXPECT_NE(Read(out / "time-vs-seq.svg").find("on 32 GPUs"), std::string::npos);
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(out)) {
    EXPECT_EQ(e.path().extension(), ".svg") << e.path();  // no temporary files left behind
    ++files;
  }
  EXPECT_EQ(files, 9u);
}

// A sweep over one GPU count draws no time-vs-GPUs chart (it would be a column of points), and
// one over one sequence length no time-vs-sequence or share chart; their files from an earlier
// sweep into the directory go, so the charts shown are this sweep's.
TEST_F(SweepPlots, AChartOverOneValueOfItsAxisIsNotDrawn) {
  std::vector<SweepRow> one_gpu_count;
  for (const SweepRow& r : Rows()) {
    if (r.gpus == 8) one_gpu_count.push_back(r);
  }
  ASSERT_TRUE(WriteSweepPlots(Rows(), dir_.string()).ok());  // every chart, as above
  ASSERT_TRUE(WriteSweepPlots(one_gpu_count, dir_.string()).ok());
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"best-scheme.svg", "comm-share-vs-seq.svg",
                                             "time-vs-seq.svg"}));
  std::vector<SweepRow> one_seq;
  for (const SweepRow& r : Rows()) {
    if (r.seq_len == k64K) one_seq.push_back(r);
  }
  ASSERT_TRUE(WriteSweepPlots(one_seq, dir_.string()).ok());
  names.clear();
  for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"best-scheme.svg", "time-vs-gpus.svg"}));
}

TEST_F(SweepPlots, ErrorsForNoRowsAndUnwritableDirectories) {
  Status st = WriteSweepPlots({}, dir_.string());
  EXPECT_EQ(st.code(), ErrorCode::kInvalidInput);
  fs::create_directories(dir_);
  std::ofstream(dir_ / "file") << "x";
  st = WriteSweepPlots(Rows(), (dir_ / "file" / "plots").string());
  EXPECT_EQ(st.code(), ErrorCode::kIo) << st.message();
  EXPECT_NE(st.message().find("file/plots"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace meshplan::report
