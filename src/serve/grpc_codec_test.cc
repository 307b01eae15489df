#include "serve/grpc_codec.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>

namespace systolic::serve {
namespace {

using Req = inference::ModelInferRequest;

template <typename T>
std::string bytes_of(std::initializer_list<T> v) {
  std::string s(v.size() * sizeof(T), '\0');
  std::size_t i = 0;
  for (T x : v) std::memcpy(s.data() + sizeof(T) * i++, &x, sizeof(T));
  return s;
}

std::string bytes_elements(std::initializer_list<std::string> v) {
  std::string s;
  for (const auto& e : v) {
    const uint32_t n = static_cast<uint32_t>(e.size());
    s.append(reinterpret_cast<const char*>(&n), 4);
    s += e;
  }
  return s;
}

Req::InferInputTensor* add_input(Req& m, const std::string& name, const std::string& dt, std::vector<int64_t> shape) {
  auto* in = m.add_inputs();
  in->set_name(name);
  in->set_datatype(dt);
  for (int64_t d : shape) in->add_shape(d);
  return in;
}

InferRequest decode_ok(Req& m) {
  auto r = decode_infer_request(m);
  if (auto* e = std::get_if<Error>(&r)) ADD_FAILURE() << e->message;
  return std::holds_alternative<InferRequest>(r) ? std::get<InferRequest>(std::move(r)) : InferRequest{};
}

Error decode_err(Req& m) {
  auto r = decode_infer_request(m);
  if (!std::holds_alternative<Error>(r)) {
    ADD_FAILURE() << "decoded without an error";
    return {};
  }
  return std::get<Error>(r);
}

TEST(GrpcCodec, RawInputsParametersAndOutputs) {
  Req m;
  m.set_model_name("resnet");
  m.set_model_version("2");
  m.set_id("req-7");
  (*m.mutable_parameters())["timeout"].set_int64_param(5000);
  (*m.mutable_parameters())["priority"].set_uint64_param(3);
  (*m.mutable_parameters())["tag"].set_string_param("x");
  (*m.mutable_parameters())["scale"].set_double_param(0.5);
  (*m.mutable_parameters())["flag"].set_bool_param(true);
  add_input(m, "x", "FP32", {1, 3});
  add_input(m, "ids", "BYTES", {2});
  m.add_raw_input_contents(bytes_of<float>({1.f, 2.f, 3.f}));
  m.add_raw_input_contents(bytes_elements({"ab", ""}));
  auto* o = m.add_outputs();
  o->set_name("probs");
  (*o->mutable_parameters())["classification"].set_int64_param(5);
  (*o->mutable_parameters())["other"].set_bool_param(false);

  InferRequest r = decode_ok(m);
  EXPECT_EQ(r.model, "resnet");
  EXPECT_EQ(r.version, "2");
  EXPECT_EQ(r.id, "req-7");
  EXPECT_EQ(r.timeout_us, 5000);
  EXPECT_EQ(r.parameters.count("timeout"), 0u);
  EXPECT_EQ(std::get<int64_t>(r.parameters.at("priority")), 3);
  EXPECT_EQ(std::get<std::string>(r.parameters.at("tag")), "x");
  EXPECT_EQ(std::get<double>(r.parameters.at("scale")), 0.5);
  EXPECT_EQ(std::get<bool>(r.parameters.at("flag")), true);
  ASSERT_EQ(r.inputs.size(), 2u);
  EXPECT_EQ(r.inputs[0].name, "x");
  EXPECT_EQ(r.inputs[0].datatype, "FP32");
  EXPECT_EQ(r.inputs[0].shape, (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(r.inputs[0].data, bytes_of<float>({1.f, 2.f, 3.f}));
  EXPECT_EQ(r.inputs[1].data, bytes_elements({"ab", ""}));
  EXPECT_TRUE(m.raw_input_contents(0).empty());  // moved, not copied
  ASSERT_EQ(r.outputs.size(), 1u);
  EXPECT_EQ(r.outputs[0].name, "probs");
  EXPECT_EQ(r.outputs[0].classification, 5);
  EXPECT_EQ(r.outputs[0].parameters.count("classification"), 0u);
  EXPECT_EQ(std::get<bool>(r.outputs[0].parameters.at("other")), false);
}

TEST(GrpcCodec, TypedContentsOfEveryDatatype) {
  Req m;
  m.set_model_name("m");
  auto* c = add_input(m, "bool", "BOOL", {3})->mutable_contents();
  for (bool b : {true, false, true}) c->add_bool_contents(b);
  c = add_input(m, "i8", "INT8", {2})->mutable_contents();
  for (int v : {-128, 127}) c->add_int_contents(v);
  c = add_input(m, "i16", "INT16", {2})->mutable_contents();
  for (int v : {-32768, 1234}) c->add_int_contents(v);
  c = add_input(m, "i32", "INT32", {2})->mutable_contents();
  for (int v : {INT32_MIN, 7}) c->add_int_contents(v);
  c = add_input(m, "i64", "INT64", {2})->mutable_contents();
  for (int64_t v : {INT64_MIN, int64_t{1} << 40}) c->add_int64_contents(v);
  c = add_input(m, "u8", "UINT8", {2})->mutable_contents();
  for (uint32_t v : {0u, 255u}) c->add_uint_contents(v);
  c = add_input(m, "u16", "UINT16", {2})->mutable_contents();
  for (uint32_t v : {1u, 65535u}) c->add_uint_contents(v);
  c = add_input(m, "u32", "UINT32", {2})->mutable_contents();
  for (uint32_t v : {0u, UINT32_MAX}) c->add_uint_contents(v);
  c = add_input(m, "u64", "UINT64", {1})->mutable_contents();
  c->add_uint64_contents(UINT64_MAX);
  c = add_input(m, "f32", "FP32", {2, 2})->mutable_contents();
  for (float v : {1.5f, -2.f, 0.f, 3.25f}) c->add_fp32_contents(v);
  c = add_input(m, "f64", "FP64", {1})->mutable_contents();
  c->add_fp64_contents(-0.125);
  c = add_input(m, "str", "BYTES", {1, 3})->mutable_contents();
  for (const std::string& s : {std::string("cat"), std::string(), std::string("\xff\x00z", 3)}) c->add_bytes_contents(s);
  add_input(m, "empty", "FP32", {0, 4});

  InferRequest r = decode_ok(m);
  ASSERT_EQ(r.inputs.size(), 13u);
  EXPECT_EQ(r.inputs[0].data, std::string("\x01\x00\x01", 3));
  EXPECT_EQ(r.inputs[1].data, bytes_of<int8_t>({-128, 127}));
  EXPECT_EQ(r.inputs[2].data, bytes_of<int16_t>({-32768, 1234}));
  EXPECT_EQ(r.inputs[3].data, bytes_of<int32_t>({INT32_MIN, 7}));
  EXPECT_EQ(r.inputs[4].data, bytes_of<int64_t>({INT64_MIN, int64_t{1} << 40}));
  EXPECT_EQ(r.inputs[5].data, bytes_of<uint8_t>({0, 255}));
  EXPECT_EQ(r.inputs[6].data, bytes_of<uint16_t>({1, 65535}));
  EXPECT_EQ(r.inputs[7].data, bytes_of<uint32_t>({0, UINT32_MAX}));
  EXPECT_EQ(r.inputs[8].data, bytes_of<uint64_t>({UINT64_MAX}));
  EXPECT_EQ(r.inputs[9].data, bytes_of<float>({1.5f, -2.f, 0.f, 3.25f}));
  EXPECT_EQ(r.inputs[10].data, bytes_of<double>({-0.125}));
  EXPECT_EQ(r.inputs[11].data, bytes_elements({"cat", "", std::string("\xff\x00z", 3)}));
  EXPECT_EQ(r.inputs[11].shape, (std::vector<int64_t>{1, 3}));
  EXPECT_TRUE(r.inputs[12].data.empty());
}

TEST(GrpcCodec, HalfPrecisionOnlyRaw) {
  Req raw;
  raw.set_model_name("m");
  add_input(raw, "h", "FP16", {2});
  add_input(raw, "b", "BF16", {1});
  raw.add_raw_input_contents(bytes_of<uint16_t>({0x3c00, 0x4000}));
  raw.add_raw_input_contents(bytes_of<uint16_t>({0x3f80}));
  InferRequest r = decode_ok(raw);
  EXPECT_EQ(r.inputs[0].data.size(), 4u);
  EXPECT_EQ(r.inputs[1].data.size(), 2u);

  Req typed;
  typed.set_model_name("m");
  add_input(typed, "h", "FP16", {1})->mutable_contents()->add_fp32_contents(1.f);
  Error e = decode_err(typed);
  EXPECT_EQ(e.code, Code::invalid_argument);
  EXPECT_NE(e.message.find("raw_input_contents"), std::string::npos) << e.message;

  Req none;
  none.set_model_name("m");
  add_input(none, "h", "FP16", {1});
  EXPECT_NE(decode_err(none).message.find("raw_input_contents"), std::string::npos);
}

struct BadCase {
  const char* what;
  std::function<void(Req&)> build;
  const char* message_part;
};

TEST(GrpcCodec, InvalidRequests) {
  const std::vector<BadCase> cases = {
      {"no model", [](Req& m) { m.clear_model_name(); }, "model_name"},
      {"raw and typed mixed",
       [](Req& m) {
         add_input(m, "a", "FP32", {1});
         add_input(m, "b", "FP32", {1})->mutable_contents()->add_fp32_contents(1.f);
         m.add_raw_input_contents(bytes_of<float>({1.f}));
         m.add_raw_input_contents(bytes_of<float>({1.f}));
       },
       "one or the other"},
      {"raw count",
       [](Req& m) {
         add_input(m, "a", "FP32", {1});
         add_input(m, "b", "FP32", {1});
         m.add_raw_input_contents(bytes_of<float>({1.f}));
       },
       "1 raw_input_contents for 2 inputs"},
      {"raw size",
       [](Req& m) {
         add_input(m, "a", "FP32", {2, 2});
         m.add_raw_input_contents(bytes_of<float>({1.f, 2.f, 3.f}));
       },
       "12 bytes for FP32 shape [2,2] (16 expected)"},
      {"typed count",
       [](Req& m) {
         auto* c = add_input(m, "a", "INT64", {3})->mutable_contents();
         c->add_int64_contents(1);
         c->add_int64_contents(2);
       },
       "2 int64_contents for shape [3] (3 elements)"},
      {"typed missing", [](Req& m) { add_input(m, "a", "FP32", {2}); }, "0 fp32_contents"},
      {"wrong typed field",
       [](Req& m) { add_input(m, "a", "FP32", {1})->mutable_contents()->add_fp64_contents(1.0); },
       "FP32 goes in fp32_contents"},
      {"two typed fields",
       [](Req& m) {
         auto* c = add_input(m, "a", "INT32", {1})->mutable_contents();
         c->add_int_contents(1);
         c->add_int64_contents(1);
       },
       "has int64_contents"},
      {"int8 range",
       [](Req& m) { add_input(m, "a", "INT8", {1})->mutable_contents()->add_int_contents(200); },
       "out of range for INT8"},
      {"uint16 range",
       [](Req& m) { add_input(m, "a", "UINT16", {1})->mutable_contents()->add_uint_contents(70000); },
       "out of range for UINT16"},
      {"unknown datatype",
       [](Req& m) {
         add_input(m, "a", "FLOAT", {1});
         m.add_raw_input_contents(bytes_of<float>({1.f}));
       },
       "unknown datatype 'FLOAT'"},
      {"negative dim",
       [](Req& m) {
         add_input(m, "a", "FP32", {-1, 3});
         m.add_raw_input_contents("");
       },
       "invalid shape [-1,3]"},
      {"no input name",
       [](Req& m) {
         add_input(m, "", "FP32", {1});
         m.add_raw_input_contents(bytes_of<float>({1.f}));
       },
       "no name"},
      {"bytes truncated prefix",
       [](Req& m) {
         add_input(m, "s", "BYTES", {1});
         m.add_raw_input_contents(std::string("\x02\x00", 2));
       },
       "truncated length prefix"},
      {"bytes overrun",
       [](Req& m) {
         add_input(m, "s", "BYTES", {1});
         m.add_raw_input_contents(std::string("\x09\x00\x00\x00" "abc", 7));
       },
       "claims 9 bytes, 3 remain"},
      {"bytes count",
       [](Req& m) {
         add_input(m, "s", "BYTES", {3});
         m.add_raw_input_contents(bytes_elements({"a", "b"}));
       },
       "holds 2 elements, the shape needs 3"},
      {"timeout type", [](Req& m) { (*m.mutable_parameters())["timeout"].set_string_param("5s"); }, "'timeout'"},
      {"uint64 param overflow",
       [](Req& m) { (*m.mutable_parameters())["seq"].set_uint64_param(UINT64_MAX); }, "exceeds int64"},
      {"empty param", [](Req& m) { (*m.mutable_parameters())["p"]; }, "has no value"},
      {"classification type",
       [](Req& m) {
         auto* o = m.add_outputs();
         o->set_name("y");
         (*o->mutable_parameters())["classification"].set_string_param("3");
       },
       "'classification'"},
      {"output name", [](Req& m) { m.add_outputs(); }, "output has no name"},
  };
  for (const auto& c : cases) {
    Req m;
    m.set_model_name("m");
    c.build(m);
    Error e = decode_err(m);
    EXPECT_EQ(e.code, Code::invalid_argument) << c.what;
    EXPECT_NE(e.message.find(c.message_part), std::string::npos) << c.what << ": " << e.message;
  }
}

TEST(GrpcCodec, ResponseGoesRaw) {
  InferResponse r;
  r.model = "resnet";
  r.version = "1";
  r.id = "abc";
  r.outputs.push_back({"logits", "FP32", {2, 3}, bytes_of<float>({1, 2, 3, 4, 5, 6}), {}});
  r.outputs.push_back({"top", "BYTES", {2, 1}, bytes_elements({"0.9:1:cat", "0.8:2:dog"}), {{"k", int64_t{1}}}});
  inference::ModelInferResponse m;
  encode_infer_response(std::move(r), &m);
  EXPECT_EQ(m.model_name(), "resnet");
  EXPECT_EQ(m.model_version(), "1");
  EXPECT_EQ(m.id(), "abc");
  ASSERT_EQ(m.outputs_size(), 2);
  ASSERT_EQ(m.raw_output_contents_size(), 2);
  EXPECT_EQ(m.outputs(0).name(), "logits");
  EXPECT_EQ(m.outputs(0).datatype(), "FP32");
  EXPECT_EQ(std::vector<int64_t>(m.outputs(0).shape().begin(), m.outputs(0).shape().end()),
            (std::vector<int64_t>{2, 3}));
  EXPECT_FALSE(m.outputs(0).has_contents());
  EXPECT_EQ(m.raw_output_contents(0), bytes_of<float>({1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(m.outputs(1).datatype(), "BYTES");
  EXPECT_EQ(m.raw_output_contents(1), bytes_elements({"0.9:1:cat", "0.8:2:dog"}));
  EXPECT_EQ(m.outputs(1).parameters().at("k").int64_param(), 1);
}

TEST(GrpcCodec, ParamsRoundTrip) {
  Params p{{"b", true}, {"i", int64_t{-4}}, {"d", 2.5}, {"s", std::string("v")}};
  ProtoParams proto;
  encode_params(p, &proto);
  auto back = decode_params(proto);
  ASSERT_TRUE(std::holds_alternative<Params>(back));
  EXPECT_EQ(std::get<Params>(back), p);
}

TEST(GrpcCodec, ModelMetadata) {
  serve::ModelMetadata md{"resnet", {"1", "2"}, "onnx_onnxv1",
                          {{"input", "FP32", {-1, 3, 224, 224}}}, {{"logits", "FP32", {-1, 1000}}}};
  inference::ModelMetadataResponse m;
  encode_model_metadata(md, &m);
  EXPECT_EQ(m.name(), "resnet");
  ASSERT_EQ(m.versions_size(), 2);
  EXPECT_EQ(m.versions(1), "2");
  EXPECT_EQ(m.platform(), "onnx_onnxv1");
  ASSERT_EQ(m.inputs_size(), 1);
  EXPECT_EQ(m.inputs(0).name(), "input");
  EXPECT_EQ(m.inputs(0).shape(0), -1);
  EXPECT_EQ(m.inputs(0).shape_size(), 4);
  EXPECT_EQ(m.outputs(0).shape(1), 1000);
}

TEST(GrpcCodec, ModelConfigFromTritonJson) {
  const std::string json = R"({
    "name": "resnet", "platform": "onnx_onnxv1", "backend": "systolic", "max_batch_size": 8,
    "input": [{"name": "input", "data_type": "TYPE_FP32", "dims": [3, 224, 224], "format": "FORMAT_NCHW"}],
    "output": [{"name": "logits", "data_type": "TYPE_FP32", "dims": [1000], "label_filename": "labels.txt"}],
    "dynamic_batching": {"preferred_batch_size": [4, 8], "max_queue_delay_microseconds": 100,
                         "default_queue_policy": {"max_queue_size": 64}},
    "instance_group": [{"name": "g", "count": 2, "kind": "KIND_CPU"}],
    "version_policy": {"latest": {"num_versions": 1}},
    "parameters": {"precision": {"string_value": "fp32"}}
  })";
  inference::ModelConfig c;
  ASSERT_FALSE(decode_model_config(json, &c).has_value());
  EXPECT_EQ(c.name(), "resnet");
  EXPECT_EQ(c.platform(), "onnx_onnxv1");
  EXPECT_EQ(c.backend(), "systolic");
  EXPECT_EQ(c.max_batch_size(), 8);
  ASSERT_EQ(c.input_size(), 1);
  EXPECT_EQ(c.input(0).data_type(), inference::TYPE_FP32);
  EXPECT_EQ(c.input(0).dims_size(), 3);
  EXPECT_EQ(c.input(0).dims(2), 224);
  EXPECT_EQ(c.output(0).label_filename(), "labels.txt");
  ASSERT_TRUE(c.has_dynamic_batching());
  EXPECT_EQ(c.dynamic_batching().preferred_batch_size(1), 8);
  EXPECT_EQ(c.dynamic_batching().max_queue_delay_microseconds(), 100u);
  EXPECT_EQ(c.dynamic_batching().default_queue_policy().max_queue_size(), 64u);
  ASSERT_EQ(c.instance_group_size(), 1);
  EXPECT_EQ(c.instance_group(0).count(), 2);
  EXPECT_EQ(c.instance_group(0).kind(), inference::ModelInstanceGroup::KIND_CPU);

  // A config without dynamic batching leaves the field absent (perf_analyzer reads presence).
  inference::ModelConfig plain;
  ASSERT_FALSE(decode_model_config(R"({"name":"m","max_batch_size":0})", &plain).has_value());
  EXPECT_FALSE(plain.has_dynamic_batching());

  inference::ModelConfig bad;
  auto e = decode_model_config("{\"name\": ", &bad);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->code, Code::internal);
}

TEST(GrpcCodec, StatusCodes) {
  EXPECT_EQ(grpc_code(Code::ok), grpc::StatusCode::OK);
  EXPECT_EQ(grpc_code(Code::invalid_argument), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(grpc_code(Code::not_found), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(grpc_code(Code::unavailable), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(grpc_code(Code::unimplemented), grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_EQ(grpc_code(Code::internal), grpc::StatusCode::INTERNAL);
  grpc::Status s = grpc_status(Error{Code::not_found, "no model 'x'"});
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(s.error_message(), "no model 'x'");
}

}  // namespace
}  // namespace systolic::serve
