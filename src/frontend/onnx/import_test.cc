// ONNX import: valid models, and a clear error for every kind of bad file.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>

#include "frontend/onnx/import.h"
#include "tools/zoo/zoo.h"

namespace systolic::frontend {
namespace {

onnx::ModelProto tiny_model(const std::vector<std::string>& ops, int opset = 13) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* os = m.add_opset_import();
  os->set_domain("");
  os->set_version(opset);
  auto* g = m.mutable_graph();
  auto* in = g->add_input();
  in->set_name("x");
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_value(4);
  std::string prev = "x";
  for (std::size_t i = 0; i < ops.size(); ++i) {
    auto* n = g->add_node();
    n->set_op_type(ops[i]);
    n->add_input(prev);
    prev = "t" + std::to_string(i);
    n->add_output(prev);
  }
  g->add_output()->set_name(prev);
  return m;
}

}  // namespace

TEST(OnnxImport, ZooModelImports) {
  onnx::ModelProto m;
  ASSERT_TRUE(zoo::zoo_build("resnet18", 0, &m).ok());
  auto g = import_onnx_bytes(m.SerializeAsString(), "");
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->inputs.size(), 1u);
  EXPECT_EQ(g->t(g->inputs[0]).shape, (ir::Shape{-1, 3, 224, 224}));
  EXPECT_EQ(g->nodes.size(), static_cast<std::size_t>(m.graph().node_size()));
}

TEST(OnnxImport, ListsEveryUnsupportedOp) {
  auto g = import_onnx_bytes(tiny_model({"Relu", "STFT", "Relu", "TfIdfVectorizer", "STFT"}).SerializeAsString(), "");
  ASSERT_FALSE(g.ok());
  const std::string msg = g.status().message();
  EXPECT_NE(msg.find("unsupported ops"), std::string::npos) << "message: " << msg;
  EXPECT_NE(msg.find("STFT (opset 13)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("TfIdfVectorizer (opset 13)"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("Relu"), std::string::npos) << msg;
}

TEST(OnnxImport, RejectsGarbageTruncatedAndNewOpset) {
  auto g = import_onnx_bytes("this is not a model at all", "");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("not a valid ONNX model"), std::string::npos);
  onnx::ModelProto m;
  ASSERT_TRUE(zoo::zoo_build("mobilenet_v2", 0, &m).ok());
  const std::string bytes = m.SerializeAsString();
  for (double frac : {0.001, 0.3, 0.97}) {
    auto t = import_onnx_bytes(bytes.substr(0, static_cast<std::size_t>(bytes.size() * frac)), "");
    EXPECT_FALSE(t.ok()) << frac;
  }
  auto e = import_onnx_bytes("", "");
  EXPECT_FALSE(e.ok());
  auto v = import_onnx_bytes(tiny_model({"Relu"}, 99).SerializeAsString(), "");
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("opset 99"), std::string::npos);
  auto missing = import_onnx_file("/nonexistent/model.onnx");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("cannot open"), std::string::npos);
}

TEST(OnnxImport, NamesAreDefinedOnce) {
  // A second initializer of one name (here of another type) must not silently replace the first.
  onnx::ModelProto m = tiny_model({"Relu"});
  for (auto type : {onnx::TensorProto::FLOAT, onnx::TensorProto::INT16}) {
    auto* w = m.mutable_graph()->add_initializer();
    w->set_name("w");
    w->set_data_type(type);
    w->add_dims(1);
    type == onnx::TensorProto::FLOAT ? w->add_float_data(1.f) : w->add_int32_data(1);
  }
  auto g = import_onnx_bytes(m.SerializeAsString(), "");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("initializer w is defined twice"), std::string::npos) << g.status().message();
  m = tiny_model({"Relu"});
  *m.mutable_graph()->add_input() = m.graph().input(0);
  g = import_onnx_bytes(m.SerializeAsString(), "");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("graph input x is listed twice"), std::string::npos) << g.status().message();
  m = tiny_model({"Relu"});
  *m.mutable_graph()->add_output() = m.graph().output(0);
  g = import_onnx_bytes(m.SerializeAsString(), "");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("graph output t0 is listed twice"), std::string::npos) << g.status().message();
}

