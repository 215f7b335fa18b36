#include "executor/transport/thread_transport.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace meshplan::exec {
namespace {

using std::chrono::milliseconds;

// A payload that identifies its sender, receiver, tag and sequence number in every element, with
// a length that varies (including zero) so truncation or mix-ups are caught.
std::vector<float> Payload(int src, int dst, int64_t tag, int seq) {
  const size_t n = static_cast<size_t>((src * 7 + dst * 3 + tag + seq) % 37);
  std::vector<float> data(n);
  for (size_t i = 0; i < n; ++i) {
    data[i] = static_cast<float>(src * 1000003 + dst * 10007 + tag * 101 + seq * 13 +
                                 static_cast<int64_t>(i)) *
              0.5f;
  }
  return data;
}

// Runs body(rank) on one thread per rank and joins them.
void RunRanks(int ranks, const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) threads.emplace_back(body, r);
  for (std::thread& t : threads) t.join();
}

Clock::time_point In(milliseconds ms) { return Clock::now() + ms; }

TEST(ThreadTransportTest, FactoryNumbersRanks) {
  auto transports = MakeThreadTransports(5);
  ASSERT_EQ(transports.size(), 5u);
  for (int r = 0; r < 5; ++r) {
    EXPECT_EQ(transports[r]->rank(), r);
    EXPECT_EQ(transports[r]->size(), 5);
  }
}

TEST(ThreadTransportTest, RingExchangeDeliversCheckedPayloads) {
  for (int ranks : {1, 2, 3, 8, 16}) {
    auto transports = MakeThreadTransports(ranks);
    constexpr int kRounds = 50;
    std::vector<std::string> failures(static_cast<size_t>(ranks));
    RunRanks(ranks, [&](int r) {
      Transport& t = *transports[r];
      const int next = (r + 1) % ranks;
      const int prev = (r + ranks - 1) % ranks;
      for (int round = 0; round < kRounds; ++round) {
        Status sent = t.Send(next, round, Payload(r, next, round, 0));
        std::vector<float> got;
        Status received = t.Recv(prev, round, &got, In(milliseconds(10000)));
        if (!sent.ok() || !received.ok()) {
          failures[r] = sent.message() + " " + received.message();
          return;
        }
        if (got != Payload(prev, r, round, 0)) {
          failures[r] = "wrong payload in round " + std::to_string(round);
          return;
        }
      }
    });
    for (int r = 0; r < ranks; ++r) EXPECT_EQ(failures[r], "") << "P=" << ranks << " rank " << r;
  }
}

TEST(ThreadTransportTest, AllToAllIncludingSelfWithReceivesInAnotherOrder) {
  for (int ranks : {2, 4, 6}) {
    auto transports = MakeThreadTransports(ranks);
    std::vector<std::string> failures(static_cast<size_t>(ranks));
    constexpr int kTags = 5;
    RunRanks(ranks, [&](int r) {
      Transport& t = *transports[r];
      // Send everything first (sends are buffered), then receive peers and tags in reverse.
      for (int peer = 0; peer < ranks; ++peer) {
        for (int tag = 0; tag < kTags; ++tag) {
          Status st = t.Send(peer, 1000 + tag, Payload(r, peer, 1000 + tag, 0));
          if (!st.ok()) failures[r] = st.message();
        }
      }
      for (int peer = ranks - 1; peer >= 0; --peer) {
        for (int tag = kTags - 1; tag >= 0; --tag) {
          std::vector<float> got;
          Status st = t.Recv(peer, 1000 + tag, &got, In(milliseconds(10000)));
          if (!st.ok()) {
            failures[r] = st.message();
          } else if (got != Payload(peer, r, 1000 + tag, 0)) {
            failures[r] = "wrong payload from " + std::to_string(peer);
          }
        }
      }
    });
    for (int r = 0; r < ranks; ++r) EXPECT_EQ(failures[r], "") << "P=" << ranks << " rank " << r;
  }
}

