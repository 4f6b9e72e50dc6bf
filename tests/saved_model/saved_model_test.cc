// SavedModels that TensorFlow 2.21 exported (tests/fixtures/savedmodel/: Keras 3 model.export and
// tf.saved_model.save of Keras models, a tf.Module with two signatures and a while loop with a
// cond, a text model with lookup tables initialized from an asset) load, restore their
// variables, run their init ops and give TensorFlow's outputs for every signature; bad input
// (unknown tags, signatures and keys, wrong dtypes and shapes, damaged files) gets clear errors.
#include "conflux/saved_model.h"

#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "checkpoint/tensor_bundle.h"
#include "conflux/npy.h"
#include "kernel_test_util.h"
#include "proto/saved_model.pb.h"
#include "saved_model/describe.h"
#include "saved_model/saved_model_proto.h"

namespace cfx {
namespace {

namespace fs = std::filesystem;

std::string Fixture(const std::string& rel) {
  return std::string(CONFLUX_SOURCE_DIR) + "/tests/fixtures/savedmodel/" + rel;
}

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string x; std::getline(in, x, ',');) out.push_back(x);
  return out;
}

template <typename T>
void ExpectErr(const StatusOr<T>& result, Code code, const std::string& substring) {
  ASSERT_FALSE(result.ok()) << "expected an error containing: " << substring;
  EXPECT_EQ(result.status().code(), code) << result.status();
  EXPECT_NE(result.status().message().find(substring), std::string::npos) << result.status();
}

// Float outputs within TensorFlow's rounding (kernels may sum in another order); everything
// else exactly.
void ExpectClose(const Tensor& expected, const Tensor& actual, const std::string& what) {
  ASSERT_EQ(expected.dtype(), actual.dtype()) << what;
  ASSERT_EQ(expected.shape(), actual.shape()) << what;
  for (int64_t i = 0; i < actual.num_elements(); ++i) {
    switch (actual.dtype()) {
      case DT_FLOAT: {
        const float e = expected.data<float>()[i], a = actual.data<float>()[i];
        EXPECT_NEAR(a, e, 1e-5 + 1e-5 * std::fabs(e)) << what << " element " << i;
        break;
      }
      case DT_STRING:
        EXPECT_EQ(expected.at<std::string>(i), actual.at<std::string>(i)) << what << " element " << i;
        break;
      case DT_INT32:
        EXPECT_EQ(expected.data<int32_t>()[i], actual.data<int32_t>()[i]) << what << " element " << i;
        break;
      case DT_INT64:
        EXPECT_EQ(expected.data<int64_t>()[i], actual.data<int64_t>()[i]) << what << " element " << i;
        break;
      default:
        FAIL() << what << ": dtype " << DataTypeString(actual.dtype()) << " not compared";
    }
  }
}

// Every case of `<dir>.io/cases.txt` ("case signature inputs outputs"), run and compared.
void ExpectTensorFlowsOutputs(const std::string& dir) {
  auto model = SavedModel::Load(&test::TestRuntime(), Fixture(dir));
  ASSERT_TRUE(model.ok()) << model.status();
  std::ifstream cases(Fixture(dir + ".io/cases.txt"));
  std::string line;
  int n = 0;
  while (std::getline(cases, line)) {
    std::istringstream f(line);
    std::string c, sig, ins, outs;
    f >> c >> sig >> ins >> outs;
    SCOPED_TRACE(dir + " case " + c + " signature " + sig);
    const std::string io = Fixture(dir + ".io/" + (c == "." ? "" : c + "/"));
    std::map<std::string, Tensor> inputs;
    for (const std::string& k : Split(ins)) {
      auto t = ReadNpy(io + k + ".npy");
      ASSERT_TRUE(t.ok()) << t.status();
      inputs.emplace(k, *t);
    }
    auto out = (*model)->Run(sig, inputs);
    ASSERT_TRUE(out.ok()) << out.status();
    for (const std::string& k : Split(outs)) {
      auto expected = ReadNpy(io + sig + "/" + k + ".npy");
      ASSERT_TRUE(expected.ok()) << expected.status();
      ASSERT_TRUE(out->count(k)) << "output " << k;
      ExpectClose(*expected, out->at(k), "output " + k);
    }
    ++n;
  }
  EXPECT_GT(n, 0);
}

