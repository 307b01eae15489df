#include "serve/kserve_json.h"

#include <nlohmann/json.hpp>

#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <set>
#include <type_traits>

namespace systolic::serve {
namespace {

using json = nlohmann::json;

static_assert(std::endian::native == std::endian::little, "wire tensors are little-endian host bytes");

// Deep enough for any real tensor; bounds the recursion over nested `data`.
constexpr std::size_t kMaxRank = 64;

Error bad(std::string msg) { return Error{Code::invalid_argument, std::move(msg)}; }

std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
  return out + "]";
}

// A value for an error message, cut short: a bad leaf may be a long string or an object.
std::string brief(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

std::string in_quotes(const std::string& name) { return "'" + name + "'"; }

// Element count of a shape; nullopt when it overflows int64.
std::optional<int64_t> product(const std::vector<int64_t>& shape, std::size_t from = 0) {
  int64_t n = 1;
  for (std::size_t i = from; i < shape.size(); ++i)
    if (__builtin_mul_overflow(n, shape[i], &n)) return std::nullopt;
  return n;
}

std::optional<Error> decode_params(const json& j, const std::string& where, Params* out) {
  if (!j.is_object()) return bad(where + " must be a JSON object");
  for (const auto& [k, v] : j.items()) {
    if (v.is_boolean()) {
      (*out)[k] = v.get<bool>();
    } else if (v.is_number_unsigned()) {
      uint64_t u = v.get<uint64_t>();
      if (u > uint64_t(std::numeric_limits<int64_t>::max())) return bad(where + "." + k + " is out of range for int64");
      (*out)[k] = int64_t(u);
    } else if (v.is_number_integer()) {
      (*out)[k] = v.get<int64_t>();
    } else if (v.is_number_float()) {
      (*out)[k] = v.get<double>();
    } else if (v.is_string()) {
      (*out)[k] = v.get<std::string>();
    } else {
      return bad(where + "." + k + " must be a bool, number or string");
    }
  }
  return std::nullopt;
}

// An integer parameter; an integral double (1e6) counts too.
std::optional<int64_t> as_int(const Param& p) {
  if (auto* i = std::get_if<int64_t>(&p)) return *i;
  if (auto* d = std::get_if<double>(&p))
    if (std::isfinite(*d) && *d == std::trunc(*d) && std::fabs(*d) < 0x1p63) return int64_t(*d);
  return std::nullopt;
}

std::optional<Error> decode_shape(const json& j, const std::string& where, std::vector<int64_t>* shape) {
  if (!j.is_array()) return bad(where + ": shape must be an array of non-negative integers");
  if (j.size() > kMaxRank) return bad(where + ": shape has " + std::to_string(j.size()) + " dimensions (at most " +
                                      std::to_string(kMaxRank) + ")");
  for (std::size_t i = 0; i < j.size(); ++i) {
    const json& d = j[i];
    if (!d.is_number_unsigned() || d.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
      return bad(where + ": shape[" + std::to_string(i) + "] is " + brief(d) + ", not a non-negative integer");
    shape->push_back(d.get<int64_t>());
  }
  if (!product(*shape)) return bad(where + ": shape " + shape_str(*shape) + " has more elements than int64 holds");
  return std::nullopt;
}

// Nested `data` must agree with the shape: each nested level is one leading dimension and the
// innermost array holds the product of the remaining ones (flat data is the one-level case).
std::optional<Error> check_nesting(const json& a, const std::vector<int64_t>& shape, std::size_t d,
                                   const std::string& where) {
  bool nested = !a.empty() && a.front().is_array();
  if (nested) {
    if (d + 1 >= shape.size())
      return bad(where + ": data is nested deeper than shape " + shape_str(shape));
    if (int64_t(a.size()) != shape[d])
      return bad(where + ": data has " + std::to_string(a.size()) + " rows at depth " + std::to_string(d) +
                 " where shape " + shape_str(shape) + " has " + std::to_string(shape[d]));
    for (const json& e : a) {
      if (!e.is_array()) return bad(where + ": data is not rectangular (arrays and values mixed at depth " +
                                    std::to_string(d) + ")");
      if (auto err = check_nesting(e, shape, d + 1, where)) return err;
    }
    return std::nullopt;
  }
  auto want = product(shape, d);
  if (!want || int64_t(a.size()) != *want) {
    if (d == 0)
      return bad(where + ": data has " + std::to_string(a.size()) + " elements where shape " + shape_str(shape) +
                 " has " + std::to_string(*product(shape)));
    return bad(where + ": data has " + std::to_string(a.size()) + " values at depth " + std::to_string(d) +
               " where shape " + shape_str(shape) + " needs " + (want ? std::to_string(*want) : "more"));
  }
  for (const json& e : a)
    if (e.is_array())
      return bad(where + ": data is not rectangular (arrays and values mixed at depth " + std::to_string(d) + ")");
  return std::nullopt;
}

template <typename F>
void for_each_leaf(const json& v, F& f) {
  if (v.is_array()) {
    for (const json& e : v) for_each_leaf(e, f);
  } else {
    f(v);
  }
}

template <typename T>
bool to_int(const json& v, T* out) {
  using L = std::numeric_limits<T>;
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (u > uint64_t(L::max())) return false;
    *out = T(u);
    return true;
  }
  if (v.is_number_integer()) {
    int64_t i = v.get<int64_t>();
    if (i < int64_t(L::min()) || (i > 0 && uint64_t(i) > uint64_t(L::max()))) return false;
    *out = T(i);
    return true;
  }
  if (v.is_number_float()) {
    double f = v.get<double>();
    double lo = L::is_signed ? -std::ldexp(1.0, L::digits) : 0.0, hi = std::ldexp(1.0, L::digits);
    if (!std::isfinite(f) || f != std::trunc(f) || f < lo || f >= hi) return false;
    *out = T(f);
    return true;
  }
  return false;
}

template <typename T>
bool to_float(const json& v, T* out) {
  if (!v.is_number() || v.is_boolean()) return false;
  double d = v.get<double>();
  if (!std::isfinite(d) || std::fabs(d) > double(std::numeric_limits<T>::max())) return false;
  *out = T(d);
  return true;
}

bool to_bool(const json& v, uint8_t* out) {
  if (v.is_boolean()) {
    *out = v.get<bool>() ? 1 : 0;
    return true;
  }
  if (v.is_number_unsigned() && v.get<uint64_t>() <= 1) {
    *out = uint8_t(v.get<uint64_t>());
    return true;
  }
  return false;
}

// Converts every leaf of `data` (already checked to hold n of them) into raw T values.
template <typename T, typename Conv>
std::optional<Error> fill(const json& data, int64_t n, const std::string& where, const std::string& dtype, Conv conv,
                          std::string* out) {
  out->resize(std::size_t(n) * sizeof(T));
  char* p = out->data();
  int64_t i = 0;
  std::optional<Error> err;
  auto f = [&](const json& v) {
    if (err) return;
    T x{};
    if (!conv(v, &x)) {
      std::string why = "is out of range for " + dtype;
      if (!v.is_number())
        why = "is not a valid " + dtype + " value";
      else if (std::is_integral_v<T> && v.is_number_float() && v.get<double>() != std::trunc(v.get<double>()))
        why = "is not an integer (" + dtype + ")";
      err = bad(where + ": element " + std::to_string(i) + " (" + brief(v) + ") " + why);
      return;
    }
    std::memcpy(p + std::size_t(i) * sizeof(T), &x, sizeof(T));
    ++i;
  };
  for_each_leaf(data, f);
  return err;
}

std::optional<Error> fill_bytes(const json& data, const std::string& where, std::string* out) {
  int64_t i = 0;
  std::optional<Error> err;
  auto f = [&](const json& v) {
    if (err) return;
    if (!v.is_string()) {
      err = bad(where + ": element " + std::to_string(i) + " (" + brief(v) + ") is not a string (BYTES)");
      return;
    }
    const std::string& s = v.get_ref<const std::string&>();
    if (s.size() > 0xffffffffu) {
      err = bad(where + ": element " + std::to_string(i) + " is longer than 4 GiB");
      return;
    }
    uint32_t len = uint32_t(s.size());
    out->append(reinterpret_cast<const char*>(&len), 4);
    out->append(s);
    ++i;
  };
  for_each_leaf(data, f);
  return err;
}

std::optional<Error> decode_json_data(const json& data, WireTensor& t, int64_t n, const std::string& where) {
  const std::string& dt = t.datatype;
  if (dt == "FP16" || dt == "BF16")
    return bad(where + ": " + dt + " data cannot be sent as JSON; send it as binary data (parameters.binary_data_size)");
  if (data.is_array()) {
    if (auto err = check_nesting(data, t.shape, 0, where)) return err;
  } else if (n != 1) {
    return bad(where + ": data must be an array of " + std::to_string(n) + " elements");
  }
  if (dt == "BOOL") return fill<uint8_t>(data, n, where, dt, to_bool, &t.data);
  if (dt == "UINT8") return fill<uint8_t>(data, n, where, dt, to_int<uint8_t>, &t.data);
  if (dt == "UINT16") return fill<uint16_t>(data, n, where, dt, to_int<uint16_t>, &t.data);
  if (dt == "UINT32") return fill<uint32_t>(data, n, where, dt, to_int<uint32_t>, &t.data);
  if (dt == "UINT64") return fill<uint64_t>(data, n, where, dt, to_int<uint64_t>, &t.data);
  if (dt == "INT8") return fill<int8_t>(data, n, where, dt, to_int<int8_t>, &t.data);
  if (dt == "INT16") return fill<int16_t>(data, n, where, dt, to_int<int16_t>, &t.data);
  if (dt == "INT32") return fill<int32_t>(data, n, where, dt, to_int<int32_t>, &t.data);
  if (dt == "INT64") return fill<int64_t>(data, n, where, dt, to_int<int64_t>, &t.data);
  if (dt == "FP32") return fill<float>(data, n, where, dt, to_float<float>, &t.data);
  if (dt == "FP64") return fill<double>(data, n, where, dt, to_float<double>, &t.data);
  if (dt == "BYTES") return fill_bytes(data, where, &t.data);
  return bad(where + ": unknown datatype " + in_quotes(dt));
}

// Counts the BYTES elements of `raw` (4-byte length + bytes each); nullopt when malformed.
std::optional<int64_t> count_bytes_elements(std::string_view raw) {
  int64_t n = 0;
  std::size_t at = 0;
  while (at < raw.size()) {
    if (raw.size() - at < 4) return std::nullopt;
    uint32_t len;
    std::memcpy(&len, raw.data() + at, 4);
    at += 4;
    if (raw.size() - at < len) return std::nullopt;
    at += len;
    ++n;
  }
  return n;
}

std::optional<Error> check_binary(std::string_view raw, const WireTensor& t, int64_t n, const std::string& where) {
  if (t.datatype == "BYTES") {
    auto count = count_bytes_elements(raw);
    if (!count) return bad(where + ": binary BYTES data is malformed (each element is a 4-byte length and its bytes)");
    if (*count != n)
      return bad(where + ": binary data has " + std::to_string(*count) + " BYTES elements where shape " +
                 shape_str(t.shape) + " has " + std::to_string(n));
    return std::nullopt;
  }
  int64_t want;
  if (__builtin_mul_overflow(n, int64_t(datatype_size(t.datatype)), &want) || uint64_t(want) != raw.size())
    return bad(where + ": binary_data_size " + std::to_string(raw.size()) + " does not match shape " +
               shape_str(t.shape) + " of " + t.datatype + " (" + std::to_string(n) + " x " +
               std::to_string(datatype_size(t.datatype)) + " bytes)");
  return std::nullopt;
}

std::variant<InferRequest, Error> decode(std::string_view body, std::string_view header_length, const std::string& model,
                                         const std::string& version) {
  bool binary = !header_length.empty();
  std::size_t json_len = body.size();
  if (binary) {
    uint64_t v = 0;
    auto [p, ec] = std::from_chars(header_length.data(), header_length.data() + header_length.size(), v);
    if (ec != std::errc() || p != header_length.data() + header_length.size())
      return bad("Inference-Header-Content-Length '" + std::string(header_length.substr(0, 40)) + "' is not a byte count");
    if (v > body.size())
      return bad("Inference-Header-Content-Length " + std::to_string(v) + " exceeds the body's " +
                 std::to_string(body.size()) + " bytes");
    json_len = std::size_t(v);
  }
  json j;
  try {
    j = json::parse(body.begin(), body.begin() + json_len);
  } catch (const json::parse_error& e) {
    std::string what = e.what();
    auto at = what.find("] ");
    return bad("malformed JSON: " + (at == std::string::npos ? what : what.substr(at + 2)));
  }
  if (!j.is_object()) return bad("the request body must be a JSON object");

  InferRequest req;
  req.model = model;
  req.version = version;
  if (auto it = j.find("id"); it != j.end()) {
    if (!it->is_string()) return bad("id must be a string");
    req.id = it->get<std::string>();
  }
  bool binary_output = false;
  if (auto it = j.find("parameters"); it != j.end()) {
    if (auto err = decode_params(*it, "parameters", &req.parameters)) return *err;
    if (auto p = req.parameters.find("timeout"); p != req.parameters.end()) {
      auto v = as_int(p->second);
      if (!v || *v < 0) return bad("parameters.timeout must be a non-negative integer (microseconds)");
      req.timeout_us = *v;
    }
    if (auto p = req.parameters.find("binary_data_output"); p != req.parameters.end()) {
      if (!std::holds_alternative<bool>(p->second)) return bad("parameters.binary_data_output must be a bool");
      binary_output = std::get<bool>(p->second);
    }
  }

  auto inputs = j.find("inputs");
  if (inputs == j.end() || !inputs->is_array()) return bad("inputs must be an array");
  std::size_t at = json_len;  // next unclaimed binary byte
  std::set<std::string> names;
  for (std::size_t i = 0; i < inputs->size(); ++i) {
    const json& in = (*inputs)[i];
    std::string field = "inputs[" + std::to_string(i) + "]";
    if (!in.is_object()) return bad(field + " must be a JSON object");
    auto name = in.find("name");
    if (name == in.end() || !name->is_string() || name->get_ref<const std::string&>().empty())
      return bad(field + ".name must be a non-empty string");
    WireTensor t;
    t.name = name->get<std::string>();
    std::string where = "input " + in_quotes(t.name);
    if (!names.insert(t.name).second) return bad(where + " appears twice");
    auto dt = in.find("datatype");
    if (dt == in.end() || !dt->is_string()) return bad(where + ": datatype must be a string");
    t.datatype = dt->get<std::string>();
    if (t.datatype != "BYTES" && datatype_size(t.datatype) == 0)
      return bad(where + ": unknown datatype " + in_quotes(t.datatype));
    auto shape = in.find("shape");
    if (shape == in.end()) return bad(where + ": shape is missing");
    if (auto err = decode_shape(*shape, where, &t.shape)) return *err;
    int64_t n = *product(t.shape);
    if (auto p = in.find("parameters"); p != in.end())
      if (auto err = decode_params(*p, where + " parameters", &t.parameters)) return *err;
    auto data = in.find("data");
    auto size_param = t.parameters.find("binary_data_size");
    if (size_param != t.parameters.end()) {
      auto size = as_int(size_param->second);
      if (!size || *size < 0) return bad(where + ": parameters.binary_data_size must be a non-negative integer");
      if (data != in.end()) return bad(where + " has both data and parameters.binary_data_size");
      if (!binary)
        return bad(where + ": parameters.binary_data_size needs the Inference-Header-Content-Length header");
      if (uint64_t(*size) > body.size() - at)
        return bad(where + ": binary_data_size " + std::to_string(*size) + " exceeds the " +
                   std::to_string(body.size() - at) + " bytes left in the body");
      std::string_view raw = body.substr(at, std::size_t(*size));
      if (auto err = check_binary(raw, t, n, where)) return *err;
      t.data.assign(raw);
      at += raw.size();
      t.parameters.erase(size_param);  // transport detail, not the model's
    } else {
      if (data == in.end()) return bad(where + " has neither data nor parameters.binary_data_size");
      if (auto err = decode_json_data(*data, t, n, where)) return *err;
    }
    req.inputs.push_back(std::move(t));
  }
  if (binary && at != body.size())
    return bad(std::to_string(body.size() - at) + " bytes after the JSON header are not claimed by any input's "
               "binary_data_size");

  if (auto outs = j.find("outputs"); outs != j.end()) {
    if (!outs->is_array()) return bad("outputs must be an array");
    std::set<std::string> seen;
    for (std::size_t i = 0; i < outs->size(); ++i) {
      const json& o = (*outs)[i];
      std::string field = "outputs[" + std::to_string(i) + "]";
      if (!o.is_object()) return bad(field + " must be a JSON object");
      auto name = o.find("name");
      if (name == o.end() || !name->is_string() || name->get_ref<const std::string&>().empty())
        return bad(field + ".name must be a non-empty string");
      RequestedOutput r;
      r.name = name->get<std::string>();
      std::string where = "output " + in_quotes(r.name);
      if (!seen.insert(r.name).second) return bad(where + " is requested twice");
      r.binary = binary_output;
      if (auto p = o.find("parameters"); p != o.end()) {
        if (auto err = decode_params(*p, where + " parameters", &r.parameters)) return *err;
        if (auto b = r.parameters.find("binary_data"); b != r.parameters.end()) {
          if (!std::holds_alternative<bool>(b->second)) return bad(where + ": parameters.binary_data must be a bool");
          r.binary = std::get<bool>(b->second);
        }
        if (auto c = r.parameters.find("classification"); c != r.parameters.end()) {
          auto k = as_int(c->second);
          if (!k || *k < 0) return bad(where + ": parameters.classification must be a non-negative integer");
          r.classification = *k;
        }
      }
      req.outputs.push_back(std::move(r));
    }
  }
  return req;
}

float half_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (man << 13));
  if (exp == 0) return (sign ? -1.0f : 1.0f) * std::ldexp(float(man), -24);  // zero and subnormals
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (man << 13));
}

