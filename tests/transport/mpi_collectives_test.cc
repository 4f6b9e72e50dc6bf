// The MPI transport's host-memory collectives under mpirun, checked against values computed
// here: every dtype and reduction of all-reduce, all-gather and broadcast, on every rank and on
// a subgroup (every rank but rank 1) that the other ranks sit out. The all-reduce over every rank
// goes through shared memory unless the program runs with --shared-memory=off or --funnel (then
// MPI's); MpiSharedMemory checks what only the shared-memory path does.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <limits>
#include <thread>
#include <vector>

#include "conflux/sdk/float16.h"
#include "kernel_test_util.h"
#include "mpi_world.h"
#include "transport_test_util.h"

namespace cfx::test {

extern bool g_peer_dies;  // mpi_world.cc's main: --peer-dies

namespace {

constexpr uint64_t kCount = 7;

const DataType kReducible[] = {DT_FLOAT, DT_DOUBLE, DT_INT32,  DT_INT64,  DT_UINT8, DT_INT8,
                               DT_INT16, DT_UINT16, DT_UINT32, DT_UINT64, DT_HALF,  DT_BFLOAT16};
const ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMin, ReduceOp::kMax,
                         ReduceOp::kProd};

bool IsUnsigned(DataType d) {
  return d == DT_UINT8 || d == DT_UINT16 || d == DT_UINT32 || d == DT_UINT64 || d == DT_BOOL;
}
bool IsFloat(DataType d) {
  return d == DT_FLOAT || d == DT_DOUBLE || d == DT_HALF || d == DT_BFLOAT16;
}

// Rank r's element i: small values whose sums and products are exact in every dtype.
double Value(DataType d, int rank, uint64_t i) {
  const double v = static_cast<double>((rank * 3 + i) % 4);
  if (IsUnsigned(d)) return d == DT_BOOL ? static_cast<double>((rank + i) % 2) : v;
  return IsFloat(d) ? v - 0.5 : v - 1;
}

// Element i of a buffer of dtype d, as a double, and back.
double Load(DataType d, const void* data, uint64_t i) {
  switch (d) {
    case DT_FLOAT:
      return static_cast<const float*>(data)[i];
    case DT_DOUBLE:
      return static_cast<const double*>(data)[i];
    case DT_INT8:
      return static_cast<const int8_t*>(data)[i];
    case DT_INT16:
      return static_cast<const int16_t*>(data)[i];
    case DT_INT32:
      return static_cast<const int32_t*>(data)[i];
    case DT_INT64:
      return static_cast<double>(static_cast<const int64_t*>(data)[i]);
    case DT_UINT8:
      return static_cast<const uint8_t*>(data)[i];
    case DT_BOOL:
      return static_cast<const uint8_t*>(data)[i];
    case DT_UINT16:
      return static_cast<const uint16_t*>(data)[i];
    case DT_UINT32:
      return static_cast<const uint32_t*>(data)[i];
    case DT_UINT64:
      return static_cast<double>(static_cast<const uint64_t*>(data)[i]);
    case DT_HALF:
      return sdk::HalfToFloat(static_cast<const uint16_t*>(data)[i]);
    case DT_BFLOAT16:
      return sdk::Bfloat16ToFloat(static_cast<const uint16_t*>(data)[i]);
    default:
      return NAN;
  }
}
void Store(DataType d, void* data, uint64_t i, double v) {
  switch (d) {
    case DT_FLOAT:
      static_cast<float*>(data)[i] = static_cast<float>(v);
      return;
    case DT_DOUBLE:
      static_cast<double*>(data)[i] = v;
      return;
    case DT_INT8:
      static_cast<int8_t*>(data)[i] = static_cast<int8_t>(v);
      return;
    case DT_INT16:
      static_cast<int16_t*>(data)[i] = static_cast<int16_t>(v);
      return;
    case DT_INT32:
      static_cast<int32_t*>(data)[i] = static_cast<int32_t>(v);
      return;
    case DT_INT64:
      static_cast<int64_t*>(data)[i] = static_cast<int64_t>(v);
      return;
    case DT_UINT8:
    case DT_BOOL:
      static_cast<uint8_t*>(data)[i] = static_cast<uint8_t>(v);
      return;
    case DT_UINT16:
      static_cast<uint16_t*>(data)[i] = static_cast<uint16_t>(v);
      return;
    case DT_UINT32:
      static_cast<uint32_t*>(data)[i] = static_cast<uint32_t>(v);
      return;
    case DT_UINT64:
      static_cast<uint64_t*>(data)[i] = static_cast<uint64_t>(v);
      return;
    case DT_HALF:
      static_cast<uint16_t*>(data)[i] = sdk::FloatToHalf(static_cast<float>(v));
      return;
    case DT_BFLOAT16:
      static_cast<uint16_t*>(data)[i] = sdk::FloatToBfloat16(static_cast<float>(v));
      return;
    default:
      return;
  }
}

// Rank `rank`'s input: kCount elements of dtype d.
std::vector<char> Input(DataType d, int rank, uint64_t count = kCount) {
  std::vector<char> data(count * DataTypeSize(d));
  for (uint64_t i = 0; i < count; ++i) Store(d, data.data(), i, Value(d, rank, i));
  return data;
}

// The reduction of element i over `members`, computed here; MEAN of integers divides as C++.
double Expected(DataType d, ReduceOp op, const std::vector<int32_t>& members, uint64_t i) {
  double sum = 0, prod = 1, lo = INFINITY, hi = -INFINITY;
  for (int32_t r : members) {
    const double v = Value(d, r, i);
    sum += v;
    prod *= v;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  switch (op) {
    case ReduceOp::kSum:
      return sum;
    case ReduceOp::kProd:
      return prod;
    case ReduceOp::kMin:
      return lo;
    case ReduceOp::kMax:
      return hi;
    case ReduceOp::kMean:
      if (IsFloat(d)) return sum / members.size();
      return static_cast<double>(static_cast<int64_t>(sum) / static_cast<int64_t>(members.size()));
  }
  return NAN;
}

double Tolerance(DataType d) {
  return d == DT_HALF ? 2e-3 : d == DT_BFLOAT16 ? 1e-2 : d == DT_FLOAT ? 1e-6 : 0;
}

std::vector<int32_t> Everyone() {
  std::vector<int32_t> all;
  for (int r = 0; r < MpiWorld::size(); ++r) all.push_back(r);
  return all;
}
// Every rank but rank 1: {0} of two ranks, {0, 2} of three.
std::vector<int32_t> Subgroup() {
  std::vector<int32_t> some;
  for (int r = 0; r < MpiWorld::size(); ++r)
    if (r != 1) some.push_back(r);
  return some;
}
bool IsMember(const std::vector<int32_t>& group) {
  return std::find(group.begin(), group.end(), MpiWorld::rank()) != group.end();
}

class MpiCollectives : public ::testing::Test {
 protected:
  void TearDown() override { EXPECT_OK(MpiWorld::Barrier()); }
  Collectives& c() { return MpiWorld::collectives(); }

  // Runs one all-reduce (group empty = every rank) and checks every element.
  void CheckAllReduce(const std::vector<int32_t>& group, const std::vector<int32_t>& members,
                      DataType d, ReduceOp op, bool in_place) {
    std::vector<char> input = Input(d, MpiWorld::rank());
    std::vector<char> output = in_place ? input : std::vector<char>(input.size());
    Outcome done;
    c().AllReduce(group, d, in_place ? output.data() : input.data(), output.data(), kCount, op,
                  nullptr, done.Callback());
    Status s = done.Wait();
    const std::string what = DataTypeString(d) + " op " + std::to_string(static_cast<int>(op)) +
                             (in_place ? " in place" : "") + " over " +
                             std::to_string(members.size()) + " ranks";
    EXPECT_TRUE(s.ok()) << what << ": " << s;
    if (!s.ok()) return;
    for (uint64_t i = 0; i < kCount; ++i) {
      const double expected = Expected(d, op, members, i);
      EXPECT_NEAR(Load(d, output.data(), i), expected, Tolerance(d) * std::abs(expected))
          << what << ", element " << i;
    }
  }
};

TEST_F(MpiCollectives, AllReduceEveryDtypeAndReductionOnEveryRank) {
  for (DataType d : kReducible)
    for (ReduceOp op : kOps) CheckAllReduce({}, Everyone(), d, op, false);
  CheckAllReduce(Everyone(), Everyone(), DT_FLOAT, ReduceOp::kSum, true);
  CheckAllReduce({}, Everyone(), DT_HALF, ReduceOp::kMean, true);
}

TEST_F(MpiCollectives, AllReduceOnASubgroup) {
  const std::vector<int32_t> group = Subgroup();
  if (!IsMember(group)) return;  // rank 1 sits this one out
  for (DataType d : kReducible)
    for (ReduceOp op : kOps) CheckAllReduce(group, group, d, op, false);
  CheckAllReduce(group, group, DT_INT64, ReduceOp::kMax, true);
}

TEST_F(MpiCollectives, BoolHasMinAndMaxOnly) {
  CheckAllReduce({}, Everyone(), DT_BOOL, ReduceOp::kMin, false);
  CheckAllReduce({}, Everyone(), DT_BOOL, ReduceOp::kMax, false);
  std::vector<char> input = Input(DT_BOOL, MpiWorld::rank()), output(input.size());
  Outcome sum, strings;
  c().AllReduce({}, DT_BOOL, input.data(), output.data(), kCount, ReduceOp::kSum, nullptr,
                sum.Callback());
  EXPECT_EQ(sum.Wait().code(), Code::kUnimplemented);
  c().AllReduce({}, DT_STRING, input.data(), output.data(), 1, ReduceOp::kMax, nullptr,
                strings.Callback());
  EXPECT_EQ(strings.Wait().code(), Code::kUnimplemented);
}

// MEAN of floating point divides the sum by the group's size as TensorFlow's final_op Div does,
// to the bit, over the whole range (subnormals, the largest finite values, every mantissa) and
// for any length (the vectorized loop's body and its tail). Rank 0 holds the values and the
// others zeros, so that the sum is exact whatever order MPI adds in.
template <typename T>
void CheckMeanDividesToTheBit(Collectives& c) {
  std::vector<T> values = {std::numeric_limits<T>::denorm_min(),
                           std::numeric_limits<T>::min(),
                           std::numeric_limits<T>::max(),
                           -std::numeric_limits<T>::max(),
                           T(1) / T(3),
                           T(-7),
                           T(0)};
  uint64_t bits = 0x9e3779b97f4a7c15ull;
  while (values.size() < 1003) {
    bits = bits * 6364136223846793005ull + 1442695040888963407ull;
    // Random finite values: any sign and mantissa, exponents from below the subnormals (zeros)
    // to the largest. Not -0: rank 0's -0 plus the others' +0 is +0.
    constexpr int kLow = std::numeric_limits<T>::min_exponent - std::numeric_limits<T>::digits - 2;
    constexpr int kHigh = std::numeric_limits<T>::max_exponent;
    T v = std::ldexp(static_cast<T>(bits >> 11) / static_cast<T>(uint64_t{1} << 53),
                     kLow + static_cast<int>((bits >> 3) % (kHigh - kLow + 1)));
    if ((bits & 1) && v != T(0)) v = -v;
    values.push_back(v);
  }
  std::vector<T> input(values.size(), T(0)), output(values.size());
  if (MpiWorld::rank() == 0) input = values;
  Outcome done;
  c.AllReduce({}, DataTypeOf<T>(), input.data(), output.data(), input.size(), ReduceOp::kMean,
              nullptr, done.Callback());
  ASSERT_OK(done.Wait());
  const T n = static_cast<T>(MpiWorld::size());
  for (size_t i = 0; i < values.size(); ++i) {
    const T want = values[i] / n;
    EXPECT_EQ(std::memcmp(&output[i], &want, sizeof(T)), 0)
        << DataTypeString(DataTypeOf<T>()) << " element " << i << ": " << values[i] << " / " << n
        << " gave " << output[i] << ", want " << want;
  }
}

TEST_F(MpiCollectives, MeanOfFloatsDividesAsTensorFlowToTheBit) {
  CheckMeanDividesToTheBit<float>(c());
  CheckMeanDividesToTheBit<double>(c());
}

TEST_F(MpiCollectives, AllGatherConcatenatesInRankOrder) {
  for (const std::vector<int32_t>& group : {Everyone(), Subgroup()}) {
    if (!IsMember(group)) continue;
    for (DataType d : {DT_FLOAT, DT_INT64, DT_UINT8, DT_HALF, DT_BOOL, DT_COMPLEX64}) {
      const DataType values = d == DT_COMPLEX64 ? DT_FLOAT : d;  // two floats per element
      const uint64_t per = d == DT_COMPLEX64 ? 2 * kCount : kCount;
      std::vector<char> input = Input(values, MpiWorld::rank(), per);
      std::vector<char> output(input.size() * group.size());
      Outcome done;
      c().AllGather(group, d, input.data(), kCount, output.data(), nullptr, done.Callback());
      Status s = done.Wait();
      EXPECT_TRUE(s.ok()) << DataTypeString(d) << ": " << s;
      for (size_t k = 0; k < group.size(); ++k)
        for (uint64_t i = 0; i < per; ++i)
          EXPECT_EQ(Load(values, output.data(), k * per + i), Value(values, group[k], i))
              << DataTypeString(d) << " from rank " << group[k] << ", element " << i;
    }
  }
}

TEST_F(MpiCollectives, BroadcastFromTheLastMember) {
  for (const std::vector<int32_t>& group : {Everyone(), Subgroup()}) {
    if (!IsMember(group)) continue;
    const int root = group.back();
    for (DataType d : {DT_DOUBLE, DT_INT16, DT_BFLOAT16, DT_BOOL}) {
      std::vector<char> buffer =
          MpiWorld::rank() == root ? Input(d, root) : std::vector<char>(kCount * DataTypeSize(d));
      Outcome done;
      c().Broadcast(group, d, buffer.data(), kCount, root, nullptr, done.Callback());
      Status s = done.Wait();
      EXPECT_TRUE(s.ok()) << DataTypeString(d) << ": " << s;
      EXPECT_EQ(buffer, Input(d, root)) << DataTypeString(d) << " from rank " << root;
    }
  }
}

TEST_F(MpiCollectives, AGroupWithoutThisRankIsAnError) {
  const std::vector<int32_t> others = {(MpiWorld::rank() + 1) % MpiWorld::size()};
  std::vector<float> in(1), out(1);
  Outcome done;
  c().AllReduce(others, DT_FLOAT, in.data(), out.data(), 1, ReduceOp::kSum, nullptr,
                done.Callback());
  Status s = done.Wait();
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("not a member"), std::string::npos) << s;
}

// FNV-1a of a buffer: what the ranks compare to see that they hold the same bits.
uint64_t Fingerprint(const std::vector<char>& bytes) {
  uint64_t h = 1469598103934665603ull;
  for (char c : bytes) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  return h;
}

// Several MiB (more chunks than the shared-memory segment has slots, and a tail) of values whose
// sums round: every element is near what the members' values add up to, and every rank holds
// the same bits, whichever path reduced them.
TEST_F(MpiCollectives, AllReduceOfManyChunksGivesEveryRankTheSameBits) {
  const uint64_t count = (uint64_t{3} << 20) / sizeof(float) + 5;
  auto value = [](int rank, uint64_t i) { return std::sin(0.001 * static_cast<double>(i) + rank); };
  struct Case {
    DataType dtype;
    ReduceOp op;
    bool in_place;
  };
  for (const Case& k :
       {Case{DT_FLOAT, ReduceOp::kSum, false}, Case{DT_FLOAT, ReduceOp::kMean, true},
        Case{DT_DOUBLE, ReduceOp::kMax, false}, Case{DT_HALF, ReduceOp::kSum, false},
        Case{DT_INT32, ReduceOp::kSum, true}}) {
    const DataType d = k.dtype;
    const double scale = d == DT_INT32 ? 1000 : 1;
    std::vector<std::vector<char>> inputs(MpiWorld::size());
    for (int r = 0; r < MpiWorld::size(); ++r) {
      inputs[r].resize(count * DataTypeSize(d));
      for (uint64_t i = 0; i < count; ++i) Store(d, inputs[r].data(), i, scale * value(r, i));
    }
    std::vector<char> input = inputs[MpiWorld::rank()];
    std::vector<char> output = k.in_place ? input : std::vector<char>(input.size());
    Outcome done;
    c().AllReduce({}, d, k.in_place ? output.data() : input.data(), output.data(), count, k.op,
                  nullptr, done.Callback());
    const std::string what = DataTypeString(d) + " op " + std::to_string(static_cast<int>(k.op));
    Status s = done.Wait();
    EXPECT_TRUE(s.ok()) << what << ": " << s;
    if (!s.ok()) continue;
    int wrong = 0;
    for (uint64_t i = 0; i < count && wrong < 5; ++i) {
      double sum = 0, hi = -INFINITY;
      for (int r = 0; r < MpiWorld::size(); ++r) {
        sum += Load(d, inputs[r].data(), i);
        hi = std::max(hi, Load(d, inputs[r].data(), i));
      }
      const double want = k.op == ReduceOp::kMax    ? hi
                          : k.op == ReduceOp::kMean ? sum / MpiWorld::size()
                                                    : sum;
      const double got = Load(d, output.data(), i);
      const double tolerance = d == DT_HALF ? 4e-3 : d == DT_FLOAT ? 1e-6 : 0;
      if (std::abs(got - want) > tolerance * std::max(1.0, std::abs(want))) {
        ++wrong;
        ADD_FAILURE() << what << ", element " << i << ": " << got << ", want " << want;
      }
    }
    uint64_t mine = Fingerprint(output);
    std::vector<uint64_t> all(MpiWorld::size());
    Outcome gathered;
    c().AllGather({}, DT_UINT64, &mine, 1, all.data(), nullptr, gathered.Callback());
    ASSERT_OK(gathered.Wait());
    for (int r = 0; r < MpiWorld::size(); ++r)
      EXPECT_EQ(all[r], mine) << what << ": rank " << r << " holds other bits than rank "
                              << MpiWorld::rank();
  }
  // No elements at all is a call like any other.
  Outcome empty;
  c().AllReduce({}, DT_FLOAT, nullptr, nullptr, 0, ReduceOp::kSum, nullptr, empty.Callback());
  EXPECT_OK(empty.Wait());
}

// Members that make different calls (here a count) all fail, each naming a member that differs,
// instead of one waiting for chunks the others never send; the next call works.
TEST(MpiSharedMemory, MembersThatMakeDifferentCallsAllFailAndTheNextCallWorks) {
  if (!MpiWorld::shared_memory()) GTEST_SKIP() << "MPI's all-reduce runs: its behaviour";
  Collectives& c = MpiWorld::collectives();
  const uint64_t count = MpiWorld::rank() == 0 ? 5 : 7;
  std::vector<float> input(count, 1), output(count);
  Outcome done;
  c.AllReduce({}, DT_FLOAT, input.data(), output.data(), count, ReduceOp::kSum, nullptr,
              done.Callback());
  Status s = done.Wait();
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("every member must make the same call"), std::string::npos) << s;
  // A rank sees the difference on its host, naming the rank; on another host (hosts of
  // --ranks-per-host ranks), the comparison between hosts finds it.
  const int per_host = MpiWorld::ranks_per_host();
  const bool with_rank_0 = per_host == 0 || MpiWorld::rank() < per_host;
  const std::string other = MpiWorld::rank() == 0 ? "task:1 (rank 1) reduces 7 float (sum)"
                            : with_rank_0         ? "task:0 (rank 0) reduces 5 float (sum)"
                                                  : "a rank on another host makes another call "
                                                    "than this rank's 7 float (sum)";
  EXPECT_NE(s.message().find(other), std::string::npos) << s;
  std::vector<float> one = {static_cast<float>(MpiWorld::rank())}, sum(1);
  Outcome next;
  c.AllReduce({}, DT_FLOAT, one.data(), sum.data(), 1, ReduceOp::kSum, nullptr, next.Callback());
  ASSERT_OK(next.Wait());
  const int n = MpiWorld::size();
  EXPECT_EQ(sum[0], static_cast<float>(n * (n - 1) / 2));
  EXPECT_OK(MpiWorld::Barrier());
}