TEST(ThreadTransportTest, MessagesOfOnePeerAndTagArriveInOrder) {
  auto transports = MakeThreadTransports(2);
  constexpr int kCount = 2000;
  std::thread sender([&] {
    for (int seq = 0; seq < kCount; ++seq) {
      // Interleave two tags and a large negative one; the receiver drains them in another order.
      ASSERT_TRUE(transports[0]->Send(1, 7, Payload(0, 1, 7, seq)).ok());
      ASSERT_TRUE(transports[0]->Send(1, 8, Payload(0, 1, 8, seq)).ok());
      ASSERT_TRUE(transports[0]->Send(1, INT64_MIN, Payload(0, 1, 3, seq)).ok());
    }
  });
  for (int64_t tag : {int64_t{8}, int64_t{7}}) {
    for (int seq = 0; seq < kCount; ++seq) {
      std::vector<float> got;
      Status st = transports[1]->Recv(0, tag, &got, In(milliseconds(10000)));
      ASSERT_TRUE(st.ok()) << st.message();
      ASSERT_EQ(got, Payload(0, 1, tag, seq)) << "tag " << tag << " seq " << seq;
    }
  }
  for (int seq = 0; seq < kCount; ++seq) {
    std::vector<float> got;
    ASSERT_TRUE(transports[1]->Recv(0, INT64_MIN, &got, In(milliseconds(10000))).ok());
    ASSERT_EQ(got, Payload(0, 1, 3, seq)) << "seq " << seq;
  }
  sender.join();
}

TEST(ThreadTransportTest, ThousandsOfUniquelyTaggedMessagesAcrossEightRanks) {
  constexpr int kRanks = 8;
  constexpr int kPerPair = 400;  // 8 * 8 * 400 = 25,600 messages
  auto transports = MakeThreadTransports(kRanks);
  std::vector<std::string> failures(kRanks);
  const auto start = Clock::now();
  RunRanks(kRanks, [&](int r) {
    Transport& t = *transports[r];
    for (int i = 0; i < kPerPair; ++i) {
      for (int k = 0; k < kRanks; ++k) {
        const int peer = (r + k) % kRanks;
        const int64_t tag = (int64_t{1} << 40) + int64_t{r} * kPerPair + i;  // unique per sender
        if (!t.Send(peer, tag, Payload(r, peer, tag % 1000, i)).ok()) failures[r] = "send";
        const int from = (r + kRanks - k) % kRanks;
        const int64_t from_tag = (int64_t{1} << 40) + int64_t{from} * kPerPair + i;
        std::vector<float> got;
        Status st = t.Recv(from, from_tag, &got, In(milliseconds(20000)));
        if (!st.ok()) {
          failures[r] = st.message();
          return;
        }
        if (got != Payload(from, r, from_tag % 1000, i)) failures[r] = "payload";
      }
    }
  });
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(failures[r], "") << "rank " << r;
  EXPECT_LT(seconds, 10.0);  // generous: a few hundred ms on two loaded cores
}

TEST(ThreadTransportTest, ConcurrentReceivesOfOneRankOnDifferentTags) {
  auto transports = MakeThreadTransports(2);
  std::vector<std::vector<float>> got(4);
  std::vector<Status> statuses(4);
  std::vector<std::thread> receivers;
  for (int i = 0; i < 4; ++i) {
    receivers.emplace_back([&, i] {
      statuses[i] = transports[1]->Recv(0, 100 + i, &got[i], In(milliseconds(10000)));
    });
  }
  std::this_thread::sleep_for(milliseconds(20));  // let them block
  for (int i = 3; i >= 0; --i)
    ASSERT_TRUE(transports[0]->Send(1, 100 + i, Payload(0, 1, i, 0)).ok());
  for (std::thread& t : receivers) t.join();
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(statuses[i].ok()) << statuses[i].message();
    EXPECT_EQ(got[i], Payload(0, 1, i, 0));
  }
}

TEST(ThreadTransportTest, RecvDeadlineExpiresWithMessageNamingRankPeerAndTag) {
  auto transports = MakeThreadTransports(3);
  // A message with another tag, or from another peer, must not satisfy the receive.
  ASSERT_TRUE(transports[0]->Send(1, 41, {1.0f}).ok());
  ASSERT_TRUE(transports[2]->Send(1, 42, {2.0f}).ok());
  std::vector<float> got;
  const auto start = Clock::now();
  Status st = transports[1]->Recv(0, 42, &got, start + milliseconds(100));
  const auto waited = Clock::now() - start;
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), ErrorCode::kIo);
  EXPECT_EQ(st.message(), "rank 1: recv from rank 0 tag 42: no message within the deadline");
  EXPECT_GE(waited, milliseconds(100));
  EXPECT_LT(waited, milliseconds(1000));
  // A deadline already in the past fails at once, and the queued messages are still there.
  EXPECT_FALSE(transports[1]->Recv(0, 42, &got, Clock::now() - milliseconds(1)).ok());
  ASSERT_TRUE(transports[1]->Recv(0, 41, &got, Clock::now()).ok());
  EXPECT_EQ(got, std::vector<float>{1.0f});
  ASSERT_TRUE(transports[1]->Recv(2, 42, &got, Clock::now()).ok());
  EXPECT_EQ(got, std::vector<float>{2.0f});
}

