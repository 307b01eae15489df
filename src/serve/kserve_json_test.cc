// Tests for the REST body codec: JSON (flat and nested, every datatype, range checks), the binary
// tensor data extension both ways, parameters, and malformed bodies (errors, never throws).
#include "serve/kserve_json.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

namespace systolic::serve {
namespace {

using json = nlohmann::json;

template <typename T>
std::string raw(std::initializer_list<T> v) {
  std::string s(v.size() * sizeof(T), '\0');
  std::memcpy(s.data(), std::data(v), s.size());
  return s;
}

std::string bytes_elems(std::initializer_list<std::string> v) {
  std::string s;
  for (const std::string& e : v) {
    uint32_t n = uint32_t(e.size());
    s.append(reinterpret_cast<const char*>(&n), 4);
    s += e;
  }
  return s;
}

InferRequest ok(const std::string& body, const std::string& header_length = "") {
  auto r = decode_rest_request(body, header_length, "m", "1");
  if (auto* e = std::get_if<Error>(&r)) {
    ADD_FAILURE() << "unexpected error: " << e->message;
    return {};
  }
  return std::get<InferRequest>(std::move(r));
}

// Expects a 400 whose message contains `what`.
void fails(const std::string& body, const std::string& what, const std::string& header_length = "") {
  auto r = decode_rest_request(body, header_length, "m", "1");
  ASSERT_TRUE(std::holds_alternative<Error>(r)) << "accepted: " << body.substr(0, 200);
  const Error& e = std::get<Error>(r);
  EXPECT_EQ(e.code, Code::invalid_argument);
  EXPECT_EQ(http_status(e.code), 400);
  EXPECT_NE(e.message.find(what), std::string::npos) << "message: " << e.message << "\nwanted: " << what;
}

std::string one_input(const std::string& datatype, const std::string& shape, const std::string& data,
                      const std::string& name = "x") {
  return R"({"inputs":[{"name":")" + name + R"(","datatype":")" + datatype + R"(","shape":)" + shape +
         R"(,"data":)" + data + "}]}";
}

TEST(KserveJson, FlatFp32) {
  InferRequest r = ok(R"({"id":"req-7","inputs":[{"name":"x","datatype":"FP32","shape":[2,3],"data":[1,2,3,4.5,5,-6]}]})");
  EXPECT_EQ(r.model, "m");
  EXPECT_EQ(r.version, "1");
  EXPECT_EQ(r.id, "req-7");
  ASSERT_EQ(r.inputs.size(), 1u);
  EXPECT_EQ(r.inputs[0].name, "x");
  EXPECT_EQ(r.inputs[0].datatype, "FP32");
  EXPECT_EQ(r.inputs[0].shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(r.inputs[0].data, raw<float>({1, 2, 3, 4.5f, 5, -6}));
  EXPECT_TRUE(r.outputs.empty());
  EXPECT_EQ(r.timeout_us, 0);
}

TEST(KserveJson, NestedAgreesWithShape) {
  std::string want = raw<float>({1, 2, 3, 4, 5, 6});
  EXPECT_EQ(ok(one_input("FP32", "[2,3]", "[[1,2,3],[4,5,6]]")).inputs[0].data, want);
  // Each nested level is one leading dimension; the innermost holds the rest.
  EXPECT_EQ(ok(one_input("FP32", "[1,2,3]", "[[[1,2,3],[4,5,6]]]")).inputs[0].data, want);
  EXPECT_EQ(ok(one_input("FP32", "[1,2,3]", "[[1,2,3,4,5,6]]")).inputs[0].data, want);
  EXPECT_EQ(ok(one_input("FP32", "[2,0]", "[[],[]]")).inputs[0].data, "");
  EXPECT_EQ(ok(one_input("FP32", "[0]", "[]")).inputs[0].data, "");
  EXPECT_EQ(ok(one_input("INT32", "[]", "[7]")).inputs[0].data, raw<int32_t>({7}));
  EXPECT_EQ(ok(one_input("INT32", "[1]", "7")).inputs[0].data, raw<int32_t>({7}));
}

TEST(KserveJson, NestedMustBeRectangular) {
  fails(one_input("FP32", "[2,3]", "[[1,2,3],[4,5]]"), "input 'x'");
  fails(one_input("FP32", "[2,3]", "[[1,2,3],[4,5]]"), "needs 3");
  fails(one_input("FP32", "[2,3]", "[[1,2,3]]"), "1 rows at depth 0");
  fails(one_input("FP32", "[2,3]", "[[1,2,3],4]"), "not rectangular");
  fails(one_input("FP32", "[2,3]", "[[1,2,3],[4,5,[6]]]"), "not rectangular");
  fails(one_input("FP32", "[6]", "[[1,2,3],[4,5,6]]"), "nested deeper than shape");
  fails(one_input("FP32", "[2,3]", "[1,2,3,4,5]"), "data has 5 elements where shape [2,3] has 6");
  fails(one_input("FP32", "[2,3]", "5"), "must be an array of 6 elements");
}

TEST(KserveJson, EveryDatatype) {
  struct Case {
    const char* dt;
    const char* data;
    std::string want;
  };
  const Case cases[] = {
      {"BOOL", "[true,false,1]", std::string("\1\0\1", 3)},
      {"UINT8", "[0,255,7]", raw<uint8_t>({0, 255, 7})},
      {"UINT16", "[0,65535,7]", raw<uint16_t>({0, 65535, 7})},
      {"UINT32", "[0,4294967295,7]", raw<uint32_t>({0, 4294967295u, 7})},
      {"UINT64", "[0,18446744073709551615,7]", raw<uint64_t>({0, 18446744073709551615ull, 7})},
      {"INT8", "[-128,127,-1]", raw<int8_t>({-128, 127, -1})},
      {"INT16", "[-32768,32767,-1]", raw<int16_t>({-32768, 32767, -1})},
      {"INT32", "[-2147483648,2147483647,-1.0]", raw<int32_t>({-2147483647 - 1, 2147483647, -1})},
      {"INT64", "[-9223372036854775808,9223372036854775807,-1]",
       raw<int64_t>({std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(), -1})},
      {"FP32", "[0.1,-3,1e30]", raw<float>({0.1f, -3.0f, 1e30f})},
      {"FP64", "[0.1,-3,1e300]", raw<double>({0.1, -3.0, 1e300})},
      {"BYTES", R"(["ab","","\u00e9"])", bytes_elems({"ab", "", "\xc3\xa9"})},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.dt);
    InferRequest r = ok(one_input(c.dt, "[3]", c.data));
    ASSERT_EQ(r.inputs.size(), 1u);
    EXPECT_EQ(r.inputs[0].datatype, c.dt);
    EXPECT_EQ(r.inputs[0].data, c.want);
  }
}

TEST(KserveJson, RangeChecksNameTheInput) {
  fails(one_input("UINT8", "[2]", "[1,300]", "pixels"), "input 'pixels': element 1 (300) is out of range for UINT8");
  fails(one_input("INT8", "[1]", "[-129]"), "out of range for INT8");
  fails(one_input("UINT32", "[1]", "[-1]"), "out of range for UINT32");
  fails(one_input("UINT64", "[1]", "[-1]"), "out of range for UINT64");
  fails(one_input("INT64", "[1]", "[9223372036854775808]"), "out of range for INT64");
  fails(one_input("INT64", "[1]", "[9.3e18]"), "out of range for INT64");
  fails(one_input("INT32", "[1]", "[1.5]"), "(1.5) is not an integer (INT32)");
  fails(one_input("FP32", "[1]", "[1e39]"), "out of range for FP32");
  fails(one_input("FP32", "[2]", R"([1,"2"])"), "element 1 (\"2\") is not a valid FP32");
  fails(one_input("FP32", "[1]", "[null]"), "is not a valid FP32");
  fails(one_input("FP32", "[1]", "[true]"), "is not a valid FP32");
  fails(one_input("BOOL", "[1]", "[2]"), "out of range for BOOL");
  fails(one_input("BOOL", "[1]", R"(["yes"])"), "is not a valid BOOL");
  fails(one_input("BYTES", "[1]", "[3]"), "is not a string (BYTES)");
  fails(one_input("INT32", "[1]", R"([{"a":1}])"), "is not a valid INT32");
}

TEST(KserveJson, Fp16IsBinaryOnly) {
  fails(one_input("FP16", "[1]", "[1.0]"), "FP16 data cannot be sent as JSON");
  fails(one_input("BF16", "[1]", "[1.0]"), "binary_data_size");
  fails(one_input("FP8", "[1]", "[1.0]"), "unknown datatype 'FP8'");
}

TEST(KserveJson, ParametersAndOutputs) {
  InferRequest r = ok(R"({"id":"a","parameters":{"timeout":250000,"binary_data_output":true,"priority":2,"tag":"t","w":0.5},
    "inputs":[{"name":"x","datatype":"INT32","shape":[1],"data":[1],"parameters":{"k":"v"}}],
    "outputs":[{"name":"probs","parameters":{"classification":3}},
               {"name":"logits","parameters":{"binary_data":false}},
               {"name":"feat"}]})");
  EXPECT_EQ(r.timeout_us, 250000);
  EXPECT_EQ(std::get<bool>(r.parameters.at("binary_data_output")), true);
  EXPECT_EQ(std::get<int64_t>(r.parameters.at("priority")), 2);
  EXPECT_EQ(std::get<std::string>(r.parameters.at("tag")), "t");
  EXPECT_EQ(std::get<double>(r.parameters.at("w")), 0.5);
  EXPECT_EQ(std::get<std::string>(r.inputs[0].parameters.at("k")), "v");
  ASSERT_EQ(r.outputs.size(), 3u);
  EXPECT_EQ(r.outputs[0].name, "probs");
  EXPECT_EQ(r.outputs[0].classification, 3);
  EXPECT_TRUE(r.outputs[0].binary);  // binary_data_output
  EXPECT_FALSE(r.outputs[1].binary);  // its own binary_data wins
  EXPECT_EQ(r.outputs[1].classification, 0);
  EXPECT_TRUE(r.outputs[2].binary);

