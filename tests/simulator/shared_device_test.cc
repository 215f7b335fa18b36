// Golden timings of ranks that share one device (GpuSpec::ranks_per_device), derived by hand.
//
// The device: 1000 TFLOP/s bf16 at efficiency 0.5 = 500 TFLOP/s for one kernel alone, no launch
// overhead, so a kernel of k TFLOP takes k * 2 ms = k * T alone, T = 2e6 ns.
#include "simulator/shared_device.h"

#include <gtest/gtest.h>

#include <tuple>
#include <utility>

#include "simulator/simulate.h"

namespace meshplan::sim {
namespace {

constexpr double kT = 2e-3;  // seconds one 1-TFLOP kernel takes alone

Topology SharedSwitch(int64_t ranks, int64_t per_device, int64_t concurrent,
                      DeviceSharing sharing) {
  Topology t;
  t.name = "shared";
  t.source = "test";
  t.gpu.model = "TestDevice";
  t.gpu.memory_bytes = 80e9;
  t.gpu.hbm_bytes_per_s = 2e12;
  t.gpu.peak_tflops = {{DType::kBf16, 1000}};
  t.gpu.attention_efficiency = {{1, 0.5}};
  t.gpu.ranks_per_device = per_device;
  t.gpu.concurrent_kernels = concurrent;
  t.gpu.sharing = sharing;
  t.levels.push_back({"memcpy", LinkKind::kSwitch, ranks, 100e9, 2e-6, 1.0, {}, {}});
  return t;
}

// Rank r runs one kernel of work[r] TFLOP, all starting at 0.
Schedule OneKernelEach(const std::vector<double>& tflop, Phase phase = Phase::kForward) {
  Schedule s;
  s.num_ranks = static_cast<int64_t>(tflop.size());
  s.layout = ShardLayout{Layout::kContiguous, 1024, 1, 1};
  s.ranks.resize(tflop.size());
  for (size_t r = 0; r < tflop.size(); ++r) {
    Op c;
    c.kind = OpKind::kCompute;
    c.phase = phase;
    c.q_shard = 0;
    c.kv_shard = 0;
    c.head_count = 1;
    c.flops = tflop[r] * 1e12;
    s.ranks[r].Add(c);
  }
  return s;
}

std::vector<double> EndsS(const Schedule& s, const Topology& t) {
  std::vector<int64_t> gpu(static_cast<size_t>(s.num_ranks));
  for (int64_t r = 0; r < s.num_ranks; ++r) gpu[r] = r;
  auto result = Simulate(s, t, gpu, DType::kBf16);
  EXPECT_TRUE(result.ok()) << result.status().message();
  std::vector<double> ends;
  if (!result.ok()) return ends;
  for (const auto& ops : result->op_times) ends.push_back(ToSeconds(ops[0].end));
  return ends;
}

void ExpectEnds(const std::vector<double>& got, const std::vector<double>& want_in_t) {
  ASSERT_EQ(got.size(), want_in_t.size());
  for (size_t i = 0; i < got.size(); ++i) {
    // Integer nanoseconds: each reschedule rounds a finish time by at most 0.5 ns.
    EXPECT_NEAR(got[i], want_in_t[i] * kT, 5e-9) << "rank " << i;
  }
}

TEST(SharedDeviceGolden, TwoRanksOnOneKernelSlotShareOrQueue) {
  // Two 1-TFLOP kernels on one device that runs one kernel at full rate.
  // processor: both at rate 1/2 from 0, so both end at 2T.
  ExpectEnds(EndsS(OneKernelEach({1, 1}), SharedSwitch(2, 2, 1, DeviceSharing::kProcessor)),
             {2, 2});
  // serial: rank 0's kernel first (0..T), then rank 1's (T..2T).
  ExpectEnds(EndsS(OneKernelEach({1, 1}), SharedSwitch(2, 2, 1, DeviceSharing::kSerial)), {1, 2});
  // Each rank on a device of its own (ranks_per_device 1): T each, in parallel.
  ExpectEnds(EndsS(OneKernelEach({1, 1}), SharedSwitch(2, 1, 1, DeviceSharing::kProcessor)),
             {1, 1});
}

TEST(SharedDeviceGolden, FourRanksOnTwoKernelSlotsUnderProcessorSharing) {
  // Work 1, 2, 3, 4 T on a device with 2 kernel slots (a 2-core CPU):
  //   [0, 2T]: 4 running at 2/4 = 1/2 each: each does T; rank 0 (1T) ends at 2T.
  //   left 1, 2, 3 T; 3 running at 2/3: rank 1 needs 1T -> 1.5T more, ends at 3.5T.
  //   left 1, 2 T (ranks 2, 3 did 1T each); 2 running at rate 1: rank 2 ends at 4.5T.
  //   rank 3 alone at rate 1 (one kernel uses one slot): its last 1T ends at 5.5T.
  // Check: 10T of work, 2 slots busy until 4.5T (9T) and one until 5.5T (1T).
  ExpectEnds(EndsS(OneKernelEach({1, 2, 3, 4}), SharedSwitch(4, 4, 2, DeviceSharing::kProcessor)),
             {2, 3.5, 4.5, 5.5});
}

TEST(SharedDeviceGolden, FourRanksOnTwoKernelSlotsServedInStartOrder) {
  // serial, 2 slots: ranks 0 and 1 run first (start order is rank order at time 0); rank 0 ends
  // at T and rank 2 takes its slot (T..4T); rank 1 ends at 2T and rank 3 takes it (2T..6T).
  ExpectEnds(EndsS(OneKernelEach({1, 2, 3, 4}), SharedSwitch(4, 4, 2, DeviceSharing::kSerial)),
             {1, 2, 4, 6});
}

TEST(SharedDeviceGolden, TwoDevicesOfTwoRanksDoNotShareWithEachOther) {
  // Ranks 0, 1 on device 0 and ranks 2, 3 on device 1, one slot each, processor sharing:
  // device 0 runs 1T and 3T: both at 1/2 until 2T (rank 0 ends), rank 1 alone: 2T left -> 4T.
  // device 1 runs 2T and 2T: both end at 4T.
  ExpectEnds(EndsS(OneKernelEach({1, 3, 2, 2}), SharedSwitch(4, 2, 1, DeviceSharing::kProcessor)),
             {2, 4, 4, 4});
}

TEST(SharedDeviceGolden, BackwardKernelsRunAtTheBackwardRateRatio) {
  // backward_rate_ratio 1.25: a 1-TFLOP backward kernel runs at 1.25 x 500 TFLOP/s: 0.8T.
  Topology t = SharedSwitch(1, 1, 1, DeviceSharing::kProcessor);
  t.gpu.backward_rate_ratio = 1.25;
  ExpectEnds(EndsS(OneKernelEach({1}, Phase::kBackward), t), {0.8});
  ExpectEnds(EndsS(OneKernelEach({1}, Phase::kForward), t), {1});
}

TEST(SharedDevice, AKernelAddedMidwayGetsItsShareFromThen) {
  // Unit level: one slot, processor sharing. Kernel A (1000 ns) alone from 0; kernel B (1000 ns)
  // joins at 400: A has 600 left at rate 1/2 -> ends at 1600; B then has 1000 - 600 = 400 left
  // at rate 1 -> ends at 2000.
  SharedDevice d(1, DeviceSharing::kProcessor);
  d.Start(0, 0, 0, 1000);
  d.Start(400, 1, 0, 1000);
  std::vector<SimTime> ends(2, -1);
  d.Reschedule(400, [&](int32_t rank, int32_t, SimTime end) { ends[rank] = end; });
  EXPECT_EQ(ends[0], 1600);
  EXPECT_EQ(ends[1], 400 + 2000);  // provisional, as if the share held: 1000 at rate 1/2
  const uint32_t epoch = d.epoch();
  d.Finish(1600, 0, 0);
  d.Reschedule(1600, [&](int32_t rank, int32_t, SimTime end) { ends[rank] = end; });
  EXPECT_EQ(ends[1], 2000);
  EXPECT_GT(d.epoch(), epoch);  // the first schedule's events are stale now
  EXPECT_EQ(d.running(), 1u);
}

}  // namespace
}  // namespace meshplan::sim

