// The plan file: "SYSTPLAN", a version, then the program's fields in little-endian binary.
// Every read is bounds-checked so a truncated or foreign file gives an error, not a crash.
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string_view>

#include "ir/half.h"
#include "passes/pass.h"
#include "plan/program.h"

namespace systolic::plan {

// FNV-1a over the body, a 64-bit word at a time (a byte at a time for the tail): a damaged
// plan is refused before any of it is trusted, at memory speed (plans hold the weights).
uint64_t plan_checksum(const char* data, std::size_t n) {
  uint64_t h = 1469598103934665603ull;
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, data + i, 8);
    h = (h ^ w) * 1099511628211ull;
  }
  for (; i < n; ++i) h = (h ^ static_cast<uint8_t>(data[i])) * 1099511628211ull;
  return h;
}

namespace {

constexpr char kMagic[8] = {'S', 'Y', 'S', 'T', 'P', 'L', 'A', 'N'};

struct Writer {
  std::string out;
  template <typename T>
  void pod(T v) { out.append(reinterpret_cast<const char*>(&v), sizeof(T)); }
  void str(const std::string& s) {
    pod<uint64_t>(s.size());
    out += s;
  }
  void ints(const std::vector<int64_t>& v) {
    pod<uint64_t>(v.size());
    for (int64_t x : v) pod(x);
  }
  void tensor(const ir::Tensor& t) {
    str(t.name);
    pod<uint8_t>(static_cast<uint8_t>(t.dtype));
    ints(t.shape);
    pod<uint8_t>(t.shape_known);
    pod<uint8_t>(t.dynamic);
    pod<uint8_t>(static_cast<uint8_t>(t.layout));
    pod<int64_t>(t.arena_offset);
    pod<uint8_t>(static_cast<uint8_t>(t.quant.qtype));
    pod<int32_t>(t.quant.axis);
    pod<uint64_t>(t.quant.scale.size());
    for (std::size_t i = 0; i < t.quant.scale.size(); ++i) {
      pod(t.quant.scale[i]);
      pod(t.quant.zero_point[i]);
    }
    pod<uint8_t>(t.data != nullptr);
    if (t.data) {
      pod<uint64_t>(t.data->size());
      out.append(reinterpret_cast<const char*>(t.data->data()), t.data->size());
    }
  }
  void graph(const ir::Graph& g) {
    pod<int32_t>(g.opset);
    pod<int64_t>(g.arena_bytes);
    pod<uint64_t>(g.tensors.size());
    for (const ir::Tensor& t : g.tensors) tensor(t);
    pod<uint64_t>(g.nodes.size());
    for (const ir::Node& n : g.nodes) {
      pod<uint16_t>(static_cast<uint16_t>(n.op));
      str(n.name);
      ints(std::vector<int64_t>(n.inputs.begin(), n.inputs.end()));
      ints(std::vector<int64_t>(n.outputs.begin(), n.outputs.end()));
      pod<uint64_t>(n.attrs.size());
      for (const auto& [k, a] : n.attrs) {
        str(k);
        pod<uint8_t>(a.kind);
        pod(a.int_v);
        pod(a.float_v);
        str(a.str_v);
        ints(a.ints_v);
        pod<uint64_t>(a.floats_v.size());
        for (float f : a.floats_v) pod(f);
        pod<uint8_t>(a.tensor_v != nullptr);
        if (a.tensor_v) tensor(*a.tensor_v);
        pod<uint8_t>(a.graph_v != nullptr);
        if (a.graph_v) graph(*a.graph_v);
      }
    }
    ints(std::vector<int64_t>(g.inputs.begin(), g.inputs.end()));
    ints(std::vector<int64_t>(g.outputs.begin(), g.outputs.end()));
  }
};

// How deep a plan's If branches may nest (the reader recurses once per level).
constexpr int kMaxNesting = 16;

struct Reader {
  std::string_view in;
  std::size_t pos = 0;
  bool bad = false;
  uint32_t version = kPlanVersion;  // version 5 plans lack the dynamic-tail fields
  template <typename T>
  T pod() {
    T v{};
    if (pos + sizeof(T) > in.size()) {
      bad = true;
      return v;
    }
    std::memcpy(&v, in.data() + pos, sizeof(T));
    pos += sizeof(T);
    return v;
  }
  uint64_t count(std::size_t elem) {
    const uint64_t n = pod<uint64_t>();
    if (bad || n > (in.size() - pos) / std::max<std::size_t>(1, elem)) {
      bad = true;
      return 0;
    }
    return n;
  }
  std::string str() {
    const uint64_t n = count(1);
    std::string s(in.substr(pos, n));
    pos += n;
    return s;
  }
  std::vector<int64_t> ints() {
    const uint64_t n = count(8);
    std::vector<int64_t> v(n);
    for (auto& x : v) x = pod<int64_t>();
    return v;
  }
  ir::Tensor tensor() {
    ir::Tensor t;
    t.name = str();
    t.dtype = static_cast<ir::DType>(pod<uint8_t>());
    t.shape = ints();
    t.shape_known = pod<uint8_t>();
    if (version >= 6) t.dynamic = pod<uint8_t>();
    t.layout = static_cast<ir::Layout>(pod<uint8_t>());
    t.arena_offset = pod<int64_t>();
    t.quant.qtype = static_cast<ir::DType>(pod<uint8_t>());
    t.quant.axis = pod<int32_t>();
    const uint64_t nq = count(8);
    for (uint64_t i = 0; i < nq && !bad; ++i) {
      t.quant.scale.push_back(pod<float>());
      t.quant.zero_point.push_back(pod<int32_t>());
    }
    if (pod<uint8_t>()) {
      const uint64_t n = count(1);
      const auto* p = reinterpret_cast<const uint8_t*>(in.data()) + pos;
      t.data = std::make_shared<AlignedBytes>(p, p + n);
      pos += n;
    }
    return t;
  }
  void graph(ir::Graph& g, int depth) {
    g.opset = pod<int32_t>();
    g.arena_bytes = pod<int64_t>();
    const uint64_t nt = count(16);
    for (uint64_t i = 0; i < nt && !bad; ++i) g.tensors.push_back(tensor());
    const uint64_t nn = count(16);
    auto ids = [&](const std::vector<int64_t>& v) {
      std::vector<int> out;
      for (int64_t x : v) {
        if (x < -1 || x >= static_cast<int64_t>(g.tensors.size())) bad = true;
        out.push_back(static_cast<int>(x));
      }
      return out;
    };
    for (uint64_t i = 0; i < nn && !bad; ++i) {
      ir::Node n;
      const uint16_t op = pod<uint16_t>();
      if (op >= ir::kOpCount) bad = true;
      n.op = static_cast<ir::Op>(op);
      n.name = str();
      n.inputs = ids(ints());
      n.outputs = ids(ints());
      const uint64_t na = count(8);
      for (uint64_t k = 0; k < na && !bad; ++k) {
        std::string key = str();
        ir::Attr a;
        a.kind = static_cast<ir::Attr::Kind>(pod<uint8_t>());
        a.int_v = pod<int64_t>();
        a.float_v = pod<float>();
        a.str_v = str();
        a.ints_v = ints();
        const uint64_t nf = count(4);
        for (uint64_t j = 0; j < nf; ++j) a.floats_v.push_back(pod<float>());
        if (pod<uint8_t>()) a.tensor_v = std::make_shared<ir::Tensor>(tensor());
        if (version >= 6 && pod<uint8_t>()) {
          if (depth >= kMaxNesting) bad = true;
          a.graph_v = std::make_shared<ir::Graph>();
          if (!bad) graph(*a.graph_v, depth + 1);
        }
        n.attrs[key] = std::move(a);
      }
      g.nodes.push_back(std::move(n));
    }
    g.inputs = ids(ints());
    g.outputs = ids(ints());
  }
};

// The dynamic tail's constants (and its branches') must match their shapes; its shapes are
// otherwise inferred from each run's values.
Status check_tail(const ir::Graph& g) {
  for (const ir::Tensor& t : g.tensors)
    if (t.data && (ir::checked_num_elements(t.shape) < 0 || t.data->size() != t.bytes() || !ir::dtype_storable(t.dtype)))
      return Err("plan file is corrupt (tensor %s)", t.name.c_str());
  for (const ir::Node& n : g.nodes)
    for (const auto& [k, a] : n.attrs)
      if (a.graph_v) SYSTOLIC_RETURN_IF_ERROR(check_tail(*a.graph_v));
  return ir::verify(g);
}

// Steps without a kernel run on the interpreter, which trusts each node's shapes as shape
// inference made them: re-derive them and refuse a plan whose stored shapes disagree. (Kernel
// steps are checked against their parameters when a Session prepares them.)
Status check_interpreted_shapes(const ir::Graph& g) {
  ir::Graph copy = g;  // constants share their bytes
  for (ir::Node& n : copy.nodes) {
    if (n.attrs.count("kernel")) continue;
    std::vector<std::pair<ir::Shape, ir::DType>> stored;
    for (int o : n.outputs)
      stored.emplace_back(o >= 0 ? copy.t(o).shape : ir::Shape{}, o >= 0 ? copy.t(o).dtype : ir::DType::undefined);
    const Status st = passes::infer_node(copy, n);
    if (!st.ok()) return Err("plan file is corrupt (%s)", st.message().c_str());
    for (std::size_t k = 0; k < n.outputs.size(); ++k) {
      const int o = n.outputs[k];
      if (o >= 0 && (copy.t(o).shape != stored[k].first || copy.t(o).dtype != stored[k].second))
        return Err("plan file is corrupt (%s %s: output %s is %s, its inputs make it %s)", ir::op_name(n.op),
                   n.name.c_str(), copy.t(o).name.c_str(), ir::shape_str(stored[k].first).c_str(),
                   ir::shape_str(copy.t(o).shape).c_str());
    }
  }
  return Status::Ok();
}

}  // namespace

