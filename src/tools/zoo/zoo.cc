// The model zoo: torchvision ResNet-18/50 and MobileNetV2 as opset-13 ONNX with seeded weights.
#include "tools/zoo/zoo.h"

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <numbers>

namespace systolic::zoo {
namespace {

// splitmix64, seeded per tensor from (seed, tensor name): a tensor's values do not depend on
// the order in which the builder happens to create tensors.
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  double normal() {  // Box-Muller; u1 in (0, 1] so log() is finite
    double u1 = double((next() >> 11) + 1) * 0x1.0p-53, u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  }
};

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// Appends nodes and initializers to a graph the way PyTorch's exporter lays them out
// (Conv and BatchNormalization kept separate). Each node's output tensor is "<node name>".
class Builder {
 public:
  Builder(onnx::GraphProto* g, uint64_t seed) : g_(g), seed_(seed) {}

  std::string conv(const std::string& x, const std::string& name, int cin, int cout, int k,
                   int stride, int group = 1) {
    int fan_in = cin / group * k * k;
    double std = std::sqrt(2.0 / fan_in);  // He/Kaiming: keeps post-ReLU variance ~constant
    init(name + ".weight", {cout, cin / group, k, k}, [&](Rng& r) { return std * r.normal(); });
    auto* n = node("Conv", name, {x, name + ".weight"});
    int p = (k - 1) / 2;
    ints(n, "kernel_shape", {k, k});
    ints(n, "pads", {p, p, p, p});
    ints(n, "strides", {stride, stride});
    ints(n, "dilations", {1, 1});
    attr_i(n, "group", group);
    return name;
  }

  // gamma ~ U(glo, ghi): the last BN of a residual branch gets a small gamma so the residual
  // stream grows slowly with depth. Running stats are non-trivial so BN folding is exercised.
  std::string bn(const std::string& x, const std::string& name, int c, double glo = 0.8,
                 double ghi = 1.2) {
    init(name + ".weight", {c}, [&](Rng& r) { return r.uniform(glo, ghi); });
    init(name + ".bias", {c}, [&](Rng& r) { return 0.1 * r.normal(); });
    init(name + ".running_mean", {c}, [&](Rng& r) { return 0.1 * r.normal(); });
    init(name + ".running_var", {c}, [&](Rng& r) { return r.uniform(0.5, 1.5); });
    auto* n = node("BatchNormalization", name,
                   {x, name + ".weight", name + ".bias", name + ".running_mean",
                    name + ".running_var"});
    attr_f(n, "epsilon", 1e-5f);
    attr_f(n, "momentum", 0.9f);
    return name;
  }

  std::string relu(const std::string& x, const std::string& name) {
    node("Relu", name, {x});
    return name;
  }

  // ReLU6 = Clip(x, 0, 6); since opset 11 min/max are inputs (shared scalar initializers).
  std::string relu6(const std::string& x, const std::string& name) {
    if (!have_clip_bounds_) {
      scalar("relu6.min", 0.0f);
      scalar("relu6.max", 6.0f);
      have_clip_bounds_ = true;
    }
    node("Clip", name, {x, "relu6.min", "relu6.max"});
    return name;
  }

  std::string add(const std::string& a, const std::string& b, const std::string& name) {
    node("Add", name, {a, b});
    return name;
  }

  std::string maxpool(const std::string& x, const std::string& name) {
    auto* n = node("MaxPool", name, {x});
    ints(n, "kernel_shape", {3, 3});
    ints(n, "pads", {1, 1, 1, 1});
    ints(n, "strides", {2, 2});
    return name;
  }

  std::string global_avgpool_flatten(const std::string& x, const std::string& name) {
    node("GlobalAveragePool", name, {x});
    auto* n = node("Flatten", name + ".flatten", {name});
    attr_i(n, "axis", 1);
    return name + ".flatten";
  }

  // Dropout with no training_mode input: an inference no-op (ratio kept for fidelity).
  std::string dropout(const std::string& x, const std::string& name, float ratio) {
    scalar(name + ".ratio", ratio);
    node("Dropout", name, {x, name + ".ratio"});
    return name;
  }