TEST(SavedModel, KerasExportOfAnMlpGivesTensorFlowsOutputs) { ExpectTensorFlowsOutputs("keras_mlp"); }
// tf.saved_model.save of a Keras 3 model: its serving function reads variables ("conv/kernel")
// other than those its restore function assigns ("Variable_7"), which only the object graph
// joins. TensorFlow's own graph loader fails on it ("Could not find variable bn/moving_mean").
TEST(SavedModel, SavedKerasCnnGivesTensorFlowsOutputs) { ExpectTensorFlowsOutputs("keras_cnn"); }
TEST(SavedModel, ModuleWithTwoSignaturesAndALoopGivesTensorFlowsOutputs) {
  ExpectTensorFlowsOutputs("module_two_sigs");
}
TEST(SavedModel, KerasEmbeddingModelGivesTensorFlowsOutputs) {
  ExpectTensorFlowsOutputs("keras_mixed");
}
TEST(SavedModel, TextModelWithVocabularyAssetAndTablesGivesTensorFlowsOutputs) {
  ExpectTensorFlowsOutputs("text_vocab");
}

TEST(SavedModel, SignaturesListTheirKeysDtypesAndShapes) {
  auto model = SavedModel::Load(&test::TestRuntime(), Fixture("module_two_sigs"));
  ASSERT_TRUE(model.ok()) << model.status();
  const auto& sigs = (*model)->signatures();
  ASSERT_EQ(sigs.size(), 2u);  // the init op's entry is not a signature
  const Signature& loop = sigs.at("loop");
  ASSERT_EQ(loop.inputs.size(), 2u);
  EXPECT_EQ(loop.inputs.at("n").dtype, DT_INT32);
  EXPECT_EQ(loop.inputs.at("x").shape.dims(), (std::vector<int64_t>{3}));
  EXPECT_EQ(loop.outputs.at("steps").dtype, DT_INT32);
  EXPECT_EQ(sigs.at("scale").inputs.at("x").shape.dims(), (std::vector<int64_t>{-1, 3}));
}

TEST(SavedModel, BadRequestsNameWhatWasExpected) {
  Runtime* rt = &test::TestRuntime();
  ExpectErr(SavedModel::Load(rt, Fixture("keras_mlp"), {"train"}), Code::kNotFound,
                    "has no MetaGraphDef with tags {train}; it has {serve}");
  ExpectErr(SavedModel::Load(rt, Fixture("no_such_model")), Code::kNotFound,
                    "neither saved_model.pb nor saved_model.pbtxt");
  auto model = SavedModel::Load(rt, Fixture("module_two_sigs"));
  ASSERT_TRUE(model.ok()) << model.status();
  const SavedModel& m = **model;
  Tensor x = test::MakeTensor<float>({1, 3}, {1, 2, 3});
  ExpectErr(m.Run("predict", {{"x", x}}), Code::kNotFound,
                    "no signature 'predict'; its signatures are 'loop', 'scale'");
  ExpectErr(m.Run("scale", {{"y", x}}), Code::kInvalidArgument,
                    "signature 'scale' has no input 'y'; its inputs are 'x'");
  ExpectErr(m.Run("scale", {{"x", test::MakeTensor<int32_t>({1, 3}, {1, 2, 3})}}),
                    Code::kInvalidArgument, "input 'x' takes float, got int32");
  ExpectErr(m.Run("scale", {{"x", test::MakeTensor<float>({1, 2}, {1, 2})}}),
                    Code::kInvalidArgument, "input 'x' takes shape [?,3], got [1,2]");
  ExpectErr(m.Run("loop", {{"x", test::MakeVector<float>({1, 2, 3})}}),
                    Code::kInvalidArgument, "needs input 'n'");
}

