// Device: adapts a plugin's device functions to core types; DeviceName parsing.
#include "conflux/device.h"

#include <cctype>
#include <cstring>
#include <mutex>
#include <random>

#include "runtime/copy_tensor.h"
#include "state/resource_mgr.h"

namespace cfx {
namespace {

bool ParseInt(std::string_view s, int* out) {
  if (s == "*") {
    *out = -1;
    return true;
  }
  if (s.empty() || s.size() > 9) return false;
  int v = 0;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

StatusOr<DeviceName> DeviceName::Parse(std::string_view spec) {
  DeviceName n;
  auto bad = [&](const std::string& why) {
    return errors::InvalidArgument("bad device name \"", spec, "\": ", why,
                                   "; expected e.g. /job:worker/replica:0/task:1/device:GPU:0, "
                                   "/device:CPU:*, or CPU:0");
  };
  std::string_view rest = spec;
  while (!rest.empty()) {
    if (rest.front() == '/') {
      rest.remove_prefix(1);
      continue;
    }
    size_t slash = rest.find('/');
    std::string_view part = rest.substr(0, slash);
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
    size_t colon = part.find(':');
    std::string_view key = part.substr(0, colon);
    std::string_view value = colon == std::string_view::npos ? "" : part.substr(colon + 1);
    if (key == "job") {
      if (value.empty()) return bad("empty job name");
      n.job = std::string(value);
    } else if (key == "replica") {
      if (!ParseInt(value, &n.replica)) return bad("replica must be a number");
    } else if (key == "task") {
      if (!ParseInt(value, &n.task)) return bad("task must be a number");
    } else {
      if (key == "device") {
        part = value;
        colon = part.find(':');
        key = part.substr(0, colon);
        value = colon == std::string_view::npos ? "" : part.substr(colon + 1);
      }
      if (key.empty()) return bad("empty device type");
      for (char c : key)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return bad("bad device type");
      n.type = Upper(key);
      if (!value.empty() && !ParseInt(value, &n.id)) return bad("device id must be a number or *");
    }
  }
  return n;
}

std::string DeviceName::ToString() const {
  std::string s;
  if (!job.empty()) s += "/job:" + job;
  if (replica >= 0) s += "/replica:" + std::to_string(replica);
  if (task >= 0) s += "/task:" + std::to_string(task);
  if (!type.empty()) s += "/device:" + type + ":" + (id >= 0 ? std::to_string(id) : "*");
  return s;
}

bool DeviceName::Matches(const DeviceName& full) const {
  return (job.empty() || job == full.job) && (replica < 0 || replica == full.replica) &&
         (task < 0 || task == full.task) && (type.empty() || type == full.type) &&
         (id < 0 || id == full.id);
}

namespace {
uint64_t NewIncarnation() {
  static std::mutex mu;
  static std::mt19937_64 bits(std::random_device{}());
  std::lock_guard<std::mutex> lock(mu);
  uint64_t v = 0;
  while (v == 0) v = bits();
  return v;
}
}  // namespace

Device::Device(DeviceName name, std::string plugin, bool host_addressable,
               std::unique_ptr<Allocator> device_allocator,
               std::unique_ptr<Allocator> pinned_allocator)
    : name_(std::move(name)),
      plugin_(std::move(plugin)),
      incarnation_(NewIncarnation()),
      host_addressable_(host_addressable),
      device_allocator_(std::move(device_allocator)),
      pinned_allocator_(std::move(pinned_allocator)),
      resource_mgr_(std::make_unique<ResourceMgr>(name_.ToString())) {
  device_allocator_->set_device(this);
  if (pinned_allocator_ != nullptr) pinned_allocator_->set_device(this);
}

Device::~Device() = default;

void Device::ReleaseResources() { resource_mgr_.reset(); }

Allocator* Device::host_allocator() const {
  if (pinned_allocator_ != nullptr) return pinned_allocator_.get();
  return host_addressable_ ? device_allocator_.get() : HostAllocator();
}

namespace {
Status CheckCopy(const Tensor& src, const Tensor& dst) {
  if (src.dtype() != dst.dtype() || src.shape() != dst.shape())
    return errors::InvalidArgument(
        "copy between a ", DataTypeString(src.dtype()), " ", src.shape().ToString(),
        " tensor and a ", DataTypeString(dst.dtype()), " ", dst.shape().ToString(), " tensor");
  if (src.dtype() == DT_STRING || src.dtype() == DT_VARIANT)
    return errors::InvalidArgument(DataTypeString(src.dtype()),
                                   " tensors live in host memory only");
  return Status();
}
}  // namespace

Status Device::CopyHostToDevice(const Tensor& host, Tensor* device) const {
  CFX_RETURN_IF_ERROR(CheckCopy(host, *device));
  if (host.TotalBytes() == 0) return Status();
  if (host_addressable()) {
    std::memcpy(device->raw_data(), host.raw_data(), host.TotalBytes());
    return Status();
  }
  return CopyBytesToDevice(device->raw_data(), host.raw_data(), host.TotalBytes());
}

Status Device::CopyDeviceToHost(const Tensor& device, Tensor* host) const {
  CFX_RETURN_IF_ERROR(CheckCopy(device, *host));
  if (device.TotalBytes() == 0) return Status();
  if (host_addressable()) {
    std::memcpy(host->raw_data(), device.raw_data(), device.TotalBytes());
    return Status();
  }
  return CopyBytesToHost(host->raw_data(), device.raw_data(), device.TotalBytes());
}

Status Device::CopyDeviceToDevice(const Tensor& src, Tensor* dst) const {
  CFX_RETURN_IF_ERROR(CheckCopy(src, *dst));
  if (src.TotalBytes() == 0) return Status();
  if (host_addressable()) {
    std::memcpy(dst->raw_data(), src.raw_data(), src.TotalBytes());
    return Status();
  }
  return CopyBytesOnDevice(dst->raw_data(), src.raw_data(), src.TotalBytes());
}

void Device::CopyToHostAsync(void* host_dst, const void* device_src, size_t bytes,
                             StatusCallback done) const {
  done(CopyBytesToHost(host_dst, device_src, bytes));
}

void Device::CopyToDeviceAsync(void* device_dst, const void* host_src, size_t bytes,
                               StatusCallback done) const {
  done(CopyBytesToDevice(device_dst, host_src, bytes));
}

void Device::CopyOnDeviceAsync(void* device_dst, const void* device_src, size_t bytes,
                               StatusCallback done) const {
  done(CopyBytesOnDevice(device_dst, device_src, bytes));
}

StatusOr<Tensor> Device::ToHost(const Tensor& t) const {
  return CopyTensorSync(nullptr, nullptr, t);
}

StatusOr<Tensor> Device::FromHost(const Tensor& host) const {
  return CopyTensorSync(nullptr, this, host);
}

Status Device::CopyBytesToDevice(void*, const void*, size_t) const {
  return errors::Unimplemented("device ", full_name(), " has no host-to-device copy");
}

Status Device::CopyBytesToHost(void*, const void*, size_t) const {
  return errors::Unimplemented("device ", full_name(), " has no device-to-host copy");
}

Status Device::CopyBytesOnDevice(void* device_dst, const void* device_src, size_t bytes) const {
  CFX_ASSIGN_OR_RETURN(
      Tensor staging,
      Tensor::Allocate(host_allocator(), DT_UINT8, TensorShape({static_cast<int64_t>(bytes)})));
  CFX_RETURN_IF_ERROR(CopyBytesToHost(staging.raw_data(), device_src, bytes));
  return CopyBytesToDevice(device_dst, staging.raw_data(), bytes);
}

void Device::ParallelFor(int64_t total, int64_t,
                         const std::function<void(int64_t, int64_t)>& fn) const {
  if (total > 0) fn(0, total);
}

}  // namespace cfx