  fails(R"({"parameters":{"timeout":-1},"inputs":[]})", "parameters.timeout");
  fails(R"({"parameters":{"timeout":"soon"},"inputs":[]})", "parameters.timeout");
  fails(R"({"parameters":{"binary_data_output":1},"inputs":[]})", "parameters.binary_data_output must be a bool");
  fails(R"({"parameters":{"x":[1]},"inputs":[]})", "parameters.x must be a bool, number or string");
  fails(R"({"parameters":[],"inputs":[]})", "parameters must be a JSON object");
  fails(R"({"inputs":[],"outputs":[{"name":"y","parameters":{"classification":"3"}}]})",
        "output 'y': parameters.classification");
  fails(R"({"inputs":[],"outputs":[{"name":"y","parameters":{"classification":-2}}]})", "classification");
  fails(R"({"inputs":[],"outputs":[{"name":"y","parameters":{"binary_data":"yes"}}]})",
        "output 'y': parameters.binary_data must be a bool");
  fails(R"({"inputs":[],"outputs":[{"parameters":{}}]})", "outputs[0].name");
  fails(R"({"inputs":[],"outputs":[{"name":"y"},{"name":"y"}]})", "output 'y' is requested twice");
  fails(R"({"inputs":[],"outputs":{}})", "outputs must be an array");
  fails(R"({"id":5,"inputs":[]})", "id must be a string");
}

TEST(KserveJson, MalformedBodies) {
  fails("", "malformed JSON");
  fails("{", "malformed JSON");
  fails(R"({"inputs":[}")", "malformed JSON");
  fails("\xff\xfe", "malformed JSON");
  fails("[]", "must be a JSON object");
  fails(R"({"inputs":5})", "inputs must be an array");
  fails(R"({})", "inputs must be an array");
  fails(R"({"inputs":[5]})", "inputs[0] must be a JSON object");
  fails(R"({"inputs":[{"datatype":"FP32","shape":[1],"data":[1]}]})", "inputs[0].name");
  fails(R"({"inputs":[{"name":"x","shape":[1],"data":[1]}]})", "input 'x': datatype");
  fails(R"({"inputs":[{"name":"x","datatype":"FP32","data":[1]}]})", "input 'x': shape is missing");
  fails(R"({"inputs":[{"name":"x","datatype":"FP32","shape":"1","data":[1]}]})", "shape must be an array");
  fails(R"({"inputs":[{"name":"x","datatype":"FP32","shape":[-1],"data":[1]}]})", "shape[0] is -1");
  fails(R"({"inputs":[{"name":"x","datatype":"FP32","shape":[1.5],"data":[1]}]})", "shape[0] is 1.5");
  fails(R"({"inputs":[{"name":"x","datatype":"FP32","shape":[1]}]})", "input 'x' has neither data");
  fails(R"({"inputs":[{"name":"x","datatype":"FP32","shape":[1],"data":{"a":1}}]})", "input 'x'");
  fails(R"({"inputs":[{"name":"x","datatype":"FP32","shape":[1],"data":[1]},{"name":"x","datatype":"FP32","shape":[1],"data":[1]}]})",
        "input 'x' appears twice");
  fails(R"({"inputs":[{"name":"x","datatype":"FP32","shape":[1],"data":[1],"parameters":5}]})",
        "input 'x' parameters must be a JSON object");
}

TEST(KserveJson, HugeShapesAreErrorsNotAllocations) {
  // Element count overflows int64.
  fails(one_input("FP32", "[4611686018427387904,4]", "[1]"), "more elements than int64");
  fails(one_input("FP32", "[9223372036854775808]", "[1]"), "shape[0]");
  fails(one_input("FP32", "[3037000500,3037000500]", "[1]"), "more elements than int64");
  // Representable but far past the data actually sent.
  fails(one_input("FP32", "[1000000000000]", "[1]"), "data has 1 elements where shape [1000000000000]");
  fails(one_input("FP32", "[1000000,1000000]", "[[1]]"), "1 rows at depth 0");
  fails(one_input("BYTES", "[1000000000000]", R"(["a"])"), "data has 1 elements");
  std::string h = R"({"inputs":[{"name":"x","datatype":"FP32","shape":[1099511627776],"parameters":{"binary_data_size":4}}]})";
  fails(h + raw<float>({1}), "does not match shape [1099511627776]", std::to_string(h.size()));
  h = R"({"inputs":[{"name":"x","datatype":"FP64","shape":[2305843009213693952],"parameters":{"binary_data_size":8}}]})";
  fails(h + raw<double>({1}), "does not match shape", std::to_string(h.size()));
  h = R"({"inputs":[{"name":"x","datatype":"BYTES","shape":[1000000000000],"parameters":{"binary_data_size":5}}]})";
  fails(h + bytes_elems({"a"}), "1 BYTES elements where shape [1000000000000]", std::to_string(h.size()));
  std::string shape = "[1";
  for (int i = 0; i < 69; ++i) shape += ",1";
  fails(one_input("FP32", shape + "]", "[1]"), "dimensions (at most 64)");
}

// A binary request: JSON header, then the raw inputs in the order of the JSON inputs.
TEST(KserveJson, BinaryInputsInOrder) {
  std::string h =
      R"({"id":"b","inputs":[)"
      R"({"name":"a","datatype":"FP32","shape":[2,2],"parameters":{"binary_data_size":16}},)"
      R"({"name":"b","datatype":"INT64","shape":[2],"data":[5,-6]},)"
      R"({"name":"c","datatype":"BYTES","shape":[2],"parameters":{"binary_data_size":13}},)"
      R"({"name":"d","datatype":"FP16","shape":[1],"parameters":{"binary_data_size":2}},)"
      R"({"name":"e","datatype":"UINT8","shape":[0],"parameters":{"binary_data_size":0}}],)"
      R"("outputs":[{"name":"y","parameters":{"binary_data":true}}]})";
  std::string body = h + raw<float>({1, 2, 3, 4}) + bytes_elems({"jpeg", "x"}) + raw<uint16_t>({0x3c00});
  InferRequest r = ok(body, std::to_string(h.size()));
  ASSERT_EQ(r.inputs.size(), 5u);
  EXPECT_EQ(r.id, "b");
  EXPECT_EQ(r.inputs[0].data, raw<float>({1, 2, 3, 4}));
  EXPECT_EQ(r.inputs[0].parameters.count("binary_data_size"), 0u);
  EXPECT_EQ(r.inputs[1].data, raw<int64_t>({5, -6}));
  EXPECT_EQ(r.inputs[2].data, bytes_elems({"jpeg", "x"}));
  EXPECT_EQ(r.inputs[3].data, raw<uint16_t>({0x3c00}));
  EXPECT_EQ(r.inputs[4].data, "");
  ASSERT_EQ(r.outputs.size(), 1u);
  EXPECT_TRUE(r.outputs[0].binary);

  // The header length may also cover the whole body when nothing is binary.
  std::string j = one_input("INT32", "[1]", "[3]");
  EXPECT_EQ(ok(j, std::to_string(j.size())).inputs[0].data, raw<int32_t>({3}));
}

TEST(KserveJson, BinaryErrors) {
  std::string h = R"({"inputs":[{"name":"a","datatype":"FP32","shape":[4],"parameters":{"binary_data_size":16}}]})";
  std::string n = std::to_string(h.size());
  std::string data = raw<float>({1, 2, 3, 4});
  fails(h + data.substr(0, 10), "input 'a': binary_data_size 16 exceeds the 10 bytes left", n);  // truncated
  fails(h + data + "zz", "2 bytes after the JSON header are not claimed", n);
  fails(h + data, "exceeds the body's", std::to_string(h.size() + 100));  // header length past the body
  fails(h + data, "malformed JSON", std::to_string(h.size() - 1));
  fails(h + data, "is not a byte count", "12a");
  fails(h + data, "is not a byte count", "-3");
  fails(h + data, "is not a byte count", "99999999999999999999999");
  fails(h, "needs the Inference-Header-Content-Length header");  // no header
  std::string h2 = R"({"inputs":[{"name":"a","datatype":"FP32","shape":[3],"parameters":{"binary_data_size":16}}]})";
  fails(h2 + data, "binary_data_size 16 does not match shape [3] of FP32 (3 x 4 bytes)", std::to_string(h2.size()));
  std::string h3 = R"({"inputs":[{"name":"a","datatype":"FP32","shape":[4],"data":[1,2,3,4],"parameters":{"binary_data_size":16}}]})";
  fails(h3 + data, "both data and parameters.binary_data_size", std::to_string(h3.size()));
  std::string h4 = R"({"inputs":[{"name":"a","datatype":"FP32","shape":[4],"parameters":{"binary_data_size":-16}}]})";
  fails(h4 + data, "binary_data_size must be a non-negative integer", std::to_string(h4.size()));
  // BYTES elements whose length runs past the chunk.
  std::string h5 = R"({"inputs":[{"name":"s","datatype":"BYTES","shape":[1],"parameters":{"binary_data_size":6}}]})";
  std::string bad_elem = raw<uint32_t>({100}) + "ab";
  fails(h5 + bad_elem, "input 's': binary BYTES data is malformed", std::to_string(h5.size()));
  fails(h5 + bytes_elems({"a", "b"}).substr(0, 6), "malformed", std::to_string(h5.size()));
}

// Truncated and corrupted bodies come back as errors or requests, never as exceptions or crashes.
TEST(KserveJson, MutatedBodiesNeverThrow) {
  std::string h =
      R"({"id":"z","parameters":{"timeout":5},"inputs":[)"
      R"({"name":"a","datatype":"FP32","shape":[2,2],"parameters":{"binary_data_size":16}},)"
      R"({"name":"b","datatype":"INT8","shape":[2,2],"data":[[1,-2],[3,4]]},)"
      R"({"name":"c","datatype":"BYTES","shape":[1],"parameters":{"binary_data_size":7}}],)"
      R"("outputs":[{"name":"y","parameters":{"binary_data":true,"classification":2}}]})";
  const std::string body = h + raw<float>({1, 2, 3, 4}) + bytes_elems({"abc"});
  const std::string len = std::to_string(h.size());
  ok(body, len);
  std::mt19937 rng(1);
  const char alphabet[] = "{}[],:\"0123456789-.eE \\tfn\xff\x00";
  for (int i = 0; i < 3000; ++i) {
    std::string b = body;
    int edits = 1 + int(rng() % 4);
    for (int k = 0; k < edits; ++k) {
      std::size_t at = rng() % b.size();
      switch (rng() % 3) {
        case 0: b[at] = alphabet[rng() % (sizeof alphabet - 1)]; break;
        case 1: b.erase(at, 1 + rng() % 8); break;
        default: b.insert(at, 1, alphabet[rng() % (sizeof alphabet - 1)]); break;
      }
      if (b.empty()) b = "{";
    }
    std::string hl = (i % 5 == 0) ? std::to_string(rng() % (b.size() + 8)) : len;
    EXPECT_NO_THROW(decode_rest_request(b, hl, "m", "1"));
    EXPECT_NO_THROW(decode_rest_request(b.substr(0, rng() % b.size()), "", "m", "1"));
  }
}

InferResponse response_with(std::vector<WireTensor> outs) {
  InferResponse r;
  r.model = "m";
  r.version = "2";
  r.id = "req-\"1\"";
  r.outputs = std::move(outs);
  return r;
}

json decode_json(const std::string& s) { return json::parse(s); }

TEST(KserveJson, EncodeJson) {
  std::vector<WireTensor> outs = {
      {"f", "FP32", {2, 2}, raw<float>({0.1f, -2.5f, 1e-20f, 3e38f}), {}},
      {"i", "INT64", {2}, raw<int64_t>({-9223372036854775807ll, 42}), {}},
      {"u8", "UINT8", {2}, raw<uint8_t>({0, 255}), {}},
      {"b", "BOOL", {2}, std::string("\1\0", 2), {}},
      {"s", "BYTES", {2}, bytes_elems({"0.9:3:cat", "x\"y"}), {}},
      {"h", "FP16", {2}, raw<uint16_t>({0x3c00, 0xc000}), {}},
      {"n", "FP32", {2}, raw<float>({std::nanf(""), INFINITY}), {}},
      {"d", "FP64", {1}, raw<double>({0.1}), {}},
  };
  auto enc = encode_rest_response(response_with(outs));
  ASSERT_TRUE(std::holds_alternative<RestBody>(enc)) << std::get<Error>(enc).message;
  const RestBody& b = std::get<RestBody>(enc);
  EXPECT_FALSE(b.binary);
  json j = decode_json(b.body);
  EXPECT_EQ(j["model_name"], "m");
  EXPECT_EQ(j["model_version"], "2");
  EXPECT_EQ(j["id"], "req-\"1\"");
  ASSERT_EQ(j["outputs"].size(), outs.size());
  const json& f = j["outputs"][0];
  EXPECT_EQ(f["name"], "f");
  EXPECT_EQ(f["datatype"], "FP32");
  EXPECT_EQ(f["shape"], json({2, 2}));
  ASSERT_EQ(f["data"].size(), 4u);
  EXPECT_EQ(float(f["data"][0].get<double>()), 0.1f);
  EXPECT_EQ(float(f["data"][2].get<double>()), 1e-20f);
  EXPECT_EQ(float(f["data"][3].get<double>()), 3e38f);
  EXPECT_EQ(j["outputs"][1]["data"], json({-9223372036854775807ll, 42}));
  EXPECT_EQ(j["outputs"][2]["data"], json({0, 255}));
  EXPECT_EQ(j["outputs"][3]["data"], json({true, false}));
  EXPECT_EQ(j["outputs"][4]["data"], json({"0.9:3:cat", "x\"y"}));
  EXPECT_EQ(j["outputs"][5]["data"], json({1.0, -2.0}));
  EXPECT_TRUE(j["outputs"][6]["data"][0].is_null());
  EXPECT_TRUE(j["outputs"][6]["data"][1].is_null());
  EXPECT_EQ(j["outputs"][7]["data"][0].get<double>(), 0.1);
  EXPECT_FALSE(j["outputs"][0].contains("parameters"));
}

TEST(KserveJson, EncodeBinaryMixed) {
  InferResponse r = response_with({
      {"a", "FP32", {3}, raw<float>({1, 2, 3}), {}},
      {"s", "BYTES", {1}, bytes_elems({"label"}), {}},
      {"c", "INT32", {2}, raw<int32_t>({7, 8}), {}},
  });
  r.binary = {true, false, true};
  auto enc = encode_rest_response(r);
  ASSERT_TRUE(std::holds_alternative<RestBody>(enc));
  const RestBody& b = std::get<RestBody>(enc);
  ASSERT_TRUE(b.binary);
  ASSERT_LT(b.header_length, b.body.size());
  json j = decode_json(b.body.substr(0, b.header_length));
  EXPECT_EQ(j["outputs"][0]["parameters"]["binary_data_size"], 12);
  EXPECT_FALSE(j["outputs"][0].contains("data"));
  EXPECT_EQ(j["outputs"][1]["data"], json({"label"}));
  EXPECT_EQ(j["outputs"][2]["parameters"]["binary_data_size"], 8);
  EXPECT_EQ(b.body.substr(b.header_length), raw<float>({1, 2, 3}) + raw<int32_t>({7, 8}));
}

TEST(KserveJson, ResolveBinaryOutputs) {
  InferRequest req = ok(R"({"parameters":{"binary_data_output":true},"inputs":[],
                            "outputs":[{"name":"a","parameters":{"binary_data":false}},{"name":"b"}]})");
  InferResponse r = response_with({{"a", "FP32", {0}, "", {}}, {"b", "FP32", {0}, "", {}}, {"c", "FP32", {0}, "", {}}});
  resolve_binary_outputs(req, r);
  EXPECT_EQ(r.binary, (std::vector<bool>{false, true, true}));
  InferRequest plain = ok(R"({"inputs":[],"outputs":[{"name":"b","parameters":{"binary_data":true}}]})");
  r.binary = {true, true, true};  // whatever the core set, the request decides
  resolve_binary_outputs(plain, r);
  EXPECT_EQ(r.binary, (std::vector<bool>{false, true, false}));
}