void append_num(std::string& s, double v, bool single) {
  if (!std::isfinite(v)) {
    s += "null";  // JSON has no NaN/Inf; numpy reads null as nan, binary output keeps them exact
    return;
  }
  char buf[40];
  auto r = single ? std::to_chars(buf, buf + sizeof buf, float(v)) : std::to_chars(buf, buf + sizeof buf, v);
  s.append(buf, r.ptr);
}

template <typename T>
void append_int(std::string& s, T v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  s.append(buf, r.ptr);
}

template <typename T>
T load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

template <typename T, typename F>
void append_all(std::string& s, const std::string& data, F f) {
  for (std::size_t i = 0; i < data.size(); i += sizeof(T)) {
    if (i) s += ',';
    f(load<T>(data.data() + i));
  }
}

void append_data(std::string& s, const WireTensor& t) {
  const std::string& dt = t.datatype;
  const std::string& d = t.data;
  s += '[';
  if (dt == "BOOL") append_all<uint8_t>(s, d, [&](uint8_t v) { s += v ? "true" : "false"; });
  else if (dt == "UINT8") append_all<uint8_t>(s, d, [&](uint8_t v) { append_int(s, v); });
  else if (dt == "UINT16") append_all<uint16_t>(s, d, [&](uint16_t v) { append_int(s, v); });
  else if (dt == "UINT32") append_all<uint32_t>(s, d, [&](uint32_t v) { append_int(s, v); });
  else if (dt == "UINT64") append_all<uint64_t>(s, d, [&](uint64_t v) { append_int(s, v); });
  else if (dt == "INT8") append_all<int8_t>(s, d, [&](int8_t v) { append_int(s, v); });
  else if (dt == "INT16") append_all<int16_t>(s, d, [&](int16_t v) { append_int(s, v); });
  else if (dt == "INT32") append_all<int32_t>(s, d, [&](int32_t v) { append_int(s, v); });
  else if (dt == "INT64") append_all<int64_t>(s, d, [&](int64_t v) { append_int(s, v); });
  else if (dt == "FP16") append_all<uint16_t>(s, d, [&](uint16_t v) { append_num(s, half_to_float(v), true); });
  else if (dt == "BF16")
    append_all<uint16_t>(s, d, [&](uint16_t v) { append_num(s, std::bit_cast<float>(uint32_t(v) << 16), true); });
  else if (dt == "FP32") append_all<float>(s, d, [&](float v) { append_num(s, v, true); });
  else if (dt == "FP64") append_all<double>(s, d, [&](double v) { append_num(s, v, false); });
  else if (dt == "BYTES") {
    for (std::size_t at = 0; at < d.size();) {  // checked well-formed by the caller
      uint32_t len = load<uint32_t>(d.data() + at);
      if (at) s += ',';
      s += json_string(std::string_view(d).substr(at + 4, len));
      at += 4 + std::size_t(len);
    }
  }
  s += ']';
}