namespace meshplan::sim {
namespace {

TEST(SharedDevice, SerialWithFractionalSlotsRunsTheLastKernelAtTheFraction) {
  // concurrent 1.5, serial: kernel 0 at rate 1, kernel 1 at 0.5, kernel 2 waits (rate 0).
  // Work 1000 ns each from 0: kernel 0 ends at 1000; kernel 1 did 500, then runs alone at 1:
  // 500 more -> 1500 (its provisional end at 0 was 0 + 1000 / 0.5 = 2000).
  SharedDevice d(1.5, DeviceSharing::kSerial);
  for (int32_t r = 0; r < 3; ++r) d.Start(0, r, 0, 1000);
  std::vector<SimTime> ends(3, -1);
  d.Reschedule(0, [&](int32_t rank, int32_t, SimTime end) { ends[rank] = end; });
  EXPECT_EQ(ends[0], 1000);
  EXPECT_EQ(ends[1], 2000);
  EXPECT_EQ(ends[2], -1);  // waiting: no finish time
  d.Finish(1000, 0, 0);
  d.Reschedule(1000, [&](int32_t rank, int32_t, SimTime end) { ends[rank] = end; });
  // Now kernel 1 is first (rate 1): 500 left -> 1500; kernel 2 second at 0.5: 1000 / 0.5 -> 3000.
  EXPECT_EQ(ends[1], 1500);
  EXPECT_EQ(ends[2], 3000);
}

}  // namespace
}  // namespace meshplan::sim

