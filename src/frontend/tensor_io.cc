// Tensor file I/O: NumPy .npy and ONNX TensorProto .pb readers/writers with strict validation.
#include "frontend/tensor_io.h"

#include <onnx/onnx_pb.h>

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>

namespace systolic::frontend {

static_assert(std::endian::native == std::endian::little, "tensor files are little-endian");

using runtime::HostTensor;
using ir::DType;

namespace {

constexpr char kNpyMagic[] = "\x93NUMPY";
constexpr std::size_t kNpyMagicLen = 6;

Status read_file(const std::string& path, std::string* out) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return Err("%s: cannot open: %s", path.c_str(), std::strerror(errno));
  char buf[1 << 16];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out->append(buf, n);
  bool bad = std::ferror(f);
  int e = errno;
  std::fclose(f);
  if (bad) return Err("%s: read error: %s", path.c_str(), std::strerror(e));
  return Status::Ok();
}

Status write_file(const std::string& path, const std::string& bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return Err("%s: cannot create: %s", path.c_str(), std::strerror(errno));
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) return Err("%s: write failed: %s", path.c_str(), std::strerror(errno));
  return Status::Ok();
}

std::string shape_string(const ir::Shape& s) {
  std::string r = "[";
  for (std::size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + std::to_string(s[i]);
  return r + "]";
}

// Element count of a shape, or nullopt on a negative dim or overflow past 2^62.
std::optional<int64_t> checked_numel(const ir::Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n) || n > (int64_t{1} << 62)) return std::nullopt;
  }
  return n;
}

// Expected byte size of (dtype, shape), or an error naming the file.
Expected<std::size_t> expected_bytes(const std::string& path, DType dt, const ir::Shape& shape) {
  auto n = checked_numel(shape);
  int64_t bytes = 0;
  if (!n || __builtin_mul_overflow(*n, static_cast<int64_t>(ir::dtype_size(dt)), &bytes))
    return Err("%s: invalid shape %s (negative or too large)", path.c_str(),
               shape_string(shape).c_str());
  return static_cast<std::size_t>(bytes);
}

// ---- .npy ----

// A Python literal as it appears in an .npy header dict: string, bool or tuple of ints.
struct PyValue {
  enum Kind { str, boolean, tuple } kind = str;
  std::string s;
  bool b = false;
  std::vector<int64_t> ints;
};

// Minimal parser for the header dict numpy writes: {'key': value, ...}.
class HeaderParser {
 public:
  explicit HeaderParser(const std::string& text) : t_(text) {}

  bool parse(std::map<std::string, PyValue>* out, std::string* why) {
    skip_ws();
    if (!eat('{')) return fail(why, "header is not a dict");
    while (true) {
      skip_ws();
      if (eat('}')) break;
      std::string key;
      if (!parse_string(&key)) return fail(why, "expected a quoted key");
      skip_ws();
      if (!eat(':')) return fail(why, "expected ':' after key");
      skip_ws();
      PyValue v;
      if (!parse_value(&v)) return fail(why, "unsupported value for key '" + key + "'");
      if (out->count(key)) return fail(why, "duplicate key '" + key + "'");
      (*out)[key] = std::move(v);
      skip_ws();
      if (eat('}')) break;
      if (!eat(',')) return fail(why, "expected ',' or '}'");
    }
    skip_ws();
    if (p_ != t_.size()) return fail(why, "trailing characters after the dict");
    return true;
  }

