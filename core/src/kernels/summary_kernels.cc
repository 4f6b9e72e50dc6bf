// Summary ops for TensorBoard: ScalarSummary, HistogramSummary, ImageSummary (PNG) and
// MergeSummary, with TensorFlow's semantics. Each outputs a serialized Summary protobuf (a string
// scalar) that a SummaryWriter appends to an events file.
#include <zlib.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <set>

#include "conflux/half.h"
#include "kernels/builtin.h"
#include "proto/summary.pb.h"

namespace cfx::internal {
namespace {

// Elements [begin, end) of a host tensor of a real dtype, as doubles: one dtype dispatch per call.
Status ToDoubles(const Tensor& t, int64_t begin, int64_t end, std::vector<double>* out) {
  out->resize(end - begin);
  auto plain = [&](auto element_type) {
    const auto* p = t.data<decltype(element_type)>();
    for (int64_t i = begin; i < end; ++i) (*out)[i - begin] = static_cast<double>(p[i]);
  };
  auto bits16 = [&](float (*to_float)(uint16_t)) {
    const uint16_t* p = t.data<uint16_t>();
    for (int64_t i = begin; i < end; ++i) (*out)[i - begin] = to_float(p[i]);
  };
  switch (t.dtype()) {
    case DT_FLOAT:
      plain(float());
      break;
    case DT_DOUBLE:
      plain(double());
      break;
    case DT_INT32:
      plain(int32_t());
      break;
    case DT_INT64:
      plain(int64_t());
      break;
    case DT_UINT8:
      plain(uint8_t());
      break;
    case DT_INT8:
      plain(int8_t());
      break;
    case DT_INT16:
      plain(int16_t());
      break;
    case DT_UINT16:
      plain(uint16_t());
      break;
    case DT_UINT32:
      plain(uint32_t());
      break;
    case DT_UINT64:
      plain(uint64_t());
      break;
    case DT_HALF:
      bits16(&HalfToFloat);
      break;
    case DT_BFLOAT16:
      bits16(&Bfloat16ToFloat);
      break;
    default:
      return errors::InvalidArgument("summary values of dtype ", DataTypeString(t.dtype()),
                                     " are not supported");
  }
  return Status();
}

void SetSummary(KernelContext* c, const conflux::Summary& s) {
  Tensor out(DT_STRING, TensorShape());
  s.SerializeToString(&out.at<std::string>(0));
  SetOutput(c, 0, std::move(out));
}

class ScalarSummaryKernel : public BuiltinKernel {
 public:
  void Compute(KernelContext* c) override {
    const Tensor& tags = c->inputs[0];
    const Tensor& values = c->inputs[1];
    if (tags.shape() != values.shape()) {
      c->status = errors::InvalidArgument(
          "tags and values must have the same shape: ", tags.shape().ToString(), " vs ",
          values.shape().ToString());
      return;
    }
    std::vector<double> v;
    if (!(c->status = ToDoubles(values, 0, values.num_elements(), &v)).ok()) return;
    conflux::Summary s;
    for (int64_t i = 0; i < tags.num_elements(); ++i) {
      auto* value = s.add_value();
      value->set_tag(tags.at<std::string>(i));
      value->set_simple_value(static_cast<float>(v[i]));
    }
    SetSummary(c, s);
  }
};

// TensorFlow's default histogram buckets: +-1e-12 growing by 10% up to 1e20, then DBL_MAX.
const std::vector<double>& DefaultBucketLimits() {
  static const std::vector<double> limits = [] {
    std::vector<double> pos;
    for (double v = 1e-12; v < 1e20; v *= 1.1) pos.push_back(v);
    pos.push_back(DBL_MAX);
    std::vector<double> all;
    for (auto it = pos.rbegin(); it != pos.rend(); ++it) all.push_back(-*it);
    all.push_back(0.0);
    all.insert(all.end(), pos.begin(), pos.end());
    return all;
  }();
  return limits;
}

class HistogramSummaryKernel : public BuiltinKernel {
 public:
  void Compute(KernelContext* c) override {
    const Tensor& tag = c->inputs[0];
    const Tensor& values = c->inputs[1];
    if (tag.num_elements() != 1) {
      c->status =
          errors::InvalidArgument("tag must be a scalar, got shape ", tag.shape().ToString());
      return;
    }
    std::vector<double> vs;
    if (!(c->status = ToDoubles(values, 0, values.num_elements(), &vs)).ok()) return;
    const std::vector<double>& limits = DefaultBucketLimits();
    std::vector<double> counts(limits.size(), 0);
    double lo = DBL_MAX, hi = -DBL_MAX, sum = 0, sum_sq = 0;
    for (const double v : vs) {
      if (!std::isfinite(v)) {
        c->status =
            errors::InvalidArgument("Nan in summary histogram for: ", tag.at<std::string>(0));
        return;
      }
      const size_t b = std::upper_bound(limits.begin(), limits.end(), v) - limits.begin();
      counts[std::min(b, limits.size() - 1)] += 1;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
      sum += v;
      sum_sq += v * v;
    }
    conflux::Summary s;
    auto* value = s.add_value();
    value->set_tag(tag.at<std::string>(0));
    auto* h = value->mutable_histo();
    h->set_min(values.num_elements() ? lo : 0);
    h->set_max(values.num_elements() ? hi : 0);
    h->set_num(static_cast<double>(values.num_elements()));
    h->set_sum(sum);
    h->set_sum_squares(sum_sq);
    // Empty buckets are left out, except one before each non-empty bucket, so that every
    // bucket keeps its left edge (the limit of the bucket before it).
    for (size_t i = 0; i < limits.size(); ++i) {
      if (counts[i] > 0 || (i + 1 < limits.size() && counts[i + 1] > 0)) {
        h->add_bucket_limit(limits[i]);
        h->add_bucket(counts[i]);
      }
    }
    SetSummary(c, s);
  }
};

// A PNG (8-bit, no interlace) of `height` rows of `width` pixels of `channels` bytes.
std::string EncodePng(const uint8_t* pixels, int height, int width, int channels) {
  auto put32 = [](std::string* s, uint32_t v) {
    for (int k = 3; k >= 0; --k) s->push_back(static_cast<char>((v >> (8 * k)) & 0xFF));
  };
  auto chunk = [&](std::string* png, const char* type, const std::string& data) {
    put32(png, static_cast<uint32_t>(data.size()));
    std::string body = std::string(type, 4) + data;
    png->append(body);
    put32(png, static_cast<uint32_t>(
                   crc32(0, reinterpret_cast<const Bytef*>(body.data()), body.size())));
  };
  static const int kColorType[] = {0, 0, 4, 2, 6};  // by channels: gray, gray+alpha, RGB, RGBA
  std::string png("\x89PNG\r\n\x1a\n", 8), ihdr;
  put32(&ihdr, width);
  put32(&ihdr, height);
  ihdr += std::string{8, static_cast<char>(kColorType[channels]), 0, 0, 0};
  chunk(&png, "IHDR", ihdr);
  std::string raw;
  const size_t row = static_cast<size_t>(width) * channels;
  for (int y = 0; y < height; ++y) {
    raw.push_back(0);  // filter: none
    raw.append(reinterpret_cast<const char*>(pixels + y * row), row);
  }
  uLongf size = compressBound(raw.size());
  std::string z(size, '\0');
  compress2(reinterpret_cast<Bytef*>(z.data()), &size, reinterpret_cast<const Bytef*>(raw.data()),
            raw.size(), Z_DEFAULT_COMPRESSION);
  z.resize(size);
  chunk(&png, "IDAT", z);
  chunk(&png, "IEND", "");
  return png;
}

class ImageSummaryKernel : public BuiltinKernel {
 public:
  Status Init(const NodeDef& node, const OpDef& op) override {
    CFX_RETURN_IF_ERROR(GetNodeAttr(node, op, "max_images", &max_images_));
    if (max_images_ < 1) return errors::InvalidArgument("max_images must be >= 1");
    const AttrValue* bad = FindAttrOrDefault(node, op, "bad_color");
    if (bad != nullptr && bad->tensor.dtype() == DT_UINT8 && bad->tensor.num_elements() > 0)
      for (int64_t i = 0; i < bad->tensor.num_elements(); ++i)
        bad_color_.push_back(bad->tensor.at<uint8_t>(i));
    if (bad_color_.empty()) bad_color_ = {255, 0, 0, 255};
    return Status();
  }
  void Compute(KernelContext* c) override {
    const Tensor& tag = c->inputs[0];
    const Tensor& t = c->inputs[1];
    if (tag.num_elements() != 1 || t.shape().dims().size() != 4) {
      c->status =
          errors::InvalidArgument("ImageSummary needs a scalar tag and a 4-D tensor ",
                                  "[batch, height, width, channels], got ", t.shape().ToString());
      return;
    }
    const auto& d = t.shape().dims();
    const int64_t batch = d[0], h = d[1], w = d[2], ch = d[3];
    if (ch != 1 && ch != 3 && ch != 4) {
      c->status = errors::InvalidArgument("images must have 1, 3 or 4 channels, got ", ch);
      return;
    }
    const int64_t pixels = h * w * ch;
    conflux::Summary s;
    const int64_t n = std::min<int64_t>(batch, max_images_);
    std::vector<uint8_t> img(pixels);
    std::vector<double> values;  // one image, for the float types
    for (int64_t b = 0; b < n; ++b) {
      if (t.dtype() == DT_UINT8) {
        std::copy_n(t.data<uint8_t>() + b * pixels, pixels, img.begin());
      } else {
        // Floats: all >= 0 scales so the largest is 255; otherwise 0 maps to 127.5 and the
        // largest magnitude to the edge (TensorFlow's rule). Non-finite values get bad_color.
        if (!(c->status = ToDoubles(t, b * pixels, (b + 1) * pixels, &values)).ok()) return;
        double lo = 0, hi = 0;
        for (const double v : values)
          if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
        const bool positive = lo >= 0;
        const double scale =
            positive ? (hi > 0 ? 255.0 / hi : 0) : 127.0 / std::max(std::abs(lo), std::abs(hi));
        const double offset = positive ? 0 : 128.0;
        for (int64_t i = 0; i < pixels; ++i) {
          const double v = values[i];
          const bool bad = !std::isfinite(v);
          const int64_t chan = i % ch;
          img[i] = bad ? bad_color_[chan % bad_color_.size()]
                       : static_cast<uint8_t>(std::clamp(v * scale + offset, 0.0, 255.0));
        }
      }
      auto* value = s.add_value();
      value->set_tag(n == 1 ? tag.at<std::string>(0) + "/image"
                            : StrCat(tag.at<std::string>(0), "/image/", b));
      auto* image = value->mutable_image();
      image->set_height(static_cast<int>(h));
      image->set_width(static_cast<int>(w));
      image->set_colorspace(static_cast<int>(ch));
      image->set_encoded_image_string(
          EncodePng(img.data(), static_cast<int>(h), static_cast<int>(w), static_cast<int>(ch)));
    }
    SetSummary(c, s);
  }

