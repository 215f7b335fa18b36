// MpiTransport under a real MPI job: run as `mpirun -np 4 meshplan_mpi_transport_test` (any
// -np >= 2 works). Not a gtest program: every rank runs the same cases, a case fails when it fails
// on any rank (combined with MPI_Allreduce), rank 0 prints one line per case and a final
// "N passed, M failed", and every rank exits 1 when a case failed.
//
// With `--abort`, the program instead checks Abort: rank 1 aborts after 200 ms while the other
// ranks wait up to 60 s for a message from it. The job must end at once with mpirun exiting
// non-zero and rank 1's line "meshplan: rank 1: aborting the MPI job: rank 1: op 0 (test):
// injected failure" on stderr (CTest matches that line); a rank whose receive returns instead
// prints "abort did not stop rank R" and exits 1.
#if !MESHPLAN_HAVE_MPI
#error "built only when CMake finds MPI (cmake/Mpi.cmake defines MESHPLAN_HAVE_MPI=1)"
#endif

#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include "executor/transport/mpi_transport.h"

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace meshplan::exec {
namespace {

using std::chrono::milliseconds;

constexpr milliseconds kGenerous(20000);  // receives that must succeed

// A payload naming sender, receiver, tag and sequence number in every element, with a length
// that varies (zero included) so truncation and mix-ups are caught.
std::vector<float> Payload(int src, int dst, int64_t tag, int seq, size_t extra = 0) {
  const size_t n = static_cast<size_t>((src * 7 + dst * 3 + (tag & 0xffff) + seq) % 37) + extra;
  std::vector<float> data(n);
  for (size_t i = 0; i < n; ++i) {
    // Stay within float's exact integers (2^24) so equality is meaningful.
    data[i] = static_cast<float>(
        (src * 131071 + dst * 8191 + (tag & 0xfff) * 127 + seq * 31 + static_cast<int64_t>(i)) %
        16777213);
  }
  return data;
}

std::string Describe(const char* what, int peer, int64_t tag, int seq) {
  return std::string(what) + " (peer " + std::to_string(peer) + ", tag " + std::to_string(tag) +
         ", seq " + std::to_string(seq) + ")";
}

// Receives and checks one message; returns "" or a failure.
std::string Expect(MpiTransport& t, int peer, int64_t tag, const std::vector<float>& expected,
                   int seq) {
  std::vector<float> got;
  Status st = t.Recv(peer, tag, &got, Clock::now() + kGenerous);
  if (!st.ok()) return st.message();
  if (got.size() != expected.size()) {
    return Describe("wrong length", peer, tag, seq) + ": " + std::to_string(got.size()) +
           " floats, expected " + std::to_string(expected.size());
  }
  if (got != expected) return Describe("wrong payload", peer, tag, seq);
  return "";
}

// Each rank sends to rank+1 and receives from rank-1, 40 rounds, with int64 tags far beyond
// MPI_TAG_UB; round 7 carries 1M floats (4 MB, MPI's rendezvous path).
std::string RingExchange(MpiTransport& t) {
  const int p = t.size(), r = t.rank();
  const int next = (r + 1) % p, prev = (r + p - 1) % p;
  for (int round = 0; round < 40; ++round) {
    const int64_t tag = (int64_t{1} << 45) + round;
    const size_t extra = round == 7 ? (size_t{1} << 20) : 0;
    Status st = t.Send(next, tag, Payload(r, next, tag, round, extra));
    if (!st.ok()) return st.message();
    std::string failure = Expect(t, prev, tag, Payload(prev, r, tag, round, extra), round);
    if (!failure.empty()) return failure;
  }
  return "";
}

// Every rank sends to every rank (itself included) on several tags (negative ones too), then
// receives peers and tags in reverse order, so most messages wait in the local queues.
std::string AllToAll(MpiTransport& t) {
  const int p = t.size(), r = t.rank();
  const std::vector<int64_t> tags = {0, 1, -5, INT64_MAX, INT64_MIN, 32767, 32768, 0x4D50};
  for (int peer = 0; peer < p; ++peer) {
    for (int64_t tag : tags) {
      Status st = t.Send(peer, tag, Payload(r, peer, tag, 0));
      if (!st.ok()) return st.message();
    }
  }
  for (int peer = p - 1; peer >= 0; --peer) {
    for (auto it = tags.rbegin(); it != tags.rend(); ++it) {
      std::string failure = Expect(t, peer, *it, Payload(peer, r, *it, 0), 0);
      if (!failure.empty()) return failure;
    }
  }
  return "";
}

// 600 messages to the next rank on two interleaved tags; the receiver drains one tag entirely
// before the other, and each must come out in send order.
std::string FifoPerPeerAndTag(MpiTransport& t) {
  const int p = t.size(), r = t.rank();
  const int next = (r + 1) % p, prev = (r + p - 1) % p;
  constexpr int kCount = 300;
  for (int seq = 0; seq < kCount; ++seq) {
    for (int64_t tag : {int64_t{100}, int64_t{200}}) {
      Status st = t.Send(next, tag, Payload(r, next, tag, seq));
      if (!st.ok()) return st.message();
    }
  }
  for (int64_t tag : {int64_t{200}, int64_t{100}}) {
    for (int seq = 0; seq < kCount; ++seq) {
      std::string failure = Expect(t, prev, tag, Payload(prev, r, tag, seq), seq);
      if (!failure.empty()) return failure;
    }
  }
  return "";
}

// Thousands of small messages: P*P*300 in total, sends and receives interleaved.
std::string ManySmallMessages(MpiTransport& t) {
  const int p = t.size(), r = t.rank();
  constexpr int kPerPair = 300;
  const auto start = Clock::now();
  for (int i = 0; i < kPerPair; ++i) {
    for (int k = 0; k < p; ++k) {
      const int to = (r + k) % p, from = (r + p - k) % p;
      const int64_t tag = int64_t{7} << 32 | i;
      Status st = t.Send(to, tag, Payload(r, to, tag, i));
      if (!st.ok()) return st.message();
      std::string failure = Expect(t, from, tag, Payload(from, r, tag, i), i);
      if (!failure.empty()) return failure;
    }
  }
  if (r == 0) {
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    std::printf("       (%d messages in %.1f ms)\n", p * p * kPerPair, ms);
  }
  return "";
}

// A receive that nobody answers fails after its 100 ms deadline, promptly, naming rank, peer and
// tag; a message with another tag from that peer does not satisfy it.
std::string RecvDeadline(MpiTransport& t) {
  const int p = t.size(), r = t.rank();
  const int next = (r + 1) % p, prev = (r + p - 1) % p;
  const int64_t tag = int64_t{1} << 62;
  Status st = t.Send(next, tag + 1, {1.0f, 2.0f});
  if (!st.ok()) return st.message();
  std::vector<float> got;
  const auto start = Clock::now();
  st = t.Recv(prev, tag, &got, start + milliseconds(100));
  const auto waited = Clock::now() - start;
  if (st.ok()) return "a receive nobody answered succeeded";
  const std::string expected = "rank " + std::to_string(r) + ": recv from rank " +
                               std::to_string(prev) + " tag " + std::to_string(tag) +
                               ": no message within the deadline";
  if (st.message() != expected)
    return "message '" + st.message() + "', expected '" + expected + "'";
  if (st.code() != ErrorCode::kIo) return "wrong error code";
  if (waited < milliseconds(100)) return "returned before the deadline";
  if (waited > milliseconds(2000)) return "returned long after the deadline";
  // The other message is still there, and a deadline in the past still returns it.
  if (!t.Recv(prev, tag + 1, &got, Clock::now() - milliseconds(1)).ok() &&
      !t.Recv(prev, tag + 1, &got, Clock::now() + kGenerous).ok()) {
    return "the message with the other tag was lost";
  }
  if (got != std::vector<float>{1.0f, 2.0f}) return "wrong payload for the other tag";
  return "";
}

// Two threads per rank use the transport at once (the interpreter's compute and communication
// threads do): each runs its own ring on its own tags, one forwards and one backwards.
std::string TwoThreadsPerRank(MpiTransport& t) {
  const int p = t.size(), r = t.rank();
  std::string failures[2];
  auto ring = [&](int lane) {
    const int to = lane == 0 ? (r + 1) % p : (r + p - 1) % p;
    const int from = lane == 0 ? (r + p - 1) % p : (r + 1) % p;
    for (int round = 0; round < 200 && failures[lane].empty(); ++round) {
      const int64_t tag = (int64_t{lane + 1} << 50) + round;
      Status st = t.Send(to, tag, Payload(r, to, tag, round));
      if (!st.ok()) failures[lane] = st.message();
      if (failures[lane].empty())
        failures[lane] = Expect(t, from, tag, Payload(from, r, tag, round), round);
    }
  };
  std::thread other(ring, 1);
  ring(0);
  other.join();
  return failures[0].empty() ? failures[1] : failures[0];
}

std::string InvalidPeer(MpiTransport& t) {
  Status st = t.Send(t.size(), 1, {1.0f});
  if (st.ok() || st.code() != ErrorCode::kInternal) return "send to rank size() accepted";
  std::vector<float> got;
  st = t.Recv(-1, 1, &got, Clock::now());
  if (st.ok() || st.code() != ErrorCode::kInternal) return "recv from rank -1 accepted";
  return "";
}

std::string FlushCompletesSends(MpiTransport& t) {
  Status st = t.Flush(Clock::now() + kGenerous);
  return st.ok() ? "" : st.message();
}

int RunAbortCase(MpiTransport& t) {
  if (t.rank() == 1) {
    std::this_thread::sleep_for(milliseconds(200));
    t.Abort(Status::Internal("rank 1: op 0 (test): injected failure"));
  }
  std::vector<float> got;
  Status st = t.Recv(1, 5, &got, Clock::now() + std::chrono::seconds(60));
  std::fprintf(stderr, "abort did not stop rank %d (%s)\n", t.rank(), st.message().c_str());
  return 1;
}

}  // namespace
}  // namespace meshplan::exec