 private:
  static bool fail(std::string* why, std::string msg) {
    *why = std::move(msg);
    return false;
  }
  void skip_ws() {
    while (p_ < t_.size() && (t_[p_] == ' ' || t_[p_] == '\t' || t_[p_] == '\n' || t_[p_] == '\r'))
      ++p_;
  }
  bool eat(char c) {
    if (p_ < t_.size() && t_[p_] == c) return ++p_, true;
    return false;
  }
  bool eat_word(const char* w) {
    std::size_t n = std::strlen(w);
    if (t_.compare(p_, n, w) == 0) return p_ += n, true;
    return false;
  }
  bool parse_string(std::string* s) {
    if (p_ >= t_.size() || (t_[p_] != '\'' && t_[p_] != '"')) return false;
    char q = t_[p_++];
    while (p_ < t_.size() && t_[p_] != q) {
      if (t_[p_] == '\\') return false;  // escapes never occur in numpy's keys or descrs
      s->push_back(t_[p_++]);
    }
    return eat(q);
  }
  bool parse_int(int64_t* v) {
    std::size_t start = p_;
    int64_t x = 0;
    while (p_ < t_.size() && t_[p_] >= '0' && t_[p_] <= '9') {
      if (__builtin_mul_overflow(x, 10, &x) || __builtin_add_overflow(x, t_[p_] - '0', &x))
        return false;
      ++p_;
    }
    if (p_ == start) return false;
    eat('L');  // Python 2 long suffix
    *v = x;
    return true;
  }
  bool parse_value(PyValue* v) {
    if (p_ < t_.size() && (t_[p_] == '\'' || t_[p_] == '"')) {
      v->kind = PyValue::str;
      return parse_string(&v->s);
    }
    if (eat_word("True")) return v->kind = PyValue::boolean, v->b = true, true;
    if (eat_word("False")) return v->kind = PyValue::boolean, v->b = false, true;
    if (!eat('(')) return false;
    v->kind = PyValue::tuple;
    while (true) {
      skip_ws();
      if (eat(')')) return true;
      int64_t d;
      if (!parse_int(&d)) return false;
      v->ints.push_back(d);
      skip_ws();
      if (eat(')')) return true;
      if (!eat(',')) return false;
    }
  }

  const std::string& t_;
  std::size_t p_ = 0;
};

// Maps a descr such as '<f4' to a DType; sets *why on failure.
std::optional<DType> dtype_from_descr(const std::string& d, std::string* why) {
  static const std::map<std::string, DType> kinds = {
      {"f2", DType::f16}, {"f4", DType::f32}, {"f8", DType::f64}, {"i1", DType::i8},
      {"i2", DType::i16}, {"i4", DType::i32}, {"i8", DType::i64}, {"u1", DType::u8},
      {"u2", DType::u16}, {"u4", DType::u32}, {"u8", DType::u64}, {"b1", DType::boolean},
  };
  if (d.size() < 2) return *why = "unsupported dtype '" + d + "'", std::nullopt;
  char order = d[0];
  std::string kind = (order == '<' || order == '>' || order == '|' || order == '=') ? d.substr(1) : d;
  auto it = kinds.find(kind);
  if (it == kinds.end()) return *why = "unsupported dtype '" + d + "'", std::nullopt;
  if (order == '>' && ir::dtype_size(it->second) > 1)
    return *why = "big-endian dtype '" + d + "' is not supported (save it little-endian)",
           std::nullopt;
  return it->second;
}

const char* descr_for(DType t) {
  switch (t) {
    case DType::f16: return "<f2";
    case DType::f32: return "<f4";
    case DType::f64: return "<f8";
    case DType::i8: return "|i1";
    case DType::i16: return "<i2";
    case DType::i32: return "<i4";
    case DType::i64: return "<i8";
    case DType::u8: return "|u1";
    case DType::u16: return "<u2";
    case DType::u32: return "<u4";
    case DType::u64: return "<u8";
    case DType::boolean: return "|b1";
    default: return nullptr;
  }
}

uint64_t read_le(const std::string& b, std::size_t off, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(b[off + i]);
  return v;
}