 private:
  int64_t max_images_ = 3;
  std::vector<uint8_t> bad_color_;
};

class MergeSummaryKernel : public BuiltinKernel {
 public:
  void Compute(KernelContext* c) override {
    conflux::Summary merged;
    std::set<std::string> tags;
    for (int i = 0; i < c->num_inputs; ++i) {
      const Tensor& in = c->inputs[i];
      for (int64_t k = 0; k < in.num_elements(); ++k) {
        conflux::Summary s;
        if (!s.ParseFromString(in.at<std::string>(k))) {
          c->status = errors::InvalidArgument("input ", i, " is not a serialized Summary");
          return;
        }
        for (const auto& v : s.value()) {
          if (!v.tag().empty() && !tags.insert(v.tag()).second) {
            c->status =
                errors::InvalidArgument("Duplicate tag ", v.tag(), " found in summary inputs");
            return;
          }
          *merged.add_value() = v;
        }
      }
    }
    SetSummary(c, merged);
  }
};

}  // namespace

void RegisterSummaryKernels(KernelRegistry* r) {
  auto reg = [&](KernelDef d) { CFX_CHECK(r->Register(std::move(d)).ok()); };
  reg(BuiltinKernelDef<ScalarSummaryKernel>("ScalarSummary", "CPU", false, 0));
  reg(BuiltinKernelDef<HistogramSummaryKernel>("HistogramSummary", "CPU", false, 0));
  reg(BuiltinKernelDef<ImageSummaryKernel>("ImageSummary", "CPU", false, 0));
  reg(BuiltinKernelDef<MergeSummaryKernel>("MergeSummary", "CPU", false, 0));
}

}  // namespace cfx::internal