TEST(MpiSharedMemory, TheOptionTakesAutoOnOrOffAndOnNeedsBlockingCollectives) {
  Status s = MpiWorld::CreateAnother({{"shared_memory", "sometimes"}});
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("shared_memory must be auto, on or off, not 'sometimes'"),
            std::string::npos)
      << s;
  for (const auto& other : std::vector<std::pair<std::string, std::string>>{
           {"funnel", "true"}, {"collectives", "progress"}}) {
    s = MpiWorld::CreateAnother({{"shared_memory", "on"}, other});
    EXPECT_EQ(s.code(), Code::kInvalidArgument) << other.first << ": " << s;
    EXPECT_NE(s.message().find("shared_memory: on needs blocking collectives"), std::string::npos)
        << s;
  }
  s = MpiWorld::CreateAnother({{"shared_memory_ranks_per_host", "3G"}});
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("shared_memory_ranks_per_host must be 0 (ask MPI) to 2147483647 "
                             "ranks, not 3221225472"),
            std::string::npos)
      << s;
  // Valid options get as far as the rule of one transport per process.
  for (const char* mode : {"auto", "on", "off"}) {
    s = MpiWorld::CreateAnother({{"shared_memory", mode}});
    EXPECT_EQ(s.code(), Code::kFailedPrecondition) << mode << ": " << s;
    EXPECT_NE(s.message().find("one per process"), std::string::npos) << s;
  }
}

