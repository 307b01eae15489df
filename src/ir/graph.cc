// Graph helpers, the verifier and the printer.
#include "ir/graph.h"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <unordered_set>

namespace systolic::ir {

const char* op_name(Op op) {
  static const char* kNames[] = {
#define OP(name) #name,
#include "ir/ops.inc"
#undef OP
  };
  return kNames[static_cast<int>(op)];
}

std::optional<Op> op_from_name(const std::string& name) {
#define OP(n) \
  if (name == #n) return Op::n;
#include "ir/ops.inc"
#undef OP
  return std::nullopt;
}

int64_t num_elements(const Shape& s) {
  // Never overflows: valid shapes are checked (checked_num_elements), and a product that
  // would wrap saturates instead, so every size derived from it stays out of range.
  if (std::find(s.begin(), s.end(), 0) != s.end()) return 0;
  int64_t n = 1;
  for (int64_t d : s)
    if (__builtin_mul_overflow(n, d, &n)) return INT64_MAX;
  return n;
}

int64_t checked_num_elements(const Shape& s) {
  int64_t n = 1;
  // The product of the non-zero dims is bounded too, so no partial product of the dims (an
  // outer or inner extent) can overflow even when a zero dim makes the tensor empty.
  bool empty = false;
  for (int64_t d : s) {
    if (d < 0 || d > kMaxElements) return -1;
    if (d == 0) empty = true;
    else if (__builtin_mul_overflow(n, d, &n) || n > kMaxElements) return -1;
  }
  return empty ? 0 : n;
}

std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i) r += ",";
    r += s[i] < 0 ? "?" : std::to_string(s[i]);
  }
  return r + "]";
}

int64_t Node::i(const std::string& k, int64_t def) const {
  auto it = attrs.find(k);
  return it == attrs.end() ? def : it->second.int_v;
}
float Node::f(const std::string& k, float def) const {
  auto it = attrs.find(k);
  if (it == attrs.end()) return def;
  return it->second.kind == Attr::i ? static_cast<float>(it->second.int_v) : it->second.float_v;
}
std::string Node::s(const std::string& k, const std::string& def) const {
  auto it = attrs.find(k);
  return it == attrs.end() ? def : it->second.str_v;
}
std::vector<int64_t> Node::ints(const std::string& k, std::vector<int64_t> def) const {
  auto it = attrs.find(k);
  return it == attrs.end() ? def : it->second.ints_v;
}
void Node::set_i(const std::string& k, int64_t v) {
  Attr a;
  a.kind = Attr::i;
  a.int_v = v;
  attrs[k] = a;
}
void Node::set_f(const std::string& k, float v) {
  Attr a;
  a.kind = Attr::f;
  a.float_v = v;
  attrs[k] = a;
}
void Node::set_ints(const std::string& k, std::vector<int64_t> v) {
  Attr a;
  a.kind = Attr::ints;
  a.ints_v = std::move(v);
  attrs[k] = a;
}

void Node::set_floats(const std::string& k, std::vector<float> v) {
  Attr a;
  a.kind = Attr::floats;
  a.floats_v = std::move(v);
  attrs[k] = a;
}

int Graph::add_tensor(Tensor t) {
  tensors.push_back(std::move(t));
  return static_cast<int>(tensors.size()) - 1;
}

int Graph::add_const(const std::string& name, DType dtype, Shape shape, AlignedBytes bytes) {
  Tensor t;
  t.name = name;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.shape_known = true;
  t.data = std::make_shared<AlignedBytes>(std::move(bytes));
  return add_tensor(std::move(t));
}

int Graph::add_const_f32(const std::string& name, Shape shape, const std::vector<float>& v) {
  AlignedBytes b(v.size() * 4);
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return add_const(name, DType::f32, std::move(shape), std::move(b));
}

int Graph::add_const_i64(const std::string& name, Shape shape, const std::vector<int64_t>& v) {
  AlignedBytes b(v.size() * 8);
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return add_const(name, DType::i64, std::move(shape), std::move(b));
}

std::string Graph::fresh_name(const std::string& base) {
  return base + "#" + std::to_string(++name_counter);
}

std::vector<std::vector<int>> Graph::consumers() const {
  std::vector<std::vector<int>> c(tensors.size());
  for (std::size_t n = 0; n < nodes.size(); ++n)
    for (int in : nodes[n].inputs)
      if (in >= 0) c[in].push_back(static_cast<int>(n));
  return c;
}

std::vector<int> Graph::producers() const {
  std::vector<int> p(tensors.size(), -1);
  for (std::size_t n = 0; n < nodes.size(); ++n)
    for (int out : nodes[n].outputs)
      if (out >= 0) p[out] = static_cast<int>(n);
  return p;
}