TEST(OnnxImport, NormalizesOldOpsets) {
  // Opset 10 Clip carries min/max as attributes; import makes them constant inputs.
  onnx::ModelProto m = tiny_model({"Clip"}, 10);
  auto* a = m.mutable_graph()->mutable_node(0)->add_attribute();
  a->set_name("max");
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(6.f);
  auto g = import_onnx_bytes(m.SerializeAsString(), "");
  ASSERT_TRUE(g.ok()) << g.status().message();
  const ir::Node& n = g->nodes[0];
  ASSERT_EQ(n.inputs.size(), 3u);
  EXPECT_EQ(g->t(n.inputs[2]).as<float>()[0], 6.f);
}

TEST(OnnxImport, ExternalData) {
  onnx::ModelProto m;
  ASSERT_TRUE(zoo::zoo_build("mobilenet_v2", 0, &m).ok());
  auto inline_graph = import_onnx_bytes(m.SerializeAsString(), "");
  ASSERT_TRUE(inline_graph.ok());
  // Move every initializer's bytes into one side file, as exporters do for large models.
  const std::string dir = ::testing::TempDir();
  std::ofstream data(dir + "/weights.bin", std::ios::binary);
  int64_t offset = 0;
  for (auto& t : *m.mutable_graph()->mutable_initializer()) {
    const std::string raw = t.raw_data();
    data << raw;
    t.clear_raw_data();
    t.set_data_location(onnx::TensorProto::EXTERNAL);
    auto* loc = t.add_external_data();
    loc->set_key("location");
    loc->set_value("weights.bin");
    auto* off = t.add_external_data();
    off->set_key("offset");
    off->set_value(std::to_string(offset));
    auto* len = t.add_external_data();
    len->set_key("length");
    len->set_value(std::to_string(raw.size()));
    offset += static_cast<int64_t>(raw.size());
  }
  data.close();
  auto g = import_onnx_bytes(m.SerializeAsString(), dir);
  ASSERT_TRUE(g.ok()) << g.status().message();
  ASSERT_EQ(g->tensors.size(), inline_graph->tensors.size());
  for (std::size_t i = 0; i < g->tensors.size(); ++i)
    if (g->tensors[i].is_const()) {
      EXPECT_EQ(*g->tensors[i].data, *inline_graph->tensors[i].data) << g->tensors[i].name;
    }
  // A missing side file is an error naming it.
  auto missing = import_onnx_bytes(m.SerializeAsString(), dir + "/nowhere");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("weights.bin"), std::string::npos) << missing.status().message();
}

// A side file that is not a regular file has no size to check offsets against: a folder (named
// outright, or reached through a NUL that cuts the name short) is refused before any allocation.
TEST(OnnxImport, ExternalDataMustBeARegularFile) {
  const std::string dir = ::testing::TempDir() + "/external_folder";
  std::filesystem::create_directories(dir + "/sub");
  const std::pair<std::string, std::string> cases[] = {{"sub", "is not a regular file"},
                                                       {std::string("\0\0bin", 5), "holds a NUL byte"}};
  for (const auto& [location, expected] : cases) {
    onnx::ModelProto m;
    m.set_ir_version(8);
    m.add_opset_import()->set_version(17);
    auto* g = m.mutable_graph();
    auto* t = g->add_initializer();
    t->set_name("w");
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : {1 << 16, 1 << 16}) t->add_dims(d);  // 16 GiB if it were read
    t->set_data_location(onnx::TensorProto::EXTERNAL);
    auto* loc = t->add_external_data();
    loc->set_key("location");
    loc->set_value(location);
    auto* node = g->add_node();
    node->set_op_type("Relu");
    node->add_input("w");
    node->add_output("y");
    g->add_output()->set_name("y");
    auto r = import_onnx_bytes(m.SerializeAsString(), dir);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find(expected), std::string::npos) << r.status().message();
  }
}

}  // namespace systolic::frontend