int main(int argc, char** argv) {
  using namespace meshplan::exec;  // NOLINT: test driver
  auto session = MpiSession::Init(&argc, &argv);
  if (!session.ok()) {
    std::fprintf(stderr, "error: %s\n", session.status().message().c_str());
    return 2;
  }
  const int rank = (*session)->rank();
  if ((*session)->size() < 2) {
    std::fprintf(stderr, "error: run under mpirun with at least 2 ranks (got %d)\n",
                 (*session)->size());
    return 2;
  }
  if (argc > 1 && std::strcmp(argv[1], "--abort") == 0) {
    MpiTransport transport(**session);
    return RunAbortCase(transport);
  }
  struct Case {
    const char* name;
    std::function<std::string(MpiTransport&)> run;
  };
  const std::vector<Case> cases = {
      {"ring exchange", RingExchange},
      {"all-to-all with self", AllToAll},
      {"FIFO per (peer, tag)", FifoPerPeerAndTag},
      {"many small messages", ManySmallMessages},
      {"two threads per rank", TwoThreadsPerRank},
      {"recv deadline", RecvDeadline},
      {"invalid peer", InvalidPeer},
      {"flush", FlushCompletesSends},
  };
  int passed = 0, failed = 0;
  {
    MpiTransport transport(**session);
    if (rank == 0) std::printf("MpiTransport on %d ranks\n", transport.size());
    for (const Case& c : cases) {
      const std::string failure = c.run(transport);
      if (!failure.empty())
        std::fprintf(stderr, "rank %d: FAIL %s: %s\n", rank, c.name, failure.c_str());
      int local = failure.empty() ? 0 : 1, any = 0;
      MPI_Allreduce(&local, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
      if (rank == 0) std::printf("[%s] %s\n", any ? "FAIL" : " OK ", c.name);
      std::fflush(stdout);
      (any ? failed : passed) += 1;
    }
  }
  if (rank == 0) std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
