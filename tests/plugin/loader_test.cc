// Plugin loading through real shared objects: the happy path and each way loading can fail.
#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "conflux/plugin_api.h"
#include "conflux/runtime.h"
#include "kernel_test_util.h"

namespace cfx {
namespace {

namespace fs = std::filesystem;

std::string Fixture(const std::string& name) {
  return test::FixturePluginDir() + "/libconflux_fixture_" + name + ".so";
}

// A runtime with the default config's plugins (cpu, ops-nn).
std::unique_ptr<Runtime> NewRuntime() {
  Config config = Config::Default();
  config.plugin_paths = {test::BuildPluginDir()};
  auto rt = Runtime::Create(config);
  EXPECT_TRUE(rt.ok()) << rt.status();
  return rt.ok() ? std::move(rt).value() : nullptr;
}

PluginSpec ByPath(const std::string& path) {
  PluginSpec s;
  s.path = path;
  return s;
}

void ExpectLoadError(const std::string& path, Code code, const std::vector<std::string>& parts) {
  auto rt = NewRuntime();
  ASSERT_NE(rt, nullptr);
  size_t ops_before = rt->ops().ListOps().size();
  size_t kernels_before = rt->kernels().All().size();
  Status s = rt->LoadPlugin(ByPath(path));
  ASSERT_FALSE(s.ok()) << "loading " << path << " should fail";
  EXPECT_EQ(s.code(), code) << s;
  for (const std::string& p : parts)
    EXPECT_NE(s.message().find(p), std::string::npos)
        << "\"" << s.message() << "\" lacks \"" << p << "\"";
  // Nothing of a failed plugin stays registered, and the failure is recorded.
  EXPECT_EQ(rt->ops().ListOps().size(), ops_before);
  EXPECT_EQ(rt->kernels().All().size(), kernels_before);
  ASSERT_FALSE(rt->plugin_failures().empty());
  EXPECT_EQ(rt->plugin_failures().back().error.code(), code);
}

TEST(PluginLoader, LoadsAPluginAndRunsItsOpThroughTheAbi) {
  auto rt = NewRuntime();
  ASSERT_NE(rt, nullptr);
  ASSERT_OK(rt->LoadPlugin(ByPath(Fixture("good"))));
  ASSERT_NE(rt->ops().LookUp("FixtureScale"), nullptr);
  EXPECT_EQ(rt->ops().LookUp("FixtureScale")->registered_by, "fixture");
  auto plugins = rt->plugins();
  // After the default config's plugins.
  ASSERT_EQ(plugins.size(), Config::Default().plugins.size() + 1);
  EXPECT_EQ(plugins.back().name, "fixture");
  EXPECT_EQ(plugins.back().version, "9.9.9");
  EXPECT_EQ(plugins.back().abi_major, static_cast<uint32_t>(CFX_ABI_MAJOR));
  EXPECT_EQ(plugins.back().num_kernels, 1);
  // The device type that found no hardware says why, and creates no device.
  bool noted = false;
  for (const auto& [type, why] : rt->device_type_notes())
    if (type == "FIXTURE") noted = why.find("not present") != std::string::npos;
  EXPECT_TRUE(noted);
  EXPECT_FALSE(rt->FindDevice("FIXTURE:0").ok());

  NodeDef node = test::MakeNode("FixtureScale", 1,
                                {{"scale", AttrValue::Float(2.5f)}, {"bias", AttrValue::Int(1)}});
  auto dev = rt->FindDevice("CPU:0");
  ASSERT_TRUE(dev.ok()) << dev.status();
  auto out = RunKernelOnce(*rt, *dev, node, {test::MakeTensor<float>({3}, {1, 2, -4})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(test::Values<float>((*out)[0]), (std::vector<float>{3.5f, 6.0f, -9.0f}));
  // The attr default (bias = 0) is seen by the kernel through the ABI.
  node.attr.erase("bias");
  out = RunKernelOnce(*rt, *dev, node, {test::MakeTensor<float>({1}, {2})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(test::Values<float>((*out)[0]), (std::vector<float>{5.0f}));
  // A missing required attr is an error naming it.
  node.attr.erase("scale");
  out = RunKernelOnce(*rt, *dev, node, {test::MakeTensor<float>({1}, {2})});
  test::ExpectError(out, Code::kInvalidArgument, "scale");
}

TEST(PluginLoader, FindsPluginsByNameOnConfluxPluginPath) {
  ::setenv("CONFLUX_PLUGIN_PATH", ("/nonexistent:" + test::FixturePluginDir()).c_str(), 1);
  auto rt = NewRuntime();
  ASSERT_NE(rt, nullptr);
  PluginSpec spec;
  spec.name = "fixture_good";
  Status s = rt->LoadPlugin(spec);
  ::unsetenv("CONFLUX_PLUGIN_PATH");
  ASSERT_OK(s);
  EXPECT_NE(rt->ops().LookUp("FixtureScale"), nullptr);
}

TEST(PluginLoader, UnknownNameListsTheFoldersSearched) {
  auto rt = NewRuntime();
  PluginSpec spec;
  spec.name = "no_such_plugin";
  Status s = rt->LoadPlugin(spec);
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_NE(s.message().find("libconflux_no_such_plugin.so"), std::string::npos) << s;
  EXPECT_NE(s.message().find(test::BuildPluginDir()), std::string::npos) << s;
}

TEST(PluginLoader, MissingFile) {
  ExpectLoadError("/nonexistent/libconflux_x.so", Code::kNotFound,
                  {"/nonexistent/libconflux_x.so", "does not exist"});
}

TEST(PluginLoader, NotASharedObject) {
  std::string path = (fs::temp_directory_path() / "conflux_text_plugin.so").string();
  std::ofstream(path) << "this is not a shared object\n";
  ExpectLoadError(path, Code::kInvalidArgument, {path, "not a shared object"});
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string WriteTemp(const std::string& name, const std::string& bytes) {
  std::string path = (fs::temp_directory_path() / name).string();
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), bytes.size());
  return path;
}

// A copy cut short anywhere is refused before the dynamic loader maps it: mapped past the end
// of the file, a segment raises SIGBUS when read, which would end this test's process.
TEST(PluginLoader, TruncatedSharedObject) {
  std::string whole = ReadFile(Fixture("good"));
  ASSERT_GT(whole.size(), 4096u);
  for (size_t size : {size_t{20}, size_t{63}, size_t{256}, whole.size() / 100, whole.size() / 10,
                      whole.size() / 2, whole.size() - 1}) {
    SCOPED_TRACE("truncated to " + std::to_string(size) + " bytes");
    std::string path = WriteTemp("conflux_truncated_plugin.so", whole.substr(0, size));
    ExpectLoadError(path, Code::kInvalidArgument, {path, "truncated", std::to_string(size)});
  }
}

// Patches the ELF header of the good fixture (64-bit, little-endian: this suite's hosts).
std::string PatchedFixture(size_t offset, const std::string& bytes) {
  std::string elf = ReadFile(Fixture("good"));
  elf.replace(offset, bytes.size(), bytes);
  return WriteTemp("conflux_patched_plugin.so", elf);
}

TEST(PluginLoader, ElfOfAnotherKindClassOrMachine) {
  // e_ident[EI_CLASS] (4), e_type (16), e_machine (18), little-endian.
  ExpectLoadError(PatchedFixture(4, std::string(1, '\x01')), Code::kInvalidArgument,
                  {"32-bit class", "this process is 64-bit"});
  ExpectLoadError(PatchedFixture(5, std::string(1, '\x02')), Code::kInvalidArgument,
                  {"big-endian", "little-endian"});
  ExpectLoadError(PatchedFixture(16, std::string("\x01\x00", 2)), Code::kInvalidArgument,
                  {"relocatable object", "-shared"});
  ExpectLoadError(PatchedFixture(16, std::string("\x02\x00", 2)), Code::kInvalidArgument,
                  {"executable (ELF type ET_EXEC)"});
#if defined(__aarch64__)
  const std::string other("\x3e\x00", 2);  // EM_X86_64
#else
  const std::string other("\xb7\x00", 2);  // EM_AARCH64
#endif
  ExpectLoadError(PatchedFixture(18, other), Code::kInvalidArgument,
                  {"built for", "this process runs on", "rebuild the plugin"});
}

TEST(PluginLoader, ADirectoryIsNotASharedObject) {
  std::string dir = (fs::temp_directory_path() / "conflux_plugin_dir.so").string();
  fs::create_directories(dir);
  ExpectLoadError(dir, Code::kInvalidArgument, {dir, "not a regular file"});
}

TEST(PluginLoader, EntrySymbolMissing) {
  ExpectLoadError(test::FixturePluginDir() + "/libconflux_fixture_no_entry.so",
                  Code::kInvalidArgument, {"cfx_plugin_abi_version", "is missing"});
}

TEST(PluginLoader, AbiMajorMismatch) {
  ExpectLoadError(Fixture("wrong_abi"), Code::kFailedPrecondition,
                  {"ABI " + std::to_string(CFX_ABI_MAJOR + 1) + ".0", "major versions must match"});
}

TEST(PluginLoader, InitReturnsAnError) {
  ExpectLoadError(Fixture("init_fails"), Code::kFailedPrecondition,
                  {"fixture_init_fails", "initialisation failed", "refuses to start"});
}

// A plugin refused after its init ran stays mapped, as loaded ones do: what its init left behind
// (static descriptors, threads, exit handlers) must not point into unmapped memory.
TEST(PluginLoader, APluginRefusedAfterItsInitStaysMapped) {
  const std::string path = Fixture("init_fails");
  ExpectLoadError(path, Code::kFailedPrecondition, {"refuses to start"});
  void* handle = dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
  EXPECT_NE(handle, nullptr) << path << " was unloaded";
  if (handle != nullptr) dlclose(handle);
}

TEST(PluginLoader, DuplicateOp) {
  ExpectLoadError(Fixture("dup_op"), Code::kAlreadyExists, {"op Identity", "core"});
}

TEST(PluginLoader, DuplicateKernel) {
  ExpectLoadError(Fixture("dup_kernel"), Code::kAlreadyExists, {"Const on CPU", "cpu"});
}

TEST(PluginLoader, DuplicateDeviceType) {
  ExpectLoadError(Fixture("dup_device"), Code::kAlreadyExists, {"device type CPU", "cpu"});
}

TEST(PluginLoader, StructSmallerThanItsFirstReleaseIsALoadError) {
  ExpectLoadError(Fixture("short_funcs"), Code::kInvalidArgument,
                  {"fixture_short_funcs", "device type SHORT", "cfx_device_funcs",
                   "struct_size " + std::to_string(offsetof(cfx_device_funcs, describe)),
                   std::to_string(sizeof(void*) * 18) + " bytes", "ABI 1.0"});
}

TEST(PluginLoader, RegistrationErrorFailsEvenWhenInitIgnoresIt) {
  ExpectLoadError(Fixture("ignores_errors"), Code::kAlreadyExists, {"op Identity"});
}

TEST(PluginLoader, OptionsReachThePlugin) {
  PluginSpec spec = ByPath(Fixture("good"));
  spec.options = {{"fail", "yes"}};
  auto rt = NewRuntime();
  Status s = rt->LoadPlugin(spec);
  EXPECT_EQ(s.code(), Code::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("fail=yes"), std::string::npos) << s;
}

TEST(PluginLoader, RequiredPluginFailureFailsStartUpAndOptionalDoesNot) {
  Config config = Config::Default();
  config.plugin_paths = {test::BuildPluginDir()};
  PluginSpec bad = ByPath(Fixture("init_fails"));
  bad.source = "test.yaml:3";
  config.plugins.push_back(bad);
  auto rt = Runtime::Create(config);
  ASSERT_FALSE(rt.ok());
  EXPECT_NE(rt.status().message().find("test.yaml:3"), std::string::npos) << rt.status();
  config.plugins.back().required = false;
  rt = Runtime::Create(config);
  ASSERT_TRUE(rt.ok()) << rt.status();
  ASSERT_EQ((*rt)->plugin_failures().size(), 1u);
  EXPECT_TRUE((*rt)->FindDevice("CPU:0").ok());
}

TEST(PluginLoader, TwoCpuDevicesInOneProcess) {
  Config config = Config::Default();
  config.plugin_paths = {test::BuildPluginDir()};
  config.devices["CPU"].count = 2;
  auto rt = Runtime::Create(config);
  ASSERT_TRUE(rt.ok()) << rt.status();
  auto cpu1 = (*rt)->FindDevice("/device:CPU:1");
  ASSERT_TRUE(cpu1.ok()) << cpu1.status();
  EXPECT_EQ((*cpu1)->full_name(), "/job:localhost/replica:0/task:0/device:CPU:1");
  NodeDef add = test::MakeNode("Identity", 1, {{"T", AttrValue::Type(DT_INT32)}});
  auto out = RunKernelOnce(**rt, *cpu1, add, {test::MakeVector<int32_t>({4, 5})});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(test::Values<int32_t>((*out)[0]), (std::vector<int32_t>{4, 5}));
}

// The CPU plugin loaded by two runtimes keeps working after the first one is destroyed: the host
// table it was handed must outlive every Runtime.
TEST(PluginLoader, PluginOutlivesTheRuntimesThatLoadedIt) {
  Config config = Config::Default();
  config.plugin_paths = {test::BuildPluginDir()};
  auto first = Runtime::Create(config);
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = Runtime::Create(config);
  ASSERT_TRUE(second.ok()) << second.status();
  first->reset();
  NodeDef mm = test::MakeNode("MatMul", 2, {{"T", AttrValue::Type(DT_FLOAT)}});
  Tensor m = test::MakeTensor<float>(TensorShape({1, 1}), {3});
  auto out = RunKernelOnce(**second, (*second)->FindDevice("CPU:0").value(), mm, {m, m});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(test::Values<float>((*out)[0]), (std::vector<float>{9}));
}

}  // namespace
}  // namespace cfx