TEST(KserveJson, EncodeRejectsInconsistentOutputs) {
  for (WireTensor t : {WireTensor{"a", "FP32", {3}, raw<float>({1, 2}), {}},
                       WireTensor{"a", "BYTES", {2}, bytes_elems({"x"}), {}},
                       WireTensor{"a", "BYTES", {1}, raw<uint32_t>({9}), {}},
                       WireTensor{"a", "WHAT", {1}, "x", {}}}) {
    auto enc = encode_rest_response(response_with({t}));
    ASSERT_TRUE(std::holds_alternative<Error>(enc)) << t.datatype;
    EXPECT_EQ(std::get<Error>(enc).code, Code::internal);
    EXPECT_NE(std::get<Error>(enc).message.find("output 'a'"), std::string::npos);
  }
}

// Shortest round-trip formatting: JSON floats decode back to the same bits, and a 150k-element
// input decodes in linear time.
TEST(KserveJson, LargeFloatRoundTrip) {
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 3.0f);
  std::vector<float> v(150528);
  for (float& x : v) x = dist(rng);
  std::string bytes(reinterpret_cast<const char*>(v.data()), v.size() * 4);
  auto t0 = std::chrono::steady_clock::now();
  auto enc = encode_rest_response(response_with({{"y", "FP32", {1, 3, 224, 224}, bytes, {}}}));
  ASSERT_TRUE(std::holds_alternative<RestBody>(enc));
  json j = decode_json(std::get<RestBody>(enc).body);
  json req = {{"inputs", {{{"name", "x"}, {"datatype", "FP32"}, {"shape", j["outputs"][0]["shape"]},
                           {"data", j["outputs"][0]["data"]}}}}};
  InferRequest r = ok(req.dump());
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.inputs.size(), 1u);
  EXPECT_EQ(r.inputs[0].data, bytes);
  EXPECT_LT(s, 10.0);  // seconds; generous for a loaded machine, catches quadratic behaviour
}

TEST(KserveJson, ErrorJson) {
  EXPECT_EQ(json::parse(error_json("bad \"x\"\n"))["error"], "bad \"x\"\n");
  EXPECT_EQ(json::parse(error_json("\xff"))["error"], "\xef\xbf\xbd");  // invalid UTF-8 replaced
}

}  // namespace
}  // namespace systolic::serve
