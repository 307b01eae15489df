// Tests of the model zoo: structure, parameter counts vs torchvision, seeded determinism.
#include "tools/zoo/zoo.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <map>
#include <set>

namespace systolic::zoo {
namespace {

struct Expect {
  const char* name;
  int64_t params;  // torchvision's sum(p.numel() for p in model.parameters())
  std::map<std::string, int> ops;
};

const Expect kExpect[] = {
    {"resnet18", 11689512,
     {{"Conv", 20}, {"BatchNormalization", 20}, {"Relu", 17}, {"Add", 8}, {"MaxPool", 1},
      {"GlobalAveragePool", 1}, {"Flatten", 1}, {"Gemm", 1}}},
    {"resnet50", 25557032,
     {{"Conv", 53}, {"BatchNormalization", 53}, {"Relu", 49}, {"Add", 16}, {"MaxPool", 1},
      {"GlobalAveragePool", 1}, {"Flatten", 1}, {"Gemm", 1}}},
    {"mobilenet_v2", 3504872,
     {{"Conv", 52}, {"BatchNormalization", 52}, {"Clip", 35}, {"Add", 10},
      {"GlobalAveragePool", 1}, {"Flatten", 1}, {"Dropout", 1}, {"Gemm", 1}}},
};

void ExpectShape(const onnx::ValueInfoProto& v, const char* name, std::vector<int64_t> dims) {
  EXPECT_EQ(v.name(), name);
  const auto& t = v.type().tensor_type();
  EXPECT_EQ(t.elem_type(), onnx::TensorProto::FLOAT);
  ASSERT_EQ(t.shape().dim_size(), int(dims.size() + 1));
  EXPECT_EQ(t.shape().dim(0).dim_param(), "N");
  for (size_t i = 0; i < dims.size(); ++i) EXPECT_EQ(t.shape().dim(i + 1).dim_value(), dims[i]);
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

TEST(Zoo, NamesAreTheThreeModels) {
  EXPECT_EQ(zoo_names(), (std::vector<std::string>{"mobilenet_v2", "resnet18", "resnet50"}));
  onnx::ModelProto m;
  EXPECT_FALSE(zoo_build("vgg16", 0, &m).ok());
}

TEST(Zoo, ModelsMatchTorchvision) {
  for (const Expect& e : kExpect) {
    SCOPED_TRACE(e.name);
    onnx::ModelProto m;
    ASSERT_TRUE(zoo_build(e.name, 1, &m).ok());
    EXPECT_EQ(m.ir_version(), 8);
    ASSERT_EQ(m.opset_import_size(), 1);
    EXPECT_EQ(m.opset_import(0).domain(), "");
    EXPECT_EQ(m.opset_import(0).version(), 13);
    const auto& g = m.graph();
    ASSERT_EQ(g.input_size(), 1);
    ASSERT_EQ(g.output_size(), 1);
    ExpectShape(g.input(0), "input", {3, 224, 224});
    ExpectShape(g.output(0), "logits", {1000});

    std::map<std::string, int> ops;
    for (const auto& n : g.node()) ops[n.op_type()]++;
    EXPECT_EQ(ops, e.ops);

    // Learnable parameters are the ".weight"/".bias" initializers (running stats, Clip
    // bounds and the dropout ratio are not parameters).
    int64_t params = 0;
    for (const auto& t : g.initializer()) {
      ASSERT_EQ(t.data_type(), onnx::TensorProto::FLOAT) << t.name();
      int64_t n = 1;
      for (int64_t d : t.dims()) n *= d;
      ASSERT_EQ(t.raw_data().size(), size_t(n) * 4) << t.name();
      if (EndsWith(t.name(), ".weight") || EndsWith(t.name(), ".bias")) params += n;
    }
    EXPECT_EQ(params, e.params);

    // Well-formed graph (what onnx::checker would catch structurally): names unique, every
    // input defined before use, nodes in topological order, output produced.
    std::set<std::string> defined = {"input"}, node_names;
    for (const auto& t : g.initializer()) EXPECT_TRUE(defined.insert(t.name()).second) << t.name();
    for (const auto& n : g.node()) {
      EXPECT_TRUE(node_names.insert(n.name()).second) << n.name();
      for (const auto& i : n.input()) EXPECT_TRUE(defined.count(i)) << n.name() << " <- " << i;
      for (const auto& o : n.output()) EXPECT_TRUE(defined.insert(o).second) << o;
    }
    EXPECT_TRUE(defined.count("logits"));
  }
}

TEST(Zoo, SeedDeterminesWeights) {
  for (const char* name : {"resnet18", "mobilenet_v2"}) {
    SCOPED_TRACE(name);
    onnx::ModelProto a, b, c;
    ASSERT_TRUE(zoo_build(name, 7, &a).ok());
    ASSERT_TRUE(zoo_build(name, 7, &b).ok());
    ASSERT_TRUE(zoo_build(name, 8, &c).ok());
    std::string sa = a.SerializeAsString(), sb = b.SerializeAsString(), sc = c.SerializeAsString();
    EXPECT_EQ(sa, sb);
    EXPECT_EQ(sa.size(), sc.size());
    EXPECT_NE(sa, sc);
  }
}

}  // namespace
}  // namespace systolic::zoo