  // Linear as Gemm(transB=1); torchvision's default init U(-1/sqrt(in), 1/sqrt(in)).
  void linear(const std::string& x, const std::string& name, int in, int out,
              const std::string& y) {
    double b = 1.0 / std::sqrt(double(in));
    init(name + ".weight", {out, in}, [&](Rng& r) { return r.uniform(-b, b); });
    init(name + ".bias", {out}, [&](Rng& r) { return r.uniform(-b, b); });
    auto* n = node("Gemm", name, {x, name + ".weight", name + ".bias"}, y);
    attr_f(n, "alpha", 1.0f);
    attr_f(n, "beta", 1.0f);
    attr_i(n, "transB", 1);
  }

 private:
  onnx::NodeProto* node(const std::string& op, const std::string& name,
                        std::initializer_list<std::string> inputs, const std::string& out = "") {
    auto* n = g_->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const auto& i : inputs) n->add_input(i);
    n->add_output(out.empty() ? name : out);
    return n;
  }

  void init(const std::string& name, std::vector<int64_t> dims,
            const std::function<double(Rng&)>& gen) {
    Rng r{seed_ ^ fnv1a(name)};
    size_t count = 1;
    for (int64_t d : dims) count *= size_t(d);
    std::vector<float> v(count);
    for (auto& x : v) x = float(gen(r));
    auto* t = g_->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    t->set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), count * sizeof(float)));
  }

  void scalar(const std::string& name, float value) {
    auto* t = g_->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->set_raw_data(std::string(reinterpret_cast<const char*>(&value), sizeof(float)));
  }

  static void ints(onnx::NodeProto* n, const char* name, std::initializer_list<int64_t> v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
  }
  static void attr_i(onnx::NodeProto* n, const char* name, int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void attr_f(onnx::NodeProto* n, const char* name, float v) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(v);
  }

  onnx::GraphProto* g_;
  uint64_t seed_;
  bool have_clip_bounds_ = false;
};

const float kResidualGammaLo = 0.1f, kResidualGammaHi = 0.3f;

// torchvision.models.resnet: BasicBlock (expansion 1) or Bottleneck v1.5 (expansion 4, stride
// on the 3x3 conv).
void resnet(Builder& b, bool bottleneck, std::initializer_list<int> blocks) {
  std::string x = b.conv("input", "conv1", 3, 64, 7, 2);
  x = b.relu(b.bn(x, "bn1", 64), "relu");
  x = b.maxpool(x, "maxpool");
  const int expansion = bottleneck ? 4 : 1;
  int inplanes = 64, planes = 64, layer = 1;
  for (int n : blocks) {
    for (int i = 0; i < n; ++i) {
      std::string p = "layer" + std::to_string(layer) + "." + std::to_string(i) + ".";
      int stride = (i == 0 && layer > 1) ? 2 : 1;
      int out = planes * expansion;
      std::string y;
      if (bottleneck) {
        y = b.relu(b.bn(b.conv(x, p + "conv1", inplanes, planes, 1, 1), p + "bn1", planes),
                   p + "relu1");
        y = b.relu(b.bn(b.conv(y, p + "conv2", planes, planes, 3, stride), p + "bn2", planes),
                   p + "relu2");
        y = b.bn(b.conv(y, p + "conv3", planes, out, 1, 1), p + "bn3", out, kResidualGammaLo,
                 kResidualGammaHi);
      } else {
        y = b.relu(b.bn(b.conv(x, p + "conv1", inplanes, planes, 3, stride), p + "bn1", planes),
                   p + "relu1");
        y = b.bn(b.conv(y, p + "conv2", planes, planes, 3, 1), p + "bn2", planes,
                 kResidualGammaLo, kResidualGammaHi);
      }
      std::string shortcut = x;
      if (stride != 1 || inplanes != out) {
        shortcut = b.bn(b.conv(x, p + "downsample.0", inplanes, out, 1, stride),
                        p + "downsample.1", out);
      }
      x = b.relu(b.add(y, shortcut, p + "add"), p + "relu");
      inplanes = out;
    }
    planes *= 2;
    ++layer;
  }
  x = b.global_avgpool_flatten(x, "avgpool");
  b.linear(x, "fc", inplanes, 1000, "logits");
}

