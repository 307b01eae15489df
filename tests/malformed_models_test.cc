// Malformed graphs: each is refused at import, compile or load with an error naming the problem
// (never a crash, never an attempt to allocate the impossible).
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <fstream>

#include "frontend/onnx/import.h"
#include "plan/program.h"
#include "runtime/session.h"
#include "tests/temp_dir.h"

namespace systolic {
namespace {

struct Init {
  std::string name;
  std::vector<int64_t> dims;
  bool int64;
  std::vector<double> values;
};

std::string model(const std::string& op, std::vector<std::string> inputs, const std::vector<Init>& inits,
                  const std::function<void(onnx::NodeProto*)>& attrs = nullptr) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  auto* in = g->add_input();
  in->set_name("x");
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : {1, 3, 8, 8}) tt->mutable_shape()->add_dim()->set_dim_value(d);
  for (const Init& i : inits) {
    auto* t = g->add_initializer();
    t->set_name(i.name);
    t->set_data_type(i.int64 ? onnx::TensorProto::INT64 : onnx::TensorProto::FLOAT);
    for (int64_t d : i.dims) t->add_dims(d);
    for (double v : i.values) i.int64 ? t->add_int64_data(static_cast<int64_t>(v)) : t->add_float_data(static_cast<float>(v));
  }
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(op + "_0");
  for (const auto& s : inputs) n->add_input(s);
  n->add_output("y");
  if (attrs) attrs(n);
  g->add_output()->set_name("y");
  return m.SerializeAsString();
}

std::string first_error(const std::string& bytes) {
  auto g = frontend::import_onnx_bytes(bytes, "");
  if (!g.ok()) return g.status().message();
  auto p = plan::compile(std::move(*g), plan::CompileOptions{});
  if (!p.ok()) return p.status().message();
  auto s = runtime::Session::create(*p);
  if (!s.ok()) return s.status().message();
  return "";
}

void ints_attr(onnx::NodeProto* n, const std::string& name, std::vector<int64_t> v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

}  // namespace

TEST(MalformedModels, EachGetsANamedError) {
  std::vector<double> w48(48, 0.0);
  struct Case {
    std::string bytes, needle;
  } cases[] = {
      {model("Conv", {"x", "w"}, {{"w", {4, 3}, false, std::vector<double>(12, 0.0)}}), "ranks differ"},
      {model("Conv", {"x", "w"}, {{"w", {4, 3, 9, 9}, false, std::vector<double>(4 * 3 * 81, 0.0)}}),
       "larger than the padded input"},
      {model("Conv", {"x", "w"}, {{"w", {4, 3, 2, 2}, false, w48}},
             [](onnx::NodeProto* n) { ints_attr(n, "pads", {-1, -1, -1, -1}); }),
       "pads non-negative"},
      {model("Reshape", {"x", "s"}, {{"s", {2}, true, {5, 7}}}), "cannot reshape"},
      {model("Gather", {"x", "i"}, {{"i", {1}, true, {7}}},
             [](onnx::NodeProto* n) {
               auto* a = n->add_attribute();
               a->set_name("axis");
               a->set_type(onnx::AttributeProto::INT);
               a->set_i(1);
             }),
       "out of range"},
      {model("Relu", {"nope"}, {}), "nothing produces"},
      {model("Transpose", {"x"}, {}, [](onnx::NodeProto* n) { ints_attr(n, "perm", {0, 0, 1, 2}); }),
       "not a permutation"},
      {model("MaxPool", {"x"}, {}, [](onnx::NodeProto* n) { ints_attr(n, "kernel_shape", {0, 0}); }), "must be positive"},
      {model("Expand", {"x", "s"}, {{"s", {4}, true, {1e12, 3, 8, 8}}}), "more than 2^36 elements"},
      {model("Expand", {"x", "s"}, {{"s", {4}, true, {1e8, 3, 8, 8}}}), "GiB of activations"},
      {model("Conv", {"x", "w"}, {{"w", {4, 3, 1, 1}, false, std::vector<double>(5, 0.0)}}), "needs 12"},
      // ONNX's operator schema: required inputs, input counts, the op's opsets.
      {model("Slice", {"x", "s", ""}, {{"s", {1}, true, {0}}}), "required input 2 (ends) is missing"},
      {model("Relu", {"x", "x"}, {}), "it takes 1 to 1 inputs"},
      {model("LayerNormalization", {"x"}, {}), "not an operator of ONNX opset 13"},
  };
  for (const Case& c : cases) {
    const std::string err = first_error(c.bytes);
    EXPECT_NE(err.find(c.needle), std::string::npos) << "wanted '" << c.needle << "', got '" << err << "'";
  }
}

// Initializers that declare more than they hold are refused before anything is allocated: raw
// data of the wrong size, a 10^12-element shape, external data past its file or with a
// malformed offset.
TEST(MalformedModels, ExternalDataAndGiantInitializers) {
  const std::string dir = testing::scratch_dir("malformed_external");
  {
    std::ofstream f(dir + "/w.bin", std::ios::binary);
    f << std::string(4 * 12, '\0');
  }
  auto with_weight = [](const std::vector<int64_t>& dims, const std::function<void(onnx::TensorProto*)>& fill) {
    onnx::ModelProto m;
    m.ParseFromString(model("Conv", {"x", "w"}, {}));
    auto* t = m.mutable_graph()->add_initializer();
    t->set_name("w");
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    fill(t);
    return m.SerializeAsString();
  };
  auto external = [](const std::string& offset, const std::string& length) {
    return [=](onnx::TensorProto* t) {
      t->set_data_location(onnx::TensorProto::EXTERNAL);
      auto kv = [&](const char* k, const std::string& v) {
        auto* e = t->add_external_data();
        e->set_key(k);
        e->set_value(v);
      };
      kv("location", "w.bin");
      if (!offset.empty()) kv("offset", offset);
      if (!length.empty()) kv("length", length);
    };
  };
  struct Case {
    std::string bytes, needle;
  } cases[] = {
      {with_weight({4, 3, 1, 1}, [](onnx::TensorProto* t) { t->set_raw_data(std::string(40, '\0')); }),
       "raw data has 40 bytes"},
      {with_weight({1000000, 1000000, 1, 1}, [](onnx::TensorProto* t) { t->set_raw_data(std::string(4, '\0')); }),
       "more than 2^36 elements"},
      {with_weight({-4, 3, 1, 1}, [](onnx::TensorProto* t) {}), "negative dimension"},
      {with_weight({4, 3, 1, 1}, external("8", "")), "runs past the end"},
      {with_weight({4, 3, 1, 1}, external("999999999999", "")), "runs past the end"},
      {with_weight({4, 3, 1, 1}, external("-8", "")), "not a byte count"},
      {with_weight({4, 3, 1, 1}, external("12abc", "")), "not a byte count"},
      {with_weight({4, 3, 1, 1}, external("0", "99999999999999999999")), "not a byte count"},
      {with_weight({65536, 65536, 4, 1}, external("0", "")), "runs past the end"},
  };
  for (const Case& c : cases) {
    auto g = frontend::import_onnx_bytes(c.bytes, dir);
    const std::string err = g.ok() ? "" : g.status().message();
    EXPECT_NE(err.find(c.needle), std::string::npos) << "wanted '" << c.needle << "', got '" << err << "'";
  }
  // The well-formed external weight imports.
  auto ok = frontend::import_onnx_bytes(with_weight({4, 3, 1, 1}, external("0", "48")), dir);
  EXPECT_TRUE(ok.ok()) << ok.status().message();
}

}  // namespace systolic