bool Graph::is_graph_output(int tensor) const {
  for (int o : outputs)
    if (o == tensor) return true;
  return false;
}

void Graph::remove_nodes(const std::vector<char>& drop) {
  std::vector<Node> kept;
  kept.reserve(nodes.size());
  for (std::size_t k = 0; k < nodes.size(); ++k)
    if (!drop[k]) kept.push_back(std::move(nodes[k]));
  nodes = std::move(kept);
}

Status verify(const Graph& g) {
  const int nt = static_cast<int>(g.tensors.size());
  std::vector<char> defined(nt, 0);
  for (int i : g.inputs) {
    if (i < 0 || i >= nt) return Err("verify: graph input id %d out of range", i);
    defined[i] = 1;
  }
  for (int i = 0; i < nt; ++i)
    if (g.tensors[i].is_const()) defined[i] = 1;
  for (const Node& n : g.nodes) {
    for (int in : n.inputs) {
      if (in >= nt) return Err("verify: node %s input id %d out of range", n.name.c_str(), in);
      if (in >= 0 && !defined[in])
        return Err("verify: node %s reads %s before it is produced", n.name.c_str(),
                   g.tensors[in].name.c_str());
    }
    for (const auto& [k, a] : n.attrs) {
      if (a.kind != Attr::graph) continue;
      // A branch's own inputs stand for the node's inputs after the first (the condition).
      if (!a.graph_v || a.graph_v->inputs.size() + 1 != n.inputs.size())
        return Err("verify: node %s: branch %s does not take the node's %zu values", n.name.c_str(), k.c_str(),
                   n.inputs.empty() ? std::size_t{0} : n.inputs.size() - 1);
      Status st = verify(*a.graph_v);
      if (!st.ok()) return Err("%s (in %s of node %s)", st.message().c_str(), k.c_str(), n.name.c_str());
    }
    for (int out : n.outputs) {
      if (out < 0) continue;
      if (out >= nt) return Err("verify: node %s output id %d out of range", n.name.c_str(), out);
      if (g.tensors[out].is_const())
        return Err("verify: node %s writes constant %s", n.name.c_str(),
                   g.tensors[out].name.c_str());
      if (defined[out] == 2 || (defined[out] == 1))
        return Err("verify: tensor %s has more than one producer", g.tensors[out].name.c_str());
      defined[out] = 2;
    }
  }
  for (int o : g.outputs) {
    if (o < 0 || o >= nt || !defined[o]) return Err("verify: graph output %d is never produced", o);
  }
  return Status::Ok();
}

std::string print_graph(const Graph& g) {
  std::ostringstream os;
  auto tensor_str = [&](int id) {
    if (id < 0) return std::string("-");
    const Tensor& t = g.tensors[id];
    std::string s = t.name + ":" + dtype_name(t.dtype) + shape_str(t.shape);
    if (t.layout == Layout::nhwc) s += "@nhwc";
    if (!t.quant.empty()) {
      std::ostringstream q;
      q << "{" << dtype_name(t.quant.qtype);
      if (t.quant.per_tensor()) q << " s=" << t.quant.scale[0] << " zp=" << t.quant.zero_point[0];
      else q << " " << t.quant.scale.size() << " scales, axis " << t.quant.axis;
      s += q.str() + "}";
    }
    if (t.is_const()) s += "(const)";
    return s;
  };
  os << "inputs:";
  for (int i : g.inputs) os << " " << tensor_str(i);
  os << "\n";
  for (const Node& n : g.nodes) {
    os << "  " << op_name(n.op) << " " << n.name << " (";
    for (std::size_t k = 0; k < n.inputs.size(); ++k) os << (k ? ", " : "") << tensor_str(n.inputs[k]);
    os << ") -> (";
    for (std::size_t k = 0; k < n.outputs.size(); ++k)
      os << (k ? ", " : "") << tensor_str(n.outputs[k]);
    os << ")";
    for (const auto& [k, a] : n.attrs) {
      os << " " << k << "=";
      switch (a.kind) {
        case Attr::i: os << a.int_v; break;
        case Attr::f: os << a.float_v; break;
        case Attr::s: os << a.str_v; break;
        case Attr::ints:
          os << "[";
          for (std::size_t j = 0; j < a.ints_v.size(); ++j) os << (j ? "," : "") << a.ints_v[j];
          os << "]";
          break;
        case Attr::floats: os << "[" << a.floats_v.size() << " floats]"; break;
        case Attr::graph: os << "<graph of " << (a.graph_v ? a.graph_v->nodes.size() : 0) << " nodes>"; break;
        default: os << "?";
      }
    }
    os << "\n";
  }
  os << "outputs:";
  for (int o : g.outputs) os << " " << tensor_str(o);
  os << "\n";
  return os.str();
}

}  // namespace systolic::ir