Expected<HostTensor> parse_npy(const std::string& path, const std::string& bytes) {
  const char* p = path.c_str();
  if (bytes.size() < kNpyMagicLen + 2) return Err("%s: truncated .npy header", p);
  int major = static_cast<uint8_t>(bytes[6]), minor = static_cast<uint8_t>(bytes[7]);
  if (!((major == 1 || major == 2 || major == 3) && minor == 0))
    return Err("%s: unsupported .npy format version %d.%d", p, major, minor);
  std::size_t len_bytes = major == 1 ? 2 : 4;
  std::size_t prefix = 8 + len_bytes;
  if (bytes.size() < prefix) return Err("%s: truncated .npy header", p);
  uint64_t hlen = read_le(bytes, 8, static_cast<int>(len_bytes));
  if (hlen > bytes.size() - prefix)
    return Err("%s: truncated .npy header (header length %llu, file has %zu bytes)", p,
               static_cast<unsigned long long>(hlen), bytes.size());
  std::string header = bytes.substr(prefix, hlen);
  if (header.find('\0') != std::string::npos) return Err("%s: .npy header contains NUL", p);

  std::map<std::string, PyValue> dict;
  std::string why;
  if (!HeaderParser(header).parse(&dict, &why))
    return Err("%s: malformed .npy header: %s", p, why.c_str());
  if (dict.size() != 3 || !dict.count("descr") || !dict.count("fortran_order") ||
      !dict.count("shape"))
    return Err("%s: .npy header must have exactly the keys descr, fortran_order, shape", p);
  const PyValue &descr = dict["descr"], &fortran = dict["fortran_order"], &shape = dict["shape"];
  if (descr.kind != PyValue::str) return Err("%s: unsupported dtype (structured arrays)", p);
  if (fortran.kind != PyValue::boolean) return Err("%s: fortran_order is not a bool", p);
  if (shape.kind != PyValue::tuple) return Err("%s: shape is not a tuple", p);
  if (fortran.b)
    return Err("%s: fortran_order=True is not supported (save a C-contiguous array)", p);
  auto dt = dtype_from_descr(descr.s, &why);
  if (!dt) return Err("%s: %s", p, why.c_str());

  HostTensor t;
  t.dtype = *dt;
  t.shape = shape.ints;
  auto need = expected_bytes(path, t.dtype, t.shape);
  if (!need.ok()) return need.status();
  std::size_t have = bytes.size() - prefix - hlen;
  if (have != *need)
    return Err("%s: data size %zu bytes does not match %s %s (%zu bytes)%s", p, have,
               ir::dtype_name(t.dtype), shape_string(t.shape).c_str(), *need,
               have < *need ? ": truncated" : "");
  t.data.assign(bytes.begin() + prefix + hlen, bytes.end());
  return t;
}

// ---- .pb ----

std::optional<DType> dtype_from_onnx(int32_t v) {
  switch (v) {
    case 1: case 2: case 3: case 4: case 5: case 6: case 7: case 9: case 10: case 11: case 12:
    case 13: case 16:
      return static_cast<DType>(v);
    default:
      return std::nullopt;
  }
}

// Copies the low dtype_size bytes of each typed-field value (ONNX stores small types widened).
template <typename Src>
void narrow_copy(const Src& src, std::size_t elem, std::vector<uint8_t>* out) {
  out->resize(static_cast<std::size_t>(src.size()) * elem);
  for (int i = 0; i < src.size(); ++i) {
    auto v = src.Get(i);
    std::memcpy(out->data() + i * elem, &v, elem);
  }
}

Expected<HostTensor> parse_pb(const std::string& path, const std::string& bytes) {
  const char* p = path.c_str();
  onnx::TensorProto tp;
  if (!tp.ParseFromString(bytes))
    return Err("%s: not a .npy file and not a valid ONNX TensorProto (parse failed)", p);
  auto dt = dtype_from_onnx(tp.data_type());
  if (!dt) {
    if (tp.data_type() == 8) return Err("%s: string tensors are not supported", p);
    return Err("%s: unsupported or missing TensorProto data_type %d (is this a tensor file?)", p,
               static_cast<int>(tp.data_type()));
  }
  if (tp.data_location() == onnx::TensorProto::EXTERNAL)
    return Err("%s: tensors with external data are not supported", p);
  if (tp.has_segment()) return Err("%s: segmented tensors are not supported", p);

  HostTensor t;
  t.dtype = *dt;
  t.shape.assign(tp.dims().begin(), tp.dims().end());
  auto need = expected_bytes(path, t.dtype, t.shape);
  if (!need.ok()) return need.status();
  const std::size_t elem = ir::dtype_size(t.dtype);
  const std::size_t numel = *need / elem;

  if (tp.has_raw_data()) {
    if (tp.raw_data().size() != *need)
      return Err("%s: raw_data has %zu bytes but %s %s needs %zu", p, tp.raw_data().size(),
                 ir::dtype_name(t.dtype), shape_string(t.shape).c_str(), *need);
    t.data.assign(tp.raw_data().begin(), tp.raw_data().end());
    return t;
  }
  std::size_t count = 0;
  const char* field = "";
  switch (t.dtype) {
    case DType::f32:
      field = "float_data", count = tp.float_data_size();
      narrow_copy(tp.float_data(), elem, &t.data);
      break;
    case DType::f64:
      field = "double_data", count = tp.double_data_size();
      narrow_copy(tp.double_data(), elem, &t.data);
      break;
    case DType::i64:
      field = "int64_data", count = tp.int64_data_size();
      narrow_copy(tp.int64_data(), elem, &t.data);
      break;
    case DType::u32: case DType::u64:
      field = "uint64_data", count = tp.uint64_data_size();
      narrow_copy(tp.uint64_data(), elem, &t.data);
      break;
    default:  // i32, i16, i8, u16, u8, bool, f16, bf16
      field = "int32_data", count = tp.int32_data_size();
      narrow_copy(tp.int32_data(), elem, &t.data);
      break;
  }
  if (count != numel)
    return Err("%s: %s has %zu values but %s %s needs %zu", p, field, count,
               ir::dtype_name(t.dtype), shape_string(t.shape).c_str(), numel);
  return t;
}

