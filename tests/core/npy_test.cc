// .npy reading and writing: files written by NumPy (tests/fixtures/npy, made by
// make_npy_fixtures.py), byte-identical writes, round trips of every dtype, and errors.
#include "conflux/npy.h"

#include <gtest/gtest.h>

#include <complex>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "kernel_test_util.h"

namespace cfx {
namespace {

using test::ReadFileBytes;

using test::MakeScalar;
using test::MakeTensor;
using test::Values;

std::string NpyFixture(const std::string& name) {
  return std::string(CONFLUX_SOURCE_DIR) + "/tests/fixtures/npy/" + name;
}

std::string Hex(const Tensor& t) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  const auto* p = static_cast<const unsigned char*>(t.raw_data());
  for (size_t i = 0; i < t.TotalBytes(); ++i) {
    out += kDigits[p[i] >> 4];
    out += kDigits[p[i] & 15];
  }
  return out.empty() ? "-" : out;
}

std::string Dims(const Tensor& t) {
  if (t.rank() == 0) return "-";
  std::string out;
  for (int i = 0; i < t.rank(); ++i) out += (i ? "," : "") + std::to_string(t.dim(i));
  return out;
}

struct Expected {
  std::string name, dtype, dims, hex;
};

std::vector<Expected> ExpectedFixtures() {
  std::ifstream in(NpyFixture("expected.txt"));
  EXPECT_TRUE(in.is_open());
  std::vector<Expected> out;
  Expected e;
  while (in >> e.name >> e.dtype >> e.dims >> e.hex) out.push_back(e);
  return out;
}

// A .npy file with the given header dict text, padded the way numpy pads it.
std::string MakeNpy(const std::string& dict, const std::string& payload, int major = 1) {
  std::string header = dict;
  const size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  for (size_t i = 0; i < prefix - 8; ++i)
    out += static_cast<char>((header.size() >> (8 * i)) & 255);
  return out + header + payload;
}

void ExpectInvalid(std::string_view data, const std::string& what) {
  StatusOr<Tensor> t = ParseNpy(data, "test.npy");
  ASSERT_FALSE(t.ok()) << what;
  EXPECT_EQ(t.status().code(), Code::kInvalidArgument) << t.status();
  EXPECT_NE(t.status().message().find("test.npy: "), std::string::npos) << t.status();
  EXPECT_NE(t.status().message().find(what), std::string::npos) << t.status();
}

TEST(NpyTest, ReadsEveryFileNumpyWrote) {
  std::vector<Expected> fixtures = ExpectedFixtures();
  ASSERT_GE(fixtures.size(), 25u);
  for (const Expected& e : fixtures) {
    SCOPED_TRACE(e.name);
    StatusOr<Tensor> t = ReadNpy(NpyFixture(e.name + ".npy"));
    ASSERT_OK(t.status());
    EXPECT_EQ(DataTypeString(t->dtype()), e.dtype);
    EXPECT_EQ(Dims(*t), e.dims);
    EXPECT_EQ(Hex(*t), e.hex);
  }
}

TEST(NpyTest, ValuesOfNumpyFiles) {
  Tensor f = ReadNpy(NpyFixture("float32.npy")).value();
  ASSERT_EQ(f.shape(), TensorShape({2, 3}));
  EXPECT_EQ(f.at<float>(0), 0.5f);
  EXPECT_EQ(f.at<float>(1), -1.25f);
  EXPECT_EQ(f.at<float>(2), 3000.0f);
  EXPECT_TRUE(std::isinf(f.at<float>(3)));
  EXPECT_TRUE(std::signbit(f.at<float>(4)));
  EXPECT_FLOAT_EQ(f.at<float>(5), 1.0f / 3);

  Tensor be = ReadNpy(NpyFixture("be_int32.npy")).value();
  EXPECT_EQ(Values<int32_t>(be), (std::vector<int32_t>{1, -2, 0x01020304}));
  Tensor be64 = ReadNpy(NpyFixture("be_float64.npy")).value();
  EXPECT_EQ(be64.at<double>(0), 3.141592653589793);
  EXPECT_EQ(be64.at<double>(1), -1e300);
  Tensor bec = ReadNpy(NpyFixture("be_complex64.npy")).value();
  EXPECT_EQ(bec.at<std::complex<float>>(0), std::complex<float>(1, 2));
  EXPECT_EQ(bec.at<std::complex<float>>(1), std::complex<float>(0, -3.5f));
  Tensor half = ReadNpy(NpyFixture("be_float16.npy")).value();
  EXPECT_EQ(half.at<uint16_t>(0), 0x3e00);  // 1.5
  EXPECT_EQ(half.at<uint16_t>(1), 0xc000);  // -2

  Tensor scalar = ReadNpy(NpyFixture("scalar_float64.npy")).value();
  EXPECT_EQ(scalar.rank(), 0);
  EXPECT_EQ(scalar.at<double>(0), 2.75);
  Tensor b = ReadNpy(NpyFixture("bool.npy")).value();
  EXPECT_EQ(Values<bool>(b), (std::vector<bool>{true, false, true, true, false}));
  Tensor empty = ReadNpy(NpyFixture("empty_2x0x4_int64.npy")).value();
  EXPECT_EQ(empty.shape(), TensorShape({2, 0, 4}));
  EXPECT_EQ(empty.num_elements(), 0);
  Tensor v2 = ReadNpy(NpyFixture("v2_float32.npy")).value();
  EXPECT_EQ(Values<float>(v2), (std::vector<float>{0, 0.25, 0.5, 0.75, 1, 1.25}));
  Tensor v3 = ReadNpy(NpyFixture("v3_int32.npy")).value();
  EXPECT_EQ(Values<int32_t>(v3), (std::vector<int32_t>{-7, 8, 9}));
}

// A written file is byte for byte what numpy.save wrote for the same array.
TEST(NpyTest, WritesWhatNumpyWrites) {
  int compared = 0;
  for (const Expected& e : ExpectedFixtures()) {
    if (e.name.starts_with("be_") || e.name.starts_with("v2_") || e.name.starts_with("v3_"))
      continue;
    SCOPED_TRACE(e.name);
    std::string numpy = ReadFileBytes(NpyFixture(e.name + ".npy"));
    StatusOr<Tensor> t = ParseNpy(numpy);
    ASSERT_OK(t.status());
    StatusOr<std::string> ours = SerializeNpy(*t);
    ASSERT_OK(ours.status());
    EXPECT_EQ(*ours, numpy);
    ++compared;
  }
  EXPECT_GE(compared, 15);
}

TEST(NpyTest, FileRoundTripOfEveryDtype) {
  std::vector<Tensor> tensors = {
      MakeTensor<float>({2, 2}, {1.5f, -2, 0, 1e-7f}),
      MakeTensor<double>({3}, {1, -1e300, 0.1}),
      MakeTensor<int32_t>({1, 2}, {-5, 1 << 30}),
      MakeTensor<int64_t>({2}, {-1, int64_t{1} << 40}),
      MakeTensor<int16_t>({2}, {-300, 300}),
      MakeTensor<int8_t>({2}, {-128, 127}),
      MakeTensor<uint8_t>({3}, {0, 128, 255}),
      MakeTensor<uint16_t>({1}, {65535}),
      MakeTensor<bool>({2, 1}, {true, false}),
      MakeScalar<float>(7.0f),
      Tensor(DT_FLOAT, TensorShape({0, 5})),
  };
  Tensor u32(DT_UINT32, TensorShape({2}));
  u32.at<uint32_t>(0) = 4000000000u;
  u32.at<uint32_t>(1) = 3;
  Tensor u64(DT_UINT64, TensorShape({1}));
  u64.at<uint64_t>(0) = ~uint64_t{0};
  Tensor half(DT_HALF, TensorShape({2}));
  half.at<uint16_t>(0) = 0x3c00;
  half.at<uint16_t>(1) = 0xfc00;
  Tensor c64(DT_COMPLEX64, TensorShape({1}));
  c64.at<std::complex<float>>(0) = {1, -2};
  Tensor c128(DT_COMPLEX128, TensorShape({1, 1}));
  c128.at<std::complex<double>>(0) = {0.25, 1e100};
  for (const Tensor& t : {u32, u64, half, c64, c128}) tensors.push_back(t);

  const std::string path = ::testing::TempDir() + "/npy_round_trip.npy";
  for (const Tensor& t : tensors) {
    SCOPED_TRACE(t.DebugString());
    ASSERT_OK(WriteNpy(path, t));
    StatusOr<Tensor> back = ReadNpy(path);
    ASSERT_OK(back.status());
    EXPECT_TRUE(back->Equals(t)) << back->DebugString();
    // numpy requires the payload to start on a 64-byte boundary.
    std::string bytes = ReadFileBytes(path);
    EXPECT_EQ((bytes.size() - t.TotalBytes()) % 64, 0u);
    EXPECT_EQ(bytes[bytes.size() - t.TotalBytes() - 1], '\n');
  }
  std::remove(path.c_str());
}

TEST(NpyTest, HeaderVariantsNumpyAccepts) {
  const std::string four(4, '\0');
  // Double quotes, keys in another order, no trailing comma, '=' and '|' orders, '?' for bool.
  Tensor t = ParseNpy(MakeNpy(R"({"shape": (2,), "fortran_order": False, "descr": "=i2"})",
                              std::string("\x01\x00\xff\xff", 4)))
                 .value();
  EXPECT_EQ(Values<int16_t>(t), (std::vector<int16_t>{1, -1}));
  t = ParseNpy(MakeNpy("{'descr': '|?', 'fortran_order': False, 'shape': (1L, 2L), }",
                       std::string("\x00\x02", 2)))
          .value();
  EXPECT_EQ(t.shape(), TensorShape({1, 2}));
  // Any non-zero byte is True, and reads back as the bool true.
  EXPECT_EQ(Values<bool>(t), (std::vector<bool>{false, true}));
  t = ParseNpy(MakeNpy("{'descr':'<u4','fortran_order':False,'shape':()}", four, 2)).value();
  EXPECT_EQ(t.dtype(), DT_UINT32);
  EXPECT_EQ(t.rank(), 0);
}

TEST(NpyTest, BadMagicAndVersion) {
  ExpectInvalid("", "bad magic");
  ExpectInvalid("PK\x03\x04 a zip file", "bad magic");
  ExpectInvalid(std::string("\x93NUMPX\x01\x00", 8), "bad magic");
  std::string v4 = MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': ()}", "abcd");
  v4[6] = 4;
  ExpectInvalid(v4, "unsupported .npy format version 4.0");
}

TEST(NpyTest, TruncatedHeader) {
  ExpectInvalid(std::string("\x93NUMPY\x01\x00\x76", 9), "truncated header");
  ExpectInvalid(std::string("\x93NUMPY\x02\x00\x76\x00", 10), "truncated header");
  std::string file = MakeNpy("{'descr': '<f4', 'fortran_order': False, 'shape': ()}", "abcd");
  ExpectInvalid(file.substr(0, 40), "truncated header");
}

TEST(NpyTest, MalformedHeaderDict) {
  const std::string p(4, '\0');
  for (const char* dict : {
           "['descr', '<f4']",
           "{'descr': '<f4', 'fortran_order': False}",
           "{'descr': '<f4', 'shape': ()}",
           "{'fortran_order': False, 'shape': ()}",
           "{'descr': '<f4' 'fortran_order': False, 'shape': ()}",
           "{'descr': '<f4', 'fortran_order': false, 'shape': ()}",
           "{'descr': '<f4', 'fortran_order': False, 'shape': (1)}",
           "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}",
           "{'descr': '<f4', 'fortran_order': False, 'shape': [1]}",
           "{'descr': '<f4', 'fortran_order': False, 'shape': (), 'extra': 1}",
           "{'descr': '<f4, 'fortran_order': False, 'shape': ()}",
           "{'descr': '<f4', 'fortran_order': False, 'shape': ()} x",
           "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}",
       }) {
    ExpectInvalid(MakeNpy(dict, p), "malformed header dict");
  }
}

TEST(NpyTest, UnsupportedDescr) {
  for (const char* descr : {"<f3", "<i16", "<x4", "<", "", "<M8[s]"}) {
    SCOPED_TRACE(descr);
    ExpectInvalid(
        MakeNpy(std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': ()}",
                "abcdefgh"),
        "unsupported descr");
  }
  StatusOr<Tensor> t = ReadNpy(NpyFixture("structured.npy"));
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), Code::kInvalidArgument);
  EXPECT_NE(t.status().message().find(NpyFixture("structured.npy") + ": unsupported descr"),
            std::string::npos)
      << t.status();
}