// --peer-dies (tests/transport/peer_dies.sh, under mpirun --enable-recovery): after one
// all-reduce together, rank 1 kills itself, and rank 0's next all-reduce, which waits for it,
// fails within 5 s with UNAVAILABLE naming it, instead of waiting for ever.
TEST(MpiSharedMemory, APeerThatDiesFailsTheAllReduceNamingIt) {
  if (!g_peer_dies || !MpiWorld::shared_memory()) GTEST_SKIP() << "needs --peer-dies";
  Collectives& c = MpiWorld::collectives();
  std::vector<float> input(1 << 20, 1.0f), output(input.size());
  Outcome first;
  c.AllReduce({}, DT_FLOAT, input.data(), output.data(), input.size(), ReduceOp::kSum, nullptr,
              first.Callback());
  ASSERT_OK(first.Wait());
  if (MpiWorld::rank() == 1) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    std::fflush(stdout);
    std::raise(SIGKILL);
  }
  if (MpiWorld::rank() != 0) return;
  const auto start = std::chrono::steady_clock::now();
  Outcome second;
  c.AllReduce({}, DT_FLOAT, input.data(), output.data(), input.size(), ReduceOp::kSum, nullptr,
              second.Callback());
  Status s = second.Wait(std::chrono::milliseconds(20000));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(s.code(), Code::kUnavailable) << s;
  EXPECT_NE(s.message().find("task:1 (rank 1) ended"), std::string::npos) << s;
  EXPECT_LT(seconds, 5.0);
  std::printf("rank 0 saw rank 1 die within %.2f s: %s\n", seconds, s.ToString().c_str());
  std::fflush(stdout);
  // The job cannot end normally with a dead rank: the test's outcome is what it printed.
  std::_Exit(::testing::Test::HasFailure() ? 1 : 0);
}

}  // namespace
}  // namespace cfx::test
