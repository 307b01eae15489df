#include "serve/grpc_codec.h"

#include <google/protobuf/util/json_util.h>

#include <bit>
#include <cstring>
#include <limits>
#include <utility>

namespace systolic::serve {

// Raw tensor bytes are little-endian on the wire; typed values are copied as host bytes.
static_assert(std::endian::native == std::endian::little);

namespace {

using Contents = inference::InferTensorContents;

Error invalid(std::string msg) { return Error{Code::invalid_argument, std::move(msg)}; }

std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (std::size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

// Elements in `shape`, or -1 when a dimension is negative or the count is absurd.
int64_t element_count(const std::vector<int64_t>& shape) {
  constexpr int64_t kMax = int64_t{1} << 40;
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return -1;
    if (d != 0 && n > kMax / d) return -1;
    n *= d;
  }
  return n;
}

// The typed field a datatype travels in (nullptr: none, raw only).
const char* typed_field(const std::string& dt) {
  if (dt == "BOOL") return "bool_contents";
  if (dt == "INT8" || dt == "INT16" || dt == "INT32") return "int_contents";
  if (dt == "INT64") return "int64_contents";
  if (dt == "UINT8" || dt == "UINT16" || dt == "UINT32") return "uint_contents";
  if (dt == "UINT64") return "uint64_contents";
  if (dt == "FP32") return "fp32_contents";
  if (dt == "FP64") return "fp64_contents";
  if (dt == "BYTES") return "bytes_contents";
  return nullptr;
}

// The typed fields that hold values, as (name, count).
std::vector<std::pair<const char*, int>> filled_fields(const Contents& c) {
  std::vector<std::pair<const char*, int>> r;
  auto add = [&](const char* n, int k) {
    if (k > 0) r.emplace_back(n, k);
  };
  add("bool_contents", c.bool_contents_size());
  add("int_contents", c.int_contents_size());
  add("int64_contents", c.int64_contents_size());
  add("uint_contents", c.uint_contents_size());
  add("uint64_contents", c.uint64_contents_size());
  add("fp32_contents", c.fp32_contents_size());
  add("fp64_contents", c.fp64_contents_size());
  add("bytes_contents", c.bytes_contents_size());
  return r;
}

// Values narrowed to To with a range check (int_contents carries INT8 as int32, etc.).
template <typename To, typename From>
std::optional<Error> narrow(const google::protobuf::RepeatedField<From>& v, const std::string& name,
                            const std::string& dt, std::string* out) {
  out->resize(static_cast<std::size_t>(v.size()) * sizeof(To));
  char* p = out->data();
  for (int i = 0; i < v.size(); ++i) {
    if constexpr (!std::is_floating_point_v<To> && !std::is_same_v<To, From>) {
      if (!std::in_range<To>(v[i]))
        return invalid("input '" + name + "': value " + std::to_string(v[i]) + " at " + std::to_string(i) +
                       " is out of range for " + dt);
    }
    const To t = static_cast<To>(v[i]);
    std::memcpy(p + static_cast<std::size_t>(i) * sizeof(To), &t, sizeof(To));
  }
  return std::nullopt;
}

std::optional<Error> typed_to_raw(const Contents& c, const std::string& name, const std::string& dt,
                                  std::string* out) {
  if (dt == "BOOL") {
    out->resize(c.bool_contents_size());
    for (int i = 0; i < c.bool_contents_size(); ++i) (*out)[i] = c.bool_contents(i) ? 1 : 0;
    return std::nullopt;
  }
  if (dt == "INT8") return narrow<int8_t>(c.int_contents(), name, dt, out);
  if (dt == "INT16") return narrow<int16_t>(c.int_contents(), name, dt, out);
  if (dt == "INT32") return narrow<int32_t>(c.int_contents(), name, dt, out);
  if (dt == "INT64") return narrow<int64_t>(c.int64_contents(), name, dt, out);
  if (dt == "UINT8") return narrow<uint8_t>(c.uint_contents(), name, dt, out);
  if (dt == "UINT16") return narrow<uint16_t>(c.uint_contents(), name, dt, out);
  if (dt == "UINT32") return narrow<uint32_t>(c.uint_contents(), name, dt, out);
  if (dt == "UINT64") return narrow<uint64_t>(c.uint64_contents(), name, dt, out);
  if (dt == "FP32") return narrow<float>(c.fp32_contents(), name, dt, out);
  if (dt == "FP64") return narrow<double>(c.fp64_contents(), name, dt, out);
  // BYTES: each element as a 4-byte little-endian length and its bytes.
  std::size_t total = 0;
  for (const auto& s : c.bytes_contents()) total += 4 + s.size();
  out->clear();
  out->reserve(total);
  for (const auto& s : c.bytes_contents()) {
    if (s.size() > std::numeric_limits<uint32_t>::max())
      return invalid("input '" + name + "': a BYTES element over 4 GiB");
    const uint32_t len = static_cast<uint32_t>(s.size());
    out->append(reinterpret_cast<const char*>(&len), 4);
    out->append(s);
  }
  return std::nullopt;
}

// A raw BYTES tensor must hold exactly `n` length-prefixed elements.
std::optional<Error> check_raw_bytes(const std::string& data, int64_t n, const std::string& name) {
  std::size_t at = 0;
  int64_t k = 0;
  while (at < data.size()) {
    if (data.size() - at < 4)
      return invalid("input '" + name + "': BYTES element " + std::to_string(k) + " has a truncated length prefix");
    uint32_t len;
    std::memcpy(&len, data.data() + at, 4);
    at += 4;
    if (data.size() - at < len)
      return invalid("input '" + name + "': BYTES element " + std::to_string(k) + " claims " + std::to_string(len) +
                     " bytes, " + std::to_string(data.size() - at) + " remain");
    at += len;
    ++k;
  }
  if (k != n)
    return invalid("input '" + name + "': raw BYTES holds " + std::to_string(k) + " elements, the shape needs " +
                   std::to_string(n));
  return std::nullopt;
}

}  // namespace

grpc::StatusCode grpc_code(Code c) {
  switch (c) {
    case Code::ok: return grpc::StatusCode::OK;
    case Code::invalid_argument: return grpc::StatusCode::INVALID_ARGUMENT;
    case Code::not_found: return grpc::StatusCode::NOT_FOUND;
    case Code::unavailable: return grpc::StatusCode::UNAVAILABLE;
    case Code::unimplemented: return grpc::StatusCode::UNIMPLEMENTED;
    case Code::internal: return grpc::StatusCode::INTERNAL;
  }
  return grpc::StatusCode::INTERNAL;
}

grpc::Status grpc_status(const Error& e) { return grpc::Status(grpc_code(e.code), e.message); }

std::variant<Params, Error> decode_params(const ProtoParams& in) {
  Params out;
  for (const auto& [k, p] : in) {
    switch (p.parameter_choice_case()) {
      case inference::InferParameter::kBoolParam: out[k] = p.bool_param(); break;
      case inference::InferParameter::kInt64Param: out[k] = int64_t{p.int64_param()}; break;
      case inference::InferParameter::kStringParam: out[k] = p.string_param(); break;
      case inference::InferParameter::kDoubleParam: out[k] = p.double_param(); break;
      case inference::InferParameter::kUint64Param:
        if (!std::in_range<int64_t>(p.uint64_param()))
          return invalid("parameter '" + k + "': " + std::to_string(p.uint64_param()) + " exceeds int64");
        out[k] = static_cast<int64_t>(p.uint64_param());
        break;
      case inference::InferParameter::PARAMETER_CHOICE_NOT_SET:
        return invalid("parameter '" + k + "' has no value");
    }
  }
  return out;
}

void encode_params(const Params& in, ProtoParams* out) {
  for (const auto& [k, v] : in) {
    inference::InferParameter& p = (*out)[k];
    if (auto* b = std::get_if<bool>(&v)) p.set_bool_param(*b);
    else if (auto* i = std::get_if<int64_t>(&v)) p.set_int64_param(*i);
    else if (auto* d = std::get_if<double>(&v)) p.set_double_param(*d);
    else p.set_string_param(std::get<std::string>(v));
  }
}

std::variant<InferRequest, Error> decode_infer_request(inference::ModelInferRequest& m) {
  InferRequest r;
  r.model = m.model_name();
  r.version = m.model_version();
  r.id = m.id();
  if (r.model.empty()) return invalid("model_name is empty");

  auto params = decode_params(m.parameters());
  if (auto* e = std::get_if<Error>(&params)) return std::move(*e);
  r.parameters = std::move(std::get<Params>(params));
  if (auto it = r.parameters.find("timeout"); it != r.parameters.end()) {
    const auto* us = std::get_if<int64_t>(&it->second);
    if (!us || *us < 0) return invalid("parameter 'timeout' must be a non-negative int64 (microseconds)");
    r.timeout_us = *us;
    r.parameters.erase(it);
  }

  const int n_raw = m.raw_input_contents_size();
  if (n_raw > 0 && n_raw != m.inputs_size())
    return invalid(std::to_string(n_raw) + " raw_input_contents for " + std::to_string(m.inputs_size()) +
                   " inputs; raw contents must be given for every input, in order");

  r.inputs.reserve(m.inputs_size());
  for (int i = 0; i < m.inputs_size(); ++i) {
    const auto& in = m.inputs(i);
    WireTensor t;
    t.name = in.name();
    t.datatype = in.datatype();
    t.shape.assign(in.shape().begin(), in.shape().end());
    if (t.name.empty()) return invalid("input " + std::to_string(i) + " has no name");
    const std::string who = "input '" + t.name + "'";
    const std::size_t esize = datatype_size(t.datatype);
    if (esize == 0 && t.datatype != "BYTES") return invalid(who + ": unknown datatype '" + t.datatype + "'");
    const int64_t n = element_count(t.shape);
    if (n < 0) return invalid(who + ": invalid shape " + shape_str(t.shape));
    auto params = decode_params(in.parameters());
    if (auto* e = std::get_if<Error>(&params)) return std::move(*e);
    t.parameters = std::move(std::get<Params>(params));

    const auto filled = filled_fields(in.contents());
    if (n_raw > 0) {
      if (!filled.empty())
        return invalid(who + " has typed contents (" + filled[0].first +
                       ") while the request uses raw_input_contents; use one or the other for every input");
      t.data.swap(*m.mutable_raw_input_contents(i));
    } else {
      const char* want = typed_field(t.datatype);
      for (const auto& [field, count] : filled)
        if (!want || std::strcmp(field, want) != 0)
          return invalid(who + " (" + t.datatype + ") has " + field + "; " +
                         (want ? t.datatype + " goes in " + want : t.datatype + " must be sent in raw_input_contents"));
      const int count = filled.empty() ? 0 : filled[0].second;
      if (count != n) {
        if (!want && n > 0) return invalid(who + " (" + t.datatype + ") must be sent in raw_input_contents");
        return invalid(who + ": " + std::to_string(count) + " " + (want ? want : "values") + " for shape " +
                       shape_str(t.shape) + " (" + std::to_string(n) + " elements)");
      }
      if (want)
        if (auto e = typed_to_raw(in.contents(), t.name, t.datatype, &t.data)) return std::move(*e);
    }
    if (esize > 0) {
      if (t.data.size() != static_cast<uint64_t>(n) * esize)
        return invalid(who + ": " + std::to_string(t.data.size()) + " bytes for " + t.datatype + " shape " +
                       shape_str(t.shape) + " (" + std::to_string(static_cast<uint64_t>(n) * esize) +
                       " expected)");
    } else if (auto e = check_raw_bytes(t.data, n, t.name)) {
      return std::move(*e);
    }
    r.inputs.push_back(std::move(t));
  }

  r.outputs.reserve(m.outputs_size());
  for (const auto& o : m.outputs()) {
    RequestedOutput ro;
    ro.name = o.name();
    if (ro.name.empty()) return invalid("a requested output has no name");
    auto params = decode_params(o.parameters());
    if (auto* e = std::get_if<Error>(&params)) return std::move(*e);
    ro.parameters = std::move(std::get<Params>(params));
    if (auto it = ro.parameters.find("classification"); it != ro.parameters.end()) {
      const auto* k = std::get_if<int64_t>(&it->second);
      if (!k || *k < 0)
        return invalid("output '" + ro.name + "': parameter 'classification' must be a non-negative int64");
      ro.classification = *k;
      ro.parameters.erase(it);
    }
    r.outputs.push_back(std::move(ro));
  }
  return r;
}

void encode_infer_response(InferResponse&& r, inference::ModelInferResponse* m) {
  m->set_model_name(std::move(r.model));
  m->set_model_version(std::move(r.version));
  m->set_id(std::move(r.id));
  for (auto& t : r.outputs) {
    auto* o = m->add_outputs();
    o->set_name(std::move(t.name));
    o->set_datatype(std::move(t.datatype));
    for (int64_t d : t.shape) o->add_shape(d);
    encode_params(t.parameters, o->mutable_parameters());
    m->add_raw_output_contents()->swap(t.data);
  }
}

void encode_model_metadata(const ModelMetadata& md, inference::ModelMetadataResponse* m) {
  m->set_name(md.name);
  for (const auto& v : md.versions) m->add_versions(v);
  m->set_platform(md.platform);
  auto put = [](const TensorMeta& t, inference::ModelMetadataResponse::TensorMetadata* p) {
    p->set_name(t.name);
    p->set_datatype(t.datatype);
    for (int64_t d : t.shape) p->add_shape(d);
  };
  for (const auto& t : md.inputs) put(t, m->add_inputs());
  for (const auto& t : md.outputs) put(t, m->add_outputs());
}

std::optional<Error> decode_model_config(const std::string& json, inference::ModelConfig* m) {
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = true;
  const auto st = google::protobuf::util::JsonStringToMessage(json, m, opts);
  if (!st.ok()) return Error{Code::internal, "model config: " + st.ToString()};
  return std::nullopt;
}

}  // namespace systolic::serve