std::vector<std::string> Strings(const Tensor& t) {
  std::vector<std::string> out;
  for (int64_t i = 0; i < t.num_elements(); ++i) out.push_back(t.at<std::string>(i));
  return out;
}

TEST(NpyTest, FixedWidthStringArraysAreStringTensors) {
  struct Case {
    const char* file;
    TensorShape shape;
    std::vector<std::string> values;
  };
  const std::vector<Case> cases = {
      {"unicode_str.npy", TensorShape({2}), {"ab", "c"}},
      {"unicode_text.npy", TensorShape({2, 2}),
       {"h\xc3\xa9llo", "\xe6\x97\xa5\xe6\x9c\xac", "", "\xf0\x9f\x98\x80"}},
      {"be_unicode.npy", TensorShape({2}), {"xyz", "q"}},
      {"bytes_str.npy", TensorShape({3}), {"ab", "", std::string("c\0d", 3)}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    StatusOr<Tensor> t = ReadNpy(NpyFixture(c.file));
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(t->dtype(), DT_STRING);
    EXPECT_EQ(t->shape(), c.shape);
    EXPECT_EQ(Strings(*t), c.values);
  }
  // Written back as bytes ('S', as wide as the longest element): numpy's own file for them.
  StatusOr<Tensor> bytes = ReadNpy(NpyFixture("bytes_str.npy"));
  ASSERT_TRUE(bytes.ok());
  StatusOr<std::string> written = SerializeNpy(*bytes);
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ(*written, ReadFileBytes(NpyFixture("bytes_str.npy")));
}

TEST(NpyTest, ObjectArraysSayHowToConvertThem) {
  StatusOr<Tensor> t = ReadNpy(NpyFixture("object_str.npy"));
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), Code::kInvalidArgument);
  EXPECT_NE(t.status().message().find("object arrays"), std::string::npos) << t.status();
  EXPECT_NE(t.status().message().find("dtype=bytes"), std::string::npos) << t.status();
}

