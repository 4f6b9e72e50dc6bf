// StagingArea (plugins/transport-mpi/staging.h) on its own, over MPI_COMM_WORLD of the test job
// (which the world's transport initialized): blocks staged by one rank and taken by another,
// the sender's reuse of freed blocks, the limits that send a payload through MPI, and headers
// that no staging area wrote. Rank r stages for rank r + 1 and takes from rank r - 1, so every
// rank both sends and receives; the offsets travel over the world's transport.
#include "staging.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "mpi_world.h"

namespace cfx::test::staging_test {
namespace {

using mpi::StagingArea;

int Next() { return (MpiWorld::rank() + 1) % MpiWorld::size(); }
int Prev() { return (MpiWorld::rank() + MpiWorld::size() - 1) % MpiWorld::size(); }

std::string Pattern(size_t n, int seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + seed * 17 + i / 4093) & 0xff);
  return s;
}

// Every rank on this machine's one host (or, with `apart`, each a host of its own).
std::unique_ptr<StagingArea> Make(uint64_t bytes, bool apart = false) {
  std::vector<std::string> problems;
  auto area = StagingArea::Create(MPI_COMM_WORLD, apart ? 1 : 0, bytes, &problems);
  for (const std::string& p : problems) ADD_FAILURE() << p;
  return area;
}

// Sends this rank's offset to Next() and returns Prev()'s.
int64_t SwapOffsets(int64_t mine) {
  int64_t theirs = -2;
  MPI_Sendrecv(&mine, 1, MPI_INT64_T, Next(), 7, &theirs, 1, MPI_INT64_T, Prev(), 7, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
  return theirs;
}

TEST(Staging, APayloadArrivesByteExactAndItsBlockIsReused) {
  auto area = Make(8 << 20);
  ASSERT_TRUE(area->Shares(Next()));
  EXPECT_FALSE(area->Shares(MpiWorld::rank()));
  const std::string payload = Pattern((1 << 20) + 123, MpiWorld::rank());
  const int64_t offset = area->Stage(Next(), payload.data(), payload.size());
  ASSERT_GE(offset, 0);
  EXPECT_EQ(area->TEST_BytesInUse(), (payload.size() + 4095) / 4096 * 4096);
  const int64_t from_prev = SwapOffsets(offset);
  std::string got(payload.size(), '\0');
  sdk::Status taken = area->Take(Prev(), from_prev, got.size(), got.data());
  ASSERT_TRUE(taken.ok()) << taken.message();
  EXPECT_TRUE(got == Pattern(got.size(), Prev())) << "payload differs";
  MPI_Barrier(MPI_COMM_WORLD);  // every block has been taken
  EXPECT_EQ(area->TEST_BytesInUse(), 0u);
  // The freed block is the first fit again.
  const int64_t again = area->Stage(Next(), payload.data(), payload.size());
  EXPECT_EQ(again, offset);
  area->Unstage(again);
  EXPECT_EQ(area->TEST_BytesInUse(), 0u);
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(Staging, AFullSegmentSendsThroughMpiUntilReceiversFreeBlocks) {
  auto area = Make(8 << 20);
  const std::string payload = Pattern(2 << 20, MpiWorld::rank());  // a quarter of the segment
  std::vector<int64_t> offsets;
  for (int i = 0; i < 4; ++i)
    offsets.push_back(area->Stage(Next(), payload.data(), payload.size()));
  for (int64_t o : offsets) EXPECT_GE(o, 0);
  EXPECT_EQ(area->Stage(Next(), payload.data(), payload.size()), -1) << "the segment is full";
  EXPECT_EQ(area->Stage(Next(), payload.data(), (2 << 20) + 1), -1) << "above a quarter";
  // The receiver drops the second block unread and takes the others.
  std::vector<int64_t> theirs;
  for (int64_t o : offsets) theirs.push_back(SwapOffsets(o));
  std::string got(payload.size(), '\0');
  for (size_t i = 0; i < theirs.size(); ++i) {
    if (i == 1) {
      area->Release(Prev(), theirs[i]);
      continue;
    }
    sdk::Status taken = area->Take(Prev(), theirs[i], got.size(), got.data());
    ASSERT_TRUE(taken.ok()) << taken.message();
    EXPECT_TRUE(got == Pattern(got.size(), Prev())) << "block " << i;
  }
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_EQ(area->TEST_BytesInUse(), 0u);
  // Freed runs merge: the whole segment takes one payload of a quarter again, four times.
  for (int i = 0; i < 4; ++i)
    EXPECT_GE(area->Stage(Next(), payload.data(), payload.size()), 0) << i;
  MPI_Barrier(MPI_COMM_WORLD);
}

TEST(Staging, RanksOnOtherHostsOrWithoutASegmentShareNothing) {
  auto apart = Make(8 << 20, /*apart=*/true);
  EXPECT_FALSE(apart->Shares(Next()));
  const std::string payload = Pattern(8192, 1);
  EXPECT_EQ(apart->Stage(Next(), payload.data(), payload.size()), -1);
  auto none = Make(0);
  EXPECT_FALSE(none->Shares(Next()));
  EXPECT_EQ(none->Stage(Next(), payload.data(), payload.size()), -1);
  char out[16];
  sdk::Status taken = none->Take(Prev(), 0, sizeof(out), out);
  EXPECT_EQ(taken.code(), CFX_INTERNAL) << taken.message();
  EXPECT_NE(taken.message().find("has not mapped"), std::string::npos) << taken.message();
}

TEST(Staging, AnOffsetOutsideTheSegmentIsAnError) {
  auto area = Make(4 << 20);
  std::vector<char> out(8192);
  for (int64_t offset : {int64_t{-4096}, int64_t{100}, int64_t{4} << 20}) {
    sdk::Status s = area->Take(Prev(), offset, out.size(), out.data());
    EXPECT_EQ(s.code(), CFX_INTERNAL) << offset << ": " << s.message();
  }
  sdk::Status s = area->Take(Prev(), 0, (4 << 20) + 1, out.data());  // runs past the end
  EXPECT_NE(s.message().find("lies outside its staging segment"), std::string::npos) << s.message();
  MPI_Barrier(MPI_COMM_WORLD);
}

}  // namespace
}  // namespace cfx::test::staging_test