Status check_tensor(const std::string& path, const HostTensor& t) {
  if (ir::dtype_size(t.dtype) == 0)
    return Err("%s: cannot save dtype %s", path.c_str(), ir::dtype_name(t.dtype));
  auto need = expected_bytes(path, t.dtype, t.shape);
  if (!need.ok()) return need.status();
  if (t.data.size() != *need)
    return Err("%s: tensor holds %zu bytes but %s %s needs %zu", path.c_str(), t.data.size(),
               ir::dtype_name(t.dtype), shape_string(t.shape).c_str(), *need);
  return Status::Ok();
}

}  // namespace

Expected<HostTensor> parse_tensor(const std::string& bytes, const std::string& where) {
  if (bytes.empty()) return Err("%s: file is empty", where.c_str());
  if (bytes.compare(0, kNpyMagicLen, kNpyMagic, kNpyMagicLen) == 0) return parse_npy(where, bytes);
  return parse_pb(where, bytes);
}

Expected<HostTensor> load_tensor(const std::string& path) {
  std::string bytes;
  SYSTOLIC_RETURN_IF_ERROR(read_file(path, &bytes));
  return parse_tensor(bytes, path);
}

Status save_npy(const std::string& path, const HostTensor& t) {
  SYSTOLIC_RETURN_IF_ERROR(check_tensor(path, t));
  // numpy has no bfloat16: its bits go out as uint16, as ONNX's test data and the Python module
  // give them (`np.load(f).astype(np.uint32) << 16` viewed as float32 reads them back).
  const char* descr = t.dtype == DType::bf16 ? descr_for(DType::u16) : descr_for(t.dtype);
  if (!descr) return Err("%s: dtype %s has no .npy equivalent", path.c_str(), ir::dtype_name(t.dtype));
  std::string shape = "(";
  for (std::size_t i = 0; i < t.shape.size(); ++i)
    shape += (i ? ", " : "") + std::to_string(t.shape[i]);
  shape += t.shape.size() == 1 ? ",)" : ")";
  std::string header =
      std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad with spaces and a final '\n' so the data starts at a multiple of 64 (as numpy does).
  auto padded = [&](std::size_t prefix) { return (prefix + header.size() + 1 + 63) / 64 * 64; };
  int major = padded(10) - 10 <= 65535 ? 1 : 2;
  std::size_t prefix = major == 1 ? 10 : 12;
  std::size_t total = padded(prefix);
  header.append(total - prefix - header.size() - 1, ' ');
  header.push_back('\n');

  std::string out(kNpyMagic, kNpyMagicLen);
  out.push_back(static_cast<char>(major));
  out.push_back('\0');
  for (std::size_t i = 0; i < prefix - 8; ++i)
    out.push_back(static_cast<char>((header.size() >> (8 * i)) & 0xff));
  out += header;
  out.append(reinterpret_cast<const char*>(t.data.data()), t.data.size());
  return write_file(path, out);
}

Status save_pb(const std::string& path, const HostTensor& t, const std::string& name) {
  SYSTOLIC_RETURN_IF_ERROR(check_tensor(path, t));
  if (!dtype_from_onnx(static_cast<int32_t>(t.dtype)))
    return Err("%s: dtype %s has no TensorProto equivalent", path.c_str(), ir::dtype_name(t.dtype));
  onnx::TensorProto tp;
  tp.set_name(name);
  tp.set_data_type(static_cast<int32_t>(t.dtype));
  for (int64_t d : t.shape) tp.add_dims(d);
  tp.set_raw_data(t.data.data(), t.data.size());
  std::string out;
  if (!tp.SerializeToString(&out)) return Err("%s: cannot serialize TensorProto", path.c_str());
  return write_file(path, out);
}

}  // namespace systolic::frontend