TEST(NpyTest, FortranOrderIsUnimplemented) {
  StatusOr<Tensor> t = ReadNpy(NpyFixture("fortran_order.npy"));
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), Code::kUnimplemented);
  EXPECT_NE(t.status().message().find("fortran_order.npy: fortran_order True"), std::string::npos)
      << t.status();
}

TEST(NpyTest, PayloadSizeMismatch) {
  std::string good = ReadFileBytes(NpyFixture("int32.npy"));
  ASSERT_TRUE(ParseNpy(good).ok());
  ExpectInvalid(good.substr(0, good.size() - 1),
                "payload size mismatch: 23 bytes of data, "
                "expected 24 for <i4 with shape [2,3]");
  ExpectInvalid(good + "x", "payload size mismatch");
  ExpectInvalid(MakeNpy("{'descr': '<f8', 'fortran_order': False, 'shape': (0, 4)}", "x"),
                "payload size mismatch");
  // A shape whose byte size overflows is refused before anything is allocated.
  ExpectInvalid(
      MakeNpy("{'descr': '<c16', 'fortran_order': False, 'shape': (4611686018427387904,)}", ""),
      "too large");
}

TEST(NpyTest, FileErrorsNameTheFile) {
  const std::string missing = ::testing::TempDir() + "/no_such_file.npy";
  StatusOr<Tensor> t = ReadNpy(missing);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), Code::kNotFound);
  EXPECT_NE(t.status().message().find(missing), std::string::npos);
  Status s = WriteNpy(::testing::TempDir() + "/no_such_dir/x.npy", MakeScalar<float>(1));
  EXPECT_EQ(s.code(), Code::kNotFound) << s;
  EXPECT_NE(s.message().find("no_such_dir/x.npy"), std::string::npos);
}

TEST(NpyTest, DtypesWithoutNumpyCodeAreRefused) {
  Tensor bf16(DT_BFLOAT16, TensorShape({2}));
  StatusOr<std::string> s = SerializeNpy(bf16);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Code::kUnimplemented);
  EXPECT_NE(s.status().message().find("bfloat16"), std::string::npos);
  Status w = WriteNpy(::testing::TempDir() + "/bf16.npy", bf16);
  EXPECT_EQ(w.code(), Code::kUnimplemented);
  EXPECT_NE(w.message().find("bf16.npy: "), std::string::npos);
  EXPECT_EQ(SerializeNpy(Tensor(DT_RESOURCE, TensorShape({1}))).status().code(),
            Code::kUnimplemented);
  EXPECT_EQ(SerializeNpy(Tensor()).status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace cfx