// torchvision.models.mobilenet_v2 (width 1.0): Conv2dNormActivation = Sequential(conv, bn,
// ReLU6), hence names like "features.2.conv.0.0".
void mobilenet_v2(Builder& b) {
  auto conv_bn_relu6 = [&](const std::string& x, const std::string& p, int cin, int cout, int k,
                           int stride, int group) {
    std::string y = b.conv(x, p + ".0", cin, cout, k, stride, group);
    return b.relu6(b.bn(y, p + ".1", cout), p + ".2");
  };
  struct Setting {
    int t, c, n, s;
  };
  const Setting settings[] = {{1, 16, 1, 1},  {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                              {6, 96, 3, 1},  {6, 160, 3, 2}, {6, 320, 1, 1}};
  std::string x = conv_bn_relu6("input", "features.0", 3, 32, 3, 2, 1);
  int cin = 32, f = 1;
  for (const Setting& st : settings) {
    for (int i = 0; i < st.n; ++i, ++f) {
      std::string p = "features." + std::to_string(f) + ".conv.";
      int stride = i == 0 ? st.s : 1, hidden = cin * st.t, j = 0;
      std::string y = x;
      if (st.t != 1) y = conv_bn_relu6(y, p + std::to_string(j++), cin, hidden, 1, 1, 1);
      y = conv_bn_relu6(y, p + std::to_string(j++), hidden, hidden, 3, stride, hidden);
      y = b.conv(y, p + std::to_string(j++), hidden, st.c, 1, 1);  // linear bottleneck
      bool residual = stride == 1 && cin == st.c;
      y = b.bn(y, p + std::to_string(j++), st.c, residual ? kResidualGammaLo : 0.8,
               residual ? kResidualGammaHi : 1.2);
      if (residual) y = b.add(x, y, "features." + std::to_string(f) + ".add");
      x = y;
      cin = st.c;
    }
  }
  x = conv_bn_relu6(x, "features." + std::to_string(f), cin, 1280, 1, 1, 1);
  x = b.global_avgpool_flatten(x, "avgpool");
  x = b.dropout(x, "classifier.0", 0.2f);
  b.linear(x, "classifier.1", 1280, 1000, "logits");
}

void value_info(onnx::ValueInfoProto* v, const std::string& name, int64_t c, int64_t hw) {
  v->set_name(name);
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  auto* s = t->mutable_shape();
  s->add_dim()->set_dim_param("N");
  s->add_dim()->set_dim_value(c);
  for (int i = 0; hw > 0 && i < 2; ++i) s->add_dim()->set_dim_value(hw);
}

const std::map<std::string, std::function<void(Builder&)>>& registry() {
  static const std::map<std::string, std::function<void(Builder&)>> r = {
      {"mobilenet_v2", [](Builder& b) { mobilenet_v2(b); }},
      {"resnet18", [](Builder& b) { resnet(b, false, {2, 2, 2, 2}); }},
      {"resnet50", [](Builder& b) { resnet(b, true, {3, 4, 6, 3}); }},
  };
  return r;
}

}  // namespace

std::vector<std::string> zoo_names() {
  std::vector<std::string> names;
  for (const auto& [name, _] : registry()) names.push_back(name);
  return names;
}

Status zoo_build(const std::string& name, uint64_t seed, onnx::ModelProto* model) {
  auto it = registry().find(name);
  if (it == registry().end()) {
    std::string known;
    for (const auto& n : zoo_names()) known += (known.empty() ? "" : ", ") + n;
    return Err("zoo: unknown model '%s' (known: %s)", name.c_str(), known.c_str());
  }
  model->Clear();
  model->set_ir_version(8);
  model->set_producer_name("systolic-zoo");
  model->set_model_version(1);
  model->set_doc_string("torchvision " + name + " architecture, seeded random weights");
  auto* opset = model->add_opset_import();
  opset->set_domain("");
  opset->set_version(13);
  auto* g = model->mutable_graph();
  g->set_name(name);
  value_info(g->add_input(), "input", 3, 224);
  value_info(g->add_output(), "logits", 1000, 0);
  Builder b(g, seed);
  it->second(b);
  return Status::Ok();
}

}  // namespace systolic::zoo