void append_param(std::string& s, const Param& p) {
  if (auto* b = std::get_if<bool>(&p)) s += *b ? "true" : "false";
  else if (auto* i = std::get_if<int64_t>(&p)) append_int(s, *i);
  else if (auto* d = std::get_if<double>(&p)) append_num(s, *d, false);
  else s += json_string(std::get<std::string>(p));
}

}  // namespace

std::variant<InferRequest, Error> decode_rest_request(std::string_view body, std::string_view header_length,
                                                      const std::string& model, const std::string& version) {
  try {
    return decode(body, header_length, model, version);
  } catch (const std::bad_alloc&) {
    return Error{Code::unavailable, "out of memory decoding the request"};
  } catch (const std::exception& e) {
    return bad(std::string("malformed request: ") + e.what());
  }
}

void resolve_binary_outputs(const InferRequest& req, InferResponse& r) {
  bool fallback = false;
  if (auto p = req.parameters.find("binary_data_output"); p != req.parameters.end())
    if (auto* b = std::get_if<bool>(&p->second)) fallback = *b;
  r.binary.assign(r.outputs.size(), fallback);
  for (std::size_t i = 0; i < r.outputs.size(); ++i)
    for (const RequestedOutput& o : req.outputs)
      if (o.name == r.outputs[i].name) r.binary[i] = o.binary;
}