// A damaged saved_model.pb or a damaged variables file is an error naming the file.
TEST(SavedModel, DamagedFilesAreClearErrors) {
  const fs::path dir = fs::path(::testing::TempDir()) / "damaged_saved_model";
  fs::remove_all(dir);
  fs::copy(Fixture("keras_mlp"), dir, fs::copy_options::recursive);
  const fs::path pb = dir / "saved_model.pb";
  std::string bytes;
  {
    std::ifstream in(pb, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  {
    std::ofstream out(pb, std::ios::binary | std::ios::trunc);
    out << bytes.substr(0, bytes.size() / 3);
  }
  auto truncated = SavedModel::Load(&test::TestRuntime(), dir.string());
  ASSERT_FALSE(truncated.ok());
  EXPECT_NE(truncated.status().message().find(pb.string()), std::string::npos) << truncated.status();
  {
    std::ofstream out(pb, std::ios::binary | std::ios::trunc);
    out << bytes;
  }
  const fs::path data = dir / "variables" / "variables.data-00000-of-00001";
  std::string d;
  {
    std::ifstream in(data, std::ios::binary);
    d.assign(std::istreambuf_iterator<char>(in), {});
  }
  d[d.size() / 2] = static_cast<char>(d[d.size() / 2] ^ 0x40);
  {
    std::ofstream out(data, std::ios::binary | std::ios::trunc);
    out << d;
  }
  auto corrupt = SavedModel::Load(&test::TestRuntime(), dir.string());
  ASSERT_FALSE(corrupt.ok());
  EXPECT_EQ(corrupt.status().code(), Code::kDataLoss) << corrupt.status();
  EXPECT_NE(corrupt.status().message().find("checksum mismatch"), std::string::npos)
      << corrupt.status();
  fs::remove_all(dir);
}

std::string ReadText(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// `conflux show DIR` prints the signatures as saved_model_cli show --all does: TensorFlow's own
// output (show.txt, up to its op list) begins ours, for every fixture.
TEST(SavedModel, ShowPrintsTheSignaturesAsSavedModelCliDoes) {
  for (const char* dir : {"keras_mlp", "keras_cnn", "module_two_sigs", "text_vocab", "keras_mixed"}) {
    SCOPED_TRACE(dir);
    std::string tf = ReadText(Fixture(std::string(dir) + ".io/show.txt"));
    const size_t start = tf.find("MetaGraphDef with tag-set");
    const size_t end = tf.find("The MetaGraph with tag set");
    ASSERT_NE(start, std::string::npos);
    ASSERT_NE(end, std::string::npos);
    tf = tf.substr(start, end - start);
    auto ours = internal::DescribeSavedModel(Fixture(dir));
    ASSERT_TRUE(ours.ok()) << ours.status();
    EXPECT_EQ(ours->substr(0, tf.size()), tf);
    EXPECT_NE(ours->find("Variables ("), std::string::npos) << *ours;
  }
}

// A SavedModel written as protobuf text (saved_model.pbtxt only) shows and serves as the binary.
TEST(SavedModel, TextFormatSavedModelShowsAndRunsAsTheBinary) {
  const fs::path dir = fs::path(::testing::TempDir()) / "text_saved_model";
  fs::remove_all(dir);
  fs::copy(Fixture("module_two_sigs"), dir, fs::copy_options::recursive);
  auto proto = internal::ReadSavedModelProto(dir.string());
  ASSERT_TRUE(proto.ok()) << proto.status();
  std::string text;
  ASSERT_TRUE(google::protobuf::TextFormat::PrintToString(*proto, &text));
  fs::remove(dir / "saved_model.pb");
  {
    std::ofstream out(dir / "saved_model.pbtxt");
    out << text;
  }
  auto shown = internal::DescribeSavedModel(dir.string());
  auto expected = internal::DescribeSavedModel(Fixture("module_two_sigs"));
  ASSERT_TRUE(shown.ok()) << shown.status();
  ASSERT_TRUE(expected.ok()) << expected.status();
  EXPECT_EQ(shown->substr(0, shown->find("Variables (")),
            expected->substr(0, expected->find("Variables (")));
  auto model = SavedModel::Load(&test::TestRuntime(), dir.string());
  ASSERT_TRUE(model.ok()) << model.status();
  auto x = ReadNpy(Fixture("module_two_sigs.io/scale/x.npy"));
  auto y = ReadNpy(Fixture("module_two_sigs.io/scale/scale/y.npy"));
  ASSERT_TRUE(x.ok() && y.ok());
  auto out = (*model)->Run("scale", {{"x", *x}});
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectClose(*y, out->at("y"), "y");
  // Damaged text is an error naming the file.
  {
    std::ofstream out_file(dir / "saved_model.pbtxt");
    out_file << text.substr(0, text.size() / 2) << " }}}";
  }
  auto damaged = SavedModel::Load(&test::TestRuntime(), dir.string());
  ASSERT_FALSE(damaged.ok());
  EXPECT_NE(damaged.status().message().find("saved_model.pbtxt"), std::string::npos)
      << damaged.status();
  // ... and says where the text went wrong ("protobuf text format: LINE:COLUMN: ...").
  const std::string why = damaged.status().message();
  const size_t at = why.find("protobuf text format: ");
  ASSERT_NE(at, std::string::npos) << why;
  EXPECT_TRUE(std::isdigit(static_cast<unsigned char>(why[at + 22]))) << why;
  fs::remove_all(dir);
}

// The export's own save graph (saver_filename, StaticRegexFullMatch, StringJoin,
// ShardedFilename, SaveV2, MergeV2Checkpoints) writes a tensor bundle of the model's variables,
// the values a load restored, which a second load restores again.
TEST(SavedModel, TheExportsSaveGraphWritesItsVariables) {
  auto proto = internal::ReadSavedModelProto(Fixture("module_two_sigs"));
  ASSERT_TRUE(proto.ok()) << proto.status();
  const auto& saver = proto->meta_graphs(0).saver_def();
  auto model = SavedModel::Load(&test::TestRuntime(), Fixture("module_two_sigs"));
  ASSERT_TRUE(model.ok()) << model.status();
  const fs::path dir = fs::path(::testing::TempDir()) / "saved_model_save_graph";
  fs::remove_all(dir);
  fs::create_directories(dir / "variables");
  const std::string prefix = (dir / "variables" / "variables").string();
  std::vector<Tensor> out;
  ASSERT_OK((*model)->session()->Run(
      RunOptions(), {{saver.filename_tensor_name(), Tensor::Scalar<std::string>(DT_STRING, prefix)}},
      {saver.save_tensor_name()}, {}, &out, nullptr));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].at<std::string>(0), prefix);  // the save op returns the prefix it wrote
  auto ours = internal::bundle::BundleReader::Open(prefix);
  auto theirs = internal::bundle::BundleReader::Open(Fixture("module_two_sigs/variables/variables"));
  ASSERT_TRUE(ours.ok()) << ours.status();
  ASSERT_TRUE(theirs.ok()) << theirs.status();
  std::vector<std::string> names;
  for (const auto& v : (*theirs)->List()) names.push_back(v.name);
  ASSERT_FALSE(names.empty());
  for (const std::string& name : names) {
    auto a = (*theirs)->Read(name);
    auto b = (*ours)->Read(name);
    ASSERT_TRUE(a.ok() && b.ok()) << name << ": " << (b.ok() ? a.status() : b.status());
    if (name == "_CHECKPOINTABLE_OBJECT_GRAPH") continue;  // the same graph, written anew
    EXPECT_TRUE(a->Equals(*b)) << name << ": " << a->DebugString() << " vs " << b->DebugString();
  }
  // The saved folder (saved_model.pb beside the new variables) loads and serves as the original.
  fs::copy_file(Fixture("module_two_sigs/saved_model.pb"), dir / "saved_model.pb");
  auto again = SavedModel::Load(&test::TestRuntime(), dir.string());
  ASSERT_TRUE(again.ok()) << again.status();
  auto x = ReadNpy(Fixture("module_two_sigs.io/scale/x.npy"));
  auto y = ReadNpy(Fixture("module_two_sigs.io/scale/scale/y.npy"));
  ASSERT_TRUE(x.ok() && y.ok());
  auto result = (*again)->Run("scale", {{"x", *x}});
  ASSERT_TRUE(result.ok()) << result.status();
  ExpectClose(*y, result->at("y"), "y");
  fs::remove_all(dir);
}

// Two models in one runtime keep their own variables; many threads serve one model at once.
TEST(SavedModel, ModelsKeepTheirOwnStateAndServeManyThreads) {
  Runtime* rt = &test::TestRuntime();
  auto a = SavedModel::Load(rt, Fixture("keras_mlp"));
  auto b = SavedModel::Load(rt, Fixture("keras_mlp"));
  ASSERT_TRUE(a.ok() && b.ok());
  auto x = ReadNpy(Fixture("keras_mlp.io/x.npy"));
  auto expected = ReadNpy(Fixture("keras_mlp.io/serving_default/output_0.npy"));
  ASSERT_TRUE(x.ok() && expected.ok());
  b->reset();  // freeing one model's resources leaves the other's
  auto call = (*a)->Prepare("serving_default");
  ASSERT_TRUE(call.ok()) << call.status();
  auto first = call->Run({*x});
  ASSERT_TRUE(first.ok()) << first.status();
  ExpectClose(*expected, (*first)[0], "output_0");
  std::vector<std::thread> threads;
  std::vector<Status> results(4);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        auto out = call->Run({*x});
        if (!out.ok()) {
          results[t] = out.status();
          return;
        }
        if (!(*out)[0].Equals((*first)[0]))  // the same kernels: the same bits
          results[t] = errors::Internal("thread ", t, " call ", i, ": ", (*out)[0].DebugString());
      }
    });
  for (auto& th : threads) th.join();
  for (const Status& s : results) EXPECT_TRUE(s.ok()) << s;
}

}  // namespace
}  // namespace cfx
