// read_signature: declared inputs (initializers excluded), symbolic dims by name, metadata, and
// the same errors as opening the model for a missing or garbage file.
#include "systolic/signature.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/temp_dir.h"
#include "tests/tiny_onnx.h"

namespace systolic {
namespace {

TEST(Signature, DeclaredInterface) {
  const std::string dir = testing::scratch_dir("signature");
  const std::string p = dir + "/tiny.onnx";
  std::ofstream(p, std::ios::binary) << testing::tiny_conv_onnx(1, 0, true);
  auto s = read_signature(p);
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(s->inputs.size(), 1u);
  EXPECT_EQ(s->inputs[0].name, "input");
  EXPECT_EQ(s->inputs[0].dtype, DType::f32);
  EXPECT_EQ(s->inputs[0].shape, (std::vector<int64_t>{-1, 3, -1, -1}));
  EXPECT_EQ(s->inputs[0].dim_params, (std::vector<std::string>{"N", "", "H", "W"}));
  ASSERT_EQ(s->outputs.size(), 1u);
  EXPECT_EQ(s->outputs[0].name, "y");
  EXPECT_FALSE(s->outputs[0].shape_known);
  EXPECT_EQ(s->graph_name, "tiny");
}

TEST(Signature, Errors) {
  const std::string dir = testing::scratch_dir("signature_errors");
  auto missing = read_signature(dir + "/none.onnx");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("cannot open model file"), std::string::npos);
  const std::string p = dir + "/garbage.onnx";
  std::ofstream(p, std::ios::binary) << "\x0a\xff\xff\xff garbage";
  auto bad = read_signature(p);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("not a valid ONNX model"), std::string::npos);
  auto open = Model::open(p);
  ASSERT_FALSE(open.ok());
  EXPECT_EQ(open.status().message(), bad.status().message());
}

}  // namespace
}  // namespace systolic