std::variant<RestBody, Error> encode_rest_response(const InferResponse& r) {
  std::size_t reserve = 256;
  for (const WireTensor& t : r.outputs) reserve += 64 + t.data.size() * 4;
  RestBody out;
  std::string& s = out.body;
  s.reserve(reserve);
  s += "{\"model_name\":" + json_string(r.model) + ",\"model_version\":" + json_string(r.version) +
       ",\"id\":" + json_string(r.id) + ",\"outputs\":[";
  std::vector<const WireTensor*> raw;
  for (std::size_t i = 0; i < r.outputs.size(); ++i) {
    const WireTensor& t = r.outputs[i];
    bool bin = i < r.binary.size() && r.binary[i];
    auto n = product(t.shape);
    bool ok = n && *n >= 0;
    if (ok && t.datatype == "BYTES") {
      auto count = count_bytes_elements(t.data);
      ok = count && *count == *n;
    } else if (ok) {
      int64_t bytes;
      ok = datatype_size(t.datatype) > 0 &&
           !__builtin_mul_overflow(*n, int64_t(datatype_size(t.datatype)), &bytes) && uint64_t(bytes) == t.data.size();
    }
    if (!ok)
      return Error{Code::internal, "output " + in_quotes(t.name) + ": " + std::to_string(t.data.size()) +
                                       " bytes do not match shape " + shape_str(t.shape) + " of " + t.datatype};
    if (i) s += ',';
    s += "{\"name\":" + json_string(t.name) + ",\"datatype\":" + json_string(t.datatype) + ",\"shape\":" +
         shape_str(t.shape);
    if (!t.parameters.empty() || bin) {
      s += ",\"parameters\":{";
      bool first = true;
      for (const auto& [k, v] : t.parameters) {
        if (k == "binary_data_size") continue;
        if (!first) s += ',';
        first = false;
        s += json_string(k) + ':';
        append_param(s, v);
      }
      if (bin) s += std::string(first ? "" : ",") + "\"binary_data_size\":" + std::to_string(t.data.size());
      s += '}';
    }
    if (bin) {
      raw.push_back(&t);
    } else {
      s += ",\"data\":";
      append_data(s, t);
    }
    s += '}';
  }
  s += "]}";
  if (!raw.empty()) {
    out.binary = true;
    out.header_length = s.size();
    for (const WireTensor* t : raw) s += t->data;
  }
  return out;
}

std::string error_json(std::string_view message) { return "{\"error\":" + json_string(message) + "}"; }

std::string json_string(std::string_view s) {
  return json(std::string(s)).dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace systolic::serve