std::string serialize_program(const Program& p) {
  Writer w;
  w.out.append(kMagic, 8);
  w.pod<uint32_t>(kPlanVersion);
  w.str(p.isa);
  w.str(p.precision);
  w.pod<int64_t>(p.batch);
  w.pod<int64_t>(p.micro_batch);
  w.pod<uint8_t>(p.optimized);
  const CompileStats& s = p.stats;
  for (int64_t v : {s.nodes_before, s.nodes_after, s.arena_bytes, s.naive_bytes, s.weight_bytes}) w.pod(v);
  w.pod(s.compile_ms);
  w.str(p.kernel_log);
  const ir::ImagePreprocess& pre = p.preprocess;
  for (int v : {pre.resize, pre.crop_h, pre.crop_w}) w.pod<int32_t>(v);
  for (const auto* v : {&pre.mean, &pre.std}) {
    w.pod<uint64_t>(v->size());
    for (float f : *v) w.pod(f);
  }
  w.graph(p.graph);
  w.pod<uint8_t>(p.tail != nullptr);
  if (p.tail) w.graph(*p.tail);
  w.pod<uint64_t>(plan_checksum(w.out.data(), w.out.size()));
  return w.out;
}

Expected<std::shared_ptr<Program>> load_program_bytes(std::string_view bytes) {
  if (bytes.size() < 12 || std::memcmp(bytes.data(), kMagic, 8) != 0)
    return Err("not a systolic plan (bad magic)");
  Reader r{bytes, 8};
  const uint32_t version = r.pod<uint32_t>();
  if (version < kOldestPlanVersion || version > kPlanVersion) {
    if (kOldestPlanVersion == kPlanVersion)
      return Err("plan format version %u, this systolic reads version %u; recompile the model", version, kPlanVersion);
    return Err("plan format version %u, this systolic reads versions %u to %u; recompile the model", version,
               kOldestPlanVersion, kPlanVersion);
  }
  r.version = version;
  uint64_t stored = 0;
  if (bytes.size() < 20) return Err("plan file is truncated or corrupt");
  std::memcpy(&stored, bytes.data() + bytes.size() - 8, 8);
  if (stored != plan_checksum(bytes.data(), bytes.size() - 8)) return Err("plan file is truncated or corrupt (checksum)");
  auto p = std::make_shared<Program>();
  p->isa = r.str();
  p->precision = r.str();
  if (p->precision != "fp32" && p->precision != "bf16" && p->precision != "int8") r.bad = true;
  p->batch = r.pod<int64_t>();
  p->micro_batch = version >= 7 ? r.pod<int64_t>() : p->batch;
  if (version >= 7 && (p->micro_batch < 1 || p->batch < p->micro_batch || p->batch % p->micro_batch != 0)) r.bad = true;
  p->optimized = r.pod<uint8_t>();
  CompileStats& s = p->stats;
  for (int64_t* v : {&s.nodes_before, &s.nodes_after, &s.arena_bytes, &s.naive_bytes, &s.weight_bytes}) *v = r.pod<int64_t>();
  s.compile_ms = r.pod<double>();
  p->kernel_log = r.str();
  ir::ImagePreprocess& pre = p->preprocess;
  for (int* v : {&pre.resize, &pre.crop_h, &pre.crop_w}) *v = r.pod<int32_t>();
  for (auto* v : {&pre.mean, &pre.std}) {
    const uint64_t nv = r.count(4);
    for (uint64_t i = 0; i < nv && !r.bad; ++i) v->push_back(r.pod<float>());
  }
  ir::Graph& g = p->graph;
  r.graph(g, 0);
  if (version >= 6 && r.pod<uint8_t>() && !r.bad) {
    auto tail = std::make_shared<ir::Graph>();
    r.graph(*tail, 0);
    p->tail = std::move(tail);
  }
  r.pod<uint64_t>();  // the checksum, verified above
  if (r.bad || r.pos != bytes.size()) return Err("plan file is truncated or corrupt");
  // Constant sizes must match their shapes before anything reads them.
  if (g.arena_bytes < 0) return Err("plan file is corrupt (arena size)");
  // Graph inputs and outputs are sized too, placed or not: callers allocate their buffers.
  std::vector<char> io(g.tensors.size(), 0);
  for (const auto* ids : {&g.inputs, &g.outputs})
    for (int id : *ids)
      if (id >= 0 && static_cast<std::size_t>(id) < io.size()) io[static_cast<std::size_t>(id)] = 1;
  for (std::size_t k = 0; k < g.tensors.size(); ++k) {
    const ir::Tensor& t = g.tensors[k];
    const bool sized = t.data || t.arena_offset >= 0 || io[k];
    if ((t.layout != ir::Layout::plain && t.layout != ir::Layout::nhwc) ||
        (t.layout == ir::Layout::nhwc && t.shape.size() != 4))
      return Err("plan file is corrupt (tensor %s has an invalid layout)", t.name.c_str());
    // The memory plan places every tensor on a 64-byte boundary (-1: not in the arena); the
    // kernels rely on it.
    if (t.arena_offset < -1 || (t.arena_offset >= 0 && t.arena_offset % 64 != 0))
      return Err("plan file is corrupt (tensor %s is not aligned in the arena)", t.name.c_str());
    // Quantization parameters the kernels compute with: finite positive scales, zero points of
    // a byte (the int8 kernels' sums assume it).
    for (std::size_t i = 0; i < t.quant.scale.size(); ++i)
      if (!(t.quant.scale[i] > 0.f) || !std::isfinite(t.quant.scale[i]) || t.quant.zero_point[i] < -128 ||
          t.quant.zero_point[i] > 255)
        return Err("plan file is corrupt (tensor %s has invalid quantization)", t.name.c_str());
    if (sized && ir::checked_num_elements(t.shape) < 0)
      return Err("plan file is corrupt (tensor %s has shape %s)", t.name.c_str(), ir::shape_str(t.shape).c_str());
    if ((t.data && t.data->size() != t.bytes()) || (!ir::dtype_storable(t.dtype) && t.dtype != ir::DType::undefined) ||
        (t.arena_offset >= 0 &&
         (t.arena_offset > g.arena_bytes || static_cast<int64_t>(t.bytes()) > g.arena_bytes - t.arena_offset)))
      return Err("plan file is corrupt (tensor %s)", t.name.c_str());
  }
  SYSTOLIC_RETURN_IF_ERROR(ir::verify(g));
  SYSTOLIC_RETURN_IF_ERROR(check_interpreted_shapes(g));
  if (p->tail) {
    Status st = check_tail(*p->tail);
    if (!st.ok()) return Err("plan file is corrupt (dynamic tail: %s)", st.message().c_str());
    for (int id : p->tail->inputs) {
      bool found = false;
      for (const auto* ids : {&g.outputs, &g.inputs})
        for (int s : *ids) found = found || g.t(s).name == p->tail->t(id).name;
      if (!found) return Err("plan file is corrupt (the dynamic tail reads %s, which nothing gives)", p->tail->t(id).name.c_str());
    }
  }
  return p;
}

Status save_program(const Program& p, const std::string& path) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return Err("cannot write %s", path.c_str());
  const std::string bytes = serialize_program(p);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!f) return Err("writing %s failed", path.c_str());
  return Status::Ok();
}

Expected<std::shared_ptr<Program>> load_program(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Err("cannot open plan file %s", path.c_str());
  std::stringstream ss;
  ss << f.rdbuf();
  auto r = load_program_bytes(ss.str());
  if (!r.ok()) return Err("%s: %s", path.c_str(), r.status().message().c_str());
  return r;
}

}  // namespace systolic::plan