TEST(ThreadTransportTest, AbortFromOneRankWakesBlockedReceivesOnOthers) {
  constexpr int kRanks = 4;
  auto transports = MakeThreadTransports(kRanks);
  std::vector<Status> statuses(kRanks);
  std::vector<Clock::time_point> returned_at(kRanks);
  std::vector<std::thread> blocked;
  // Ranks 1..3 wait for a message from rank 0 that never comes, with a 30 s deadline.
  for (int r = 1; r < kRanks; ++r) {
    blocked.emplace_back([&, r] {
      std::vector<float> got;
      statuses[r] = transports[r]->Recv(0, 9, &got, Clock::now() + std::chrono::seconds(30));
      returned_at[r] = Clock::now();
    });
  }
  std::this_thread::sleep_for(milliseconds(100));
  const auto abort_time = Clock::now();
  transports[0]->Abort(Status::Internal("rank 0: op 3 (compute): injected failure"));
  for (std::thread& t : blocked) t.join();
  const auto woke_after = Clock::now() - abort_time;
  EXPECT_LT(woke_after, milliseconds(1000));
  for (int r = 1; r < kRanks; ++r) {
    ASSERT_FALSE(statuses[r].ok()) << "rank " << r;
    EXPECT_EQ(statuses[r].code(), ErrorCode::kIo);
    EXPECT_EQ(statuses[r].message(), "rank " + std::to_string(r) +
                                         ": recv from rank 0 tag 9: aborted: rank 0: op 3 "
                                         "(compute): injected failure");
    EXPECT_GE(returned_at[r], abort_time) << "rank " << r << " returned before the abort";
  }
}

TEST(ThreadTransportTest, AfterAbortSendAndRecvFailFastEvenWithQueuedMessages) {
  auto transports = MakeThreadTransports(2);
  ASSERT_TRUE(transports[0]->Send(1, 5, {1.0f, 2.0f}).ok());
  transports[1]->Abort(Status::Internal("first reason"));
  transports[0]->Abort(Status::Internal("second reason"));  // the first reason is kept
  Status sent = transports[0]->Send(1, 6, {3.0f});
  ASSERT_FALSE(sent.ok());
  EXPECT_EQ(sent.message(), "rank 0: send to rank 1 tag 6: aborted: first reason");
  std::vector<float> got;
  const auto start = Clock::now();
  Status received = transports[1]->Recv(0, 5, &got, start + std::chrono::seconds(30));
  EXPECT_LT(Clock::now() - start, milliseconds(100));
  ASSERT_FALSE(received.ok());
  EXPECT_EQ(received.message(), "rank 1: recv from rank 0 tag 5: aborted: first reason");
}

TEST(ThreadTransportTest, PeerOutOfRangeIsAnErrorNotACrash) {
  auto transports = MakeThreadTransports(2);
  Status sent = transports[0]->Send(2, 1, {1.0f});
  ASSERT_FALSE(sent.ok());
  EXPECT_EQ(sent.code(), ErrorCode::kInternal);
  EXPECT_NE(sent.message().find("rank 0: send to rank 2 tag 1"), std::string::npos);
  std::vector<float> got;
  Status received = transports[1]->Recv(-1, 1, &got, Clock::now() + milliseconds(10));
  ASSERT_FALSE(received.ok());
  EXPECT_EQ(received.code(), ErrorCode::kInternal);
  EXPECT_NE(received.message().find("rank 1: recv from rank -1 tag 1"), std::string::npos);
}

TEST(ThreadTransportTest, FabricOutlivesFactoryAndTransportsResetInAnyOrder) {
  auto transports = MakeThreadTransports(3);
  ASSERT_TRUE(transports[0]->Send(2, 1, {4.0f}).ok());
  transports[0].reset();
  transports[1].reset();
  std::vector<float> got;
  ASSERT_TRUE(transports[2]->Recv(0, 1, &got, Clock::now()).ok());
  EXPECT_EQ(got, std::vector<float>{4.0f});
}

}  // namespace
}  // namespace meshplan::exec