namespace meshplan::sim {
namespace {

TEST(SharedDeviceGolden, CutRowsCostTheirExtraPairs) {
  // cut_row_extra_pairs 128: a block of time T at the dense rate with one cut row per 512 visible
  // pairs does 128 / 512 = 1/4 more pairs: 1.25T; one per 1024: 1.125T; as a backward block with
  // backward_rate_ratio 1.25 too: 1.25T / 1.25 = T. (1/512 and 1/1024 are exact in a float.)
  Topology t = SharedSwitch(1, 1, 1, DeviceSharing::kProcessor);
  t.gpu.cut_row_extra_pairs = 128;
  Schedule s = OneKernelEach({1});
  s.ranks[0].ops[0].cut_rows_per_pair = 1.0f / 1024;
  ExpectEnds(EndsS(s, t), {1.125});
  s.ranks[0].ops[0].cut_rows_per_pair = 1.0f / 512;
  ExpectEnds(EndsS(s, t), {1.25});
  t.gpu.backward_rate_ratio = 1.25;
  s.ranks[0].ops[0].phase = Phase::kBackward;
  ExpectEnds(EndsS(s, t), {1});
}

}  // namespace
}  // namespace meshplan::sim

namespace meshplan::sim {
namespace {

// A message of `bytes` from rank `from` to rank `to`: a send on one, its recv on the other.
void AddMessage(Schedule& s, int32_t from, int32_t to, double bytes) {
  Op send;
  send.kind = OpKind::kSend;
  send.stream = StreamId::kSend;
  send.peer = to;
  send.bytes = static_cast<int64_t>(bytes);
  send.tensors = kTensorKV;
  s.ranks[from].Add(send);
  Op recv = send;
  recv.kind = OpKind::kRecv;
  recv.stream = StreamId::kRecv;
  recv.peer = from;
  s.ranks[to].Add(recv);
}

// Rank 2i sends `bytes` to rank 2i + 1, for i < pairs, all at 0; the receivers' Recv end times.
std::vector<double> PairedCopiesEndS(int64_t pairs, double bytes, const Topology& t) {
  Schedule s;
  s.num_ranks = 2 * pairs;
  s.layout = ShardLayout{Layout::kContiguous, 1024, 1, 1};
  s.ranks.resize(static_cast<size_t>(2 * pairs));
  for (int64_t i = 0; i < pairs; ++i)
    AddMessage(s, static_cast<int32_t>(2 * i), static_cast<int32_t>(2 * i + 1), bytes);
  std::vector<int64_t> gpu(static_cast<size_t>(s.num_ranks));
  for (int64_t r = 0; r < s.num_ranks; ++r) gpu[r] = r;
  auto result = Simulate(s, t, gpu, DType::kBf16);
  EXPECT_TRUE(result.ok()) << result.status().message();
  std::vector<double> ends;
  if (!result.ok()) return ends;
  for (int64_t i = 0; i < pairs; ++i) ends.push_back(ToSeconds(result->op_times[2 * i + 1][0].end));
  return ends;
}

TEST(SharedDeviceGolden, CopiesInsideADeviceShareItsCopySlots) {
  // Level 0: 100 GB/s, 2 us latency. Two messages of 100 MB at once (0 -> 1, 2 -> 3), each alone
  // 2 us + 1 ms. On one device of 4 ranks with 2 slots (copy link 200 GB/s) both run at their
  // ports' 100 GB/s: 1.002 ms. With 1 slot (100 GB/s for the device) they share it, 50 GB/s each:
  // 2 us + 2 ms. Ranks on devices of their own: ports only, 1.002 ms.
  const double bytes = 100e6;
  auto expect = [](const std::vector<double>& got, double want_s) {
    ASSERT_EQ(got.size(), 2u);
    for (double g : got) EXPECT_NEAR(g, want_s, 2e-9);
  };
  expect(PairedCopiesEndS(2, bytes, SharedSwitch(4, 4, 2, DeviceSharing::kProcessor)), 2e-6 + 1e-3);
  expect(PairedCopiesEndS(2, bytes, SharedSwitch(4, 4, 1, DeviceSharing::kProcessor)), 2e-6 + 2e-3);
  expect(PairedCopiesEndS(2, bytes, SharedSwitch(4, 1, 1, DeviceSharing::kProcessor)), 2e-6 + 1e-3);
  // Two devices of 2 ranks with 1 slot each: each message stays inside its device, alone there.
  expect(PairedCopiesEndS(2, bytes, SharedSwitch(4, 2, 1, DeviceSharing::kProcessor)), 2e-6 + 1e-3);
}

// Rank 0 computes a 1-TFLOP kernel (T = 2 ms alone) while rank 2 sends 100 MB to rank 3, both
// from 0. Level 0: 100 GB/s, 2 us latency, so the copy moves from 2 us to 1002 us (its port and the
// copy link of one slot both 100 GB/s). Returns the kernel's end and the message's (receiver's)
// end.
std::pair<double, double> KernelBesideACopyS(const Topology& t) {
  Schedule s = OneKernelEach({1, 0, 0, 0});
  s.ranks[1] = RankProgram{};
  s.ranks[2] = RankProgram{};
  s.ranks[3] = RankProgram{};
  AddMessage(s, 2, 3, 100e6);
  std::vector<int64_t> gpu = {0, 1, 2, 3};
  auto result = Simulate(s, t, gpu, DType::kBf16);
  EXPECT_TRUE(result.ok()) << result.status().message();
  if (!result.ok()) return {0, 0};
  return {ToSeconds(result->op_times[0][0].end), ToSeconds(result->op_times[3][0].end)};
}

TEST(SharedDeviceGolden, CopiesMadeByTheDeviceTakeItsKernelsShare) {
  const double copy_end = 2e-6 + 1e-3;
  // One device of 4 ranks, 1 slot, processor sharing, copies made by the device: the kernel runs
  // alone for 2 us (2 us of its 2000 us of work), beside the copy at min(1, 1 / 2) = 1/2 until
  // 1002 us (500 us more), then alone: 2000 - 2 - 500 = 1498 us after 1002 us, ending at 2500 us.
  Topology t = SharedSwitch(4, 4, 1, DeviceSharing::kProcessor);
  t.gpu.copies_take_compute = true;
  auto [kernel, copy] = KernelBesideACopyS(t);
  EXPECT_NEAR(kernel, 2.5e-3, 5e-9);
  EXPECT_NEAR(copy, copy_end, 2e-9);  // the copy's own speed is the network's
  // Serial sharing: the copy takes the one slot, the kernel waits 1000 us: 2000 + 1000 = 3000 us.
  t.gpu.sharing = DeviceSharing::kSerial;
  std::tie(kernel, copy) = KernelBesideACopyS(t);
  EXPECT_NEAR(kernel, 3e-3, 5e-9);
  EXPECT_NEAR(copy, copy_end, 2e-9);
  // Two slots: a kernel and a copy both run at full rate (min(1, 2 / 2)): 2000 us.
  t = SharedSwitch(4, 4, 2, DeviceSharing::kProcessor);
  t.gpu.copies_take_compute = true;
  EXPECT_NEAR(KernelBesideACopyS(t).first, 2e-3, 5e-9);
  // Copy engines (the default, false): the kernel is alone on its slot, 2000 us.
  t = SharedSwitch(4, 4, 1, DeviceSharing::kProcessor);
  EXPECT_NEAR(KernelBesideACopyS(t).first, 2e-3, 5e-9);
  // Two devices of 2 ranks: the copy 2 -> 3 runs on device 1, the kernel on device 0: 2000 us.
  t = SharedSwitch(4, 2, 1, DeviceSharing::kProcessor);
  t.gpu.copies_take_compute = true;
  auto [apart_kernel, apart_copy] = KernelBesideACopyS(t);
  EXPECT_NEAR(apart_kernel, 2e-3, 5e-9);
  EXPECT_NEAR(apart_copy, copy_end, 2e-9);
}

}  // namespace
}  // namespace meshplan::sim
