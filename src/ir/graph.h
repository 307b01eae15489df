// The IR: typed tensors (shape, layout, optional constant data), nodes and a graph.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/aligned_vector.h"
#include "base/status.h"
#include "ir/dtype.h"

namespace systolic::ir {

enum class Op : uint16_t {
#define OP(name) name,
#include "ir/ops.inc"
#undef OP
};
// How many ops ops.inc lists (a plan's op codes must be below it).
constexpr uint16_t kOpCount = 0
#define OP(name) +1
#include "ir/ops.inc"
#undef OP
    ;
const char* op_name(Op op);
std::optional<Op> op_from_name(const std::string& name);

// Physical order of a 4-D activation. Shapes are always logical (ONNX's NCHW).
enum class Layout : uint8_t { plain = 0, nhwc = 1 };

using Shape = std::vector<int64_t>;
int64_t num_elements(const Shape& s);
// The most elements a tensor in a model or plan may have (2^36: 256 GiB of fp32, past any
// machine this runs on). Larger, negative and overflowing shapes are malformed input.
constexpr int64_t kMaxElements = int64_t{1} << 36;
// The element count, or -1 for a negative dim or a count past kMaxElements (never overflows);
// the non-zero dims of an empty tensor are bounded alike.
int64_t checked_num_elements(const Shape& s);
std::string shape_str(const Shape& s);

// How a tensor's values map to integers: real = (q - zero_point) * scale, one pair for the
// whole tensor, or one per slice along `axis` (per output channel for weights). On a u8/i8
// tensor it describes the stored integers; on a float tensor (a QDQ model's annotation, or
// calibration) the integers the tensor is to be stored as once the plan is lowered to int8.
struct QuantParams {
  std::vector<float> scale;         // empty: not quantized
  std::vector<int32_t> zero_point;  // as many as scale
  int axis = -1;                    // -1: per tensor
  DType qtype = DType::undefined;   // u8 or i8
  bool empty() const { return scale.empty(); }
  bool per_tensor() const { return scale.size() == 1; }
};

struct Tensor {
  std::string name;
  DType dtype = DType::undefined;
  Shape shape;
  bool shape_known = false;
  // The shape depends on values known only at run time (NonZero, NonMaxSuppression, a TopK
  // whose K is computed, an If): the tensor belongs to the plan's dynamic tail.
  bool dynamic = false;
  Layout layout = Layout::plain;
  std::shared_ptr<AlignedBytes> data;  // set for constants (64-byte aligned: packed weights)
  int64_t arena_offset = -1;                    // set by memory planning for activations
  QuantParams quant;

  bool is_const() const { return data != nullptr; }
  int64_t numel() const { return num_elements(shape); }
  std::size_t bytes() const { return static_cast<std::size_t>(numel()) * dtype_size(dtype); }
  template <typename T>
  const T* as() const { return reinterpret_cast<const T*>(data->data()); }
  template <typename T>
  T* mut() { return reinterpret_cast<T*>(data->data()); }
};

struct Graph;

struct Attr {
  enum Kind : uint8_t { none, i, f, s, ints, floats, tensor, graph } kind = none;
  int64_t int_v = 0;
  float float_v = 0.f;
  std::string str_v;
  std::vector<int64_t> ints_v;
  std::vector<float> floats_v;
  std::shared_ptr<Tensor> tensor_v;
  // An If's branch. It reads outer values through its own `inputs`, which match the If node's
  // inputs after the condition one for one (the importer turns captured names into them).
  std::shared_ptr<Graph> graph_v;
};

struct Node {
  Op op = Op::Identity;
  std::string name;
  std::map<std::string, Attr> attrs;
  std::vector<int> inputs;   // tensor ids; -1 for an omitted optional input
  std::vector<int> outputs;  // tensor ids; -1 for an omitted optional output

  bool has(const std::string& k) const { return attrs.count(k) != 0; }
  int64_t i(const std::string& k, int64_t def) const;
  float f(const std::string& k, float def) const;
  std::string s(const std::string& k, const std::string& def) const;
  std::vector<int64_t> ints(const std::string& k, std::vector<int64_t> def = {}) const;
  void set_i(const std::string& k, int64_t v);
  void set_f(const std::string& k, float v);
  void set_ints(const std::string& k, std::vector<int64_t> v);
  void set_floats(const std::string& k, std::vector<float> v);
  int in(std::size_t idx) const { return idx < inputs.size() ? inputs[idx] : -1; }
};

struct Graph {
  std::vector<Tensor> tensors;
  std::vector<Node> nodes;  // topological order
  std::vector<int> inputs;
  std::vector<int> outputs;
  int opset = 13;
  int64_t arena_bytes = -1;  // set by memory planning

  int add_tensor(Tensor t);
  int add_const(const std::string& name, DType dtype, Shape shape, AlignedBytes bytes);
  int add_const_f32(const std::string& name, Shape shape, const std::vector<float>& v);
  int add_const_i64(const std::string& name, Shape shape, const std::vector<int64_t>& v);
  Tensor& t(int id) { return tensors[id]; }
  const Tensor& t(int id) const { return tensors[id]; }
  // Unique tensor name derived from `base`.
  std::string fresh_name(const std::string& base);
  // For each tensor: the nodes consuming it (index into nodes). Recompute after edits.
  std::vector<std::vector<int>> consumers() const;
  std::vector<int> producers() const;
  bool is_graph_output(int tensor) const;
  // Removes the nodes whose flag in `drop` (one per node) is set, keeping the order.
  void remove_nodes(const std::vector<char>& drop);
  std::size_t name_counter = 0;
};

// Checks the invariants passes rely on: ids in range, topological order, one producer per
// tensor, constants not produced by nodes. Used after every pass in debug builds and tests.
Status verify(const Graph& g);

// Human-readable listing, one node a line (for --dump-passes).
std::string print_graph(const Graph& g);

}  // namespace systolic::ir
