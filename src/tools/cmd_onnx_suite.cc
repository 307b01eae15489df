// `systolic onnx-suite DIR...`: runs ONNX backend test cases (model.onnx + test_data_set_*)
// through the compiler and runtime and prints pass / fail / unsupported per case.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "frontend/onnx/import.h"
#include "runtime/session.h"
#include "tools/commands.h"
#include "frontend/tensor_io.h"

namespace systolic::tools {
namespace {

bool exists(const std::string& p) {
  struct stat sb;
  return stat(p.c_str(), &sb) == 0;
}

std::vector<std::string> list_dir(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != ".." && n.rfind(prefix, 0) == 0) out.push_back(n);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Unsupported features are reported by the library as "... not supported" / "unsupported ...".
bool is_unsupported(const std::string& msg) {
  return msg.find("not supported") != std::string::npos || msg.find("unsupported") != std::string::npos;
}

template <typename T>
std::string compare_values(const T* got, const T* want, int64_t n, double rtol, double atol) {
  for (int64_t i = 0; i < n; ++i) {
    const double g = static_cast<double>(got[i]), w = static_cast<double>(want[i]);
    if (std::isnan(w) && std::isnan(g)) continue;
    if (std::isinf(w) && g == w) continue;
    if (!(std::fabs(g - w) <= atol + rtol * std::fabs(w))) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "element %lld is %.8g, expected %.8g", static_cast<long long>(i), g, w);
      return buf;
    }
  }
  return "";
}

std::string compare(const runtime::HostTensor& got, const runtime::HostTensor& want) {
  if (got.dtype != want.dtype)
    return std::string("type ") + ir::dtype_name(got.dtype) + ", expected " + ir::dtype_name(want.dtype);
  if (got.shape != want.shape) return "shape " + ir::shape_str(got.shape) + ", expected " + ir::shape_str(want.shape);
  const int64_t n = got.numel();
  switch (got.dtype) {
    case ir::DType::f32: return compare_values(got.as<float>(), want.as<float>(), n, 1e-3, 1e-5);
    case ir::DType::f64: return compare_values(got.as<double>(), want.as<double>(), n, 1e-3, 1e-7);
    case ir::DType::i64: return compare_values(got.as<int64_t>(), want.as<int64_t>(), n, 0, 0);
    case ir::DType::i32: return compare_values(got.as<int32_t>(), want.as<int32_t>(), n, 0, 0);
    case ir::DType::i8: return compare_values(got.as<int8_t>(), want.as<int8_t>(), n, 0, 0);
    case ir::DType::u16: return compare_values(got.as<uint16_t>(), want.as<uint16_t>(), n, 0, 0);
    case ir::DType::i16: return compare_values(got.as<int16_t>(), want.as<int16_t>(), n, 0, 0);
    case ir::DType::u32: return compare_values(got.as<uint32_t>(), want.as<uint32_t>(), n, 0, 0);
    case ir::DType::u64: return compare_values(got.as<uint64_t>(), want.as<uint64_t>(), n, 0, 0);
    default: return compare_values(got.as<uint8_t>(), want.as<uint8_t>(), n, 0, 0);
  }
}

enum class Verdict { pass, fail, skip };

// numpy has no bfloat16: the suite's generator stored bfloat16 data as its uint16 bits.
void bf16_bits(ir::DType model_type, runtime::HostTensor* t) {
  if (model_type == ir::DType::bf16 && t->dtype == ir::DType::u16) t->dtype = ir::DType::bf16;
}

// The suite's expected bfloat16 values were made by truncating float32 (onnx/onnx#3876); ONNX
// Runtime, and ONNX since, round to nearest even, as systolic does. Outputs that differ from
// the expected ones by at most one unit in the last place everywhere are that difference.
bool bf16_truncation_only(const runtime::HostTensor& got, const runtime::HostTensor& want) {
  if (got.dtype != ir::DType::bf16 || want.dtype != ir::DType::bf16 || got.shape != want.shape) return false;
  for (int64_t i = 0; i < got.numel(); ++i)
    if (std::abs(int(got.as<uint16_t>()[i]) - int(want.as<uint16_t>()[i])) > 1) return false;
  return true;
}

// Shape-like inputs (int64 tensors and scalars: Reshape's shape, Slice's starts, Range's
// bounds...) are specialized into constants, as a static compiler must; the rest stay inputs.
bool freeze(const runtime::HostTensor& t) { return t.dtype == ir::DType::i64 || t.shape.empty(); }

Verdict classify(const Status& st, std::string* why) {
  *why = st.message();
  return is_unsupported(*why) ? Verdict::skip : Verdict::fail;
}

Verdict run_set(const ir::Graph& model, const std::string& set_dir, std::string* why) {
  ir::Graph g = model;
  std::vector<std::pair<std::string, runtime::HostTensor>> inputs;
  std::vector<int> kept;
  for (std::size_t k = 0; k < model.inputs.size(); ++k) {
    auto t = frontend::load_tensor(set_dir + "/input_" + std::to_string(k) + ".pb");
    if (!t.ok()) return classify(t.status(), why);
    ir::Tensor& gt = g.t(g.inputs[k]);
    bf16_bits(gt.dtype, &*t);
    if (freeze(*t)) {
      gt.dtype = t->dtype;
      gt.shape = t->shape;
      gt.shape_known = true;
      gt.data = std::make_shared<AlignedBytes>(t->data.begin(), t->data.end());
      continue;
    }
    // The data fixes dims the model leaves symbolic.
    if (!gt.shape_known || gt.shape.size() != t->shape.size()) {
      gt.shape = t->shape;
      gt.shape_known = true;
    }
    for (std::size_t d = 0; d < gt.shape.size(); ++d)
      if (gt.shape[d] < 0) gt.shape[d] = t->shape[d];
    kept.push_back(g.inputs[k]);
    inputs.emplace_back(gt.name, std::move(*t));
  }
  g.inputs = kept;
  auto prog = plan::compile(std::move(g), plan::CompileOptions{});
  if (!prog.ok()) return classify(prog.status(), why);
  runtime::SessionOptions so;
  so.threads = 1;
  auto session = runtime::Session::create(*prog, so);
  if (!session.ok()) return classify(session.status(), why);
  std::vector<runtime::HostTensor> outs;
  Status st = (*session)->run(inputs, &outs);
  if (!st.ok()) return classify(st, why);
  for (std::size_t k = 0; k < outs.size(); ++k) {
    auto want = frontend::load_tensor(set_dir + "/output_" + std::to_string(k) + ".pb");
    if (!want.ok()) return classify(want.status(), why);
    bf16_bits(outs[k].dtype, &*want);
    std::string diff = compare(outs[k], *want);
    if (!diff.empty() && bf16_truncation_only(outs[k], *want)) {
      *why = "output " + std::to_string(k) + ": the expected bfloat16 values truncate; systolic rounds to nearest "
             "even, as ONNX Runtime does and ONNX now specifies (" + diff + ")";
      return Verdict::skip;
    }
    if (!diff.empty()) {
      *why = "output " + std::to_string(k) + ": " + diff;
      return Verdict::fail;
    }
  }
  return Verdict::pass;
}

Verdict run_case(const std::string& dir, std::string* why) {
  auto g = frontend::import_onnx_file(dir + "/model.onnx");
  if (!g.ok()) return classify(g.status(), why);
  const auto sets = list_dir(dir, "test_data_set_");
  if (sets.empty()) {
    *why = "no test_data_set_* folder";
    return Verdict::fail;
  }
  for (const std::string& set : sets) {
    const Verdict v = run_set(*g, dir + "/" + set, why);
    if (v != Verdict::pass) {
      *why = set + ": " + *why;
      return v;
    }
  }
  return Verdict::pass;
}

}  // namespace

void register_onnx_suite(CLI::App& app) {
  auto* cmd = app.add_subcommand("onnx-suite", "run ONNX backend test cases (model.onnx + test_data_set_*)");
  auto dirs = std::make_shared<std::vector<std::string>>();
  auto quiet = std::make_shared<bool>(false);
  cmd->add_option("dirs", *dirs, "case folders, or folders of case folders")->required();
  cmd->add_flag("--failures-only", *quiet, "print only failing cases and the summary");
  cmd->callback([=] {
    std::vector<std::string> cases;
    for (const std::string& d : *dirs) {
      if (exists(d + "/model.onnx")) {
        cases.push_back(d);
        continue;
      }
      if (!exists(d)) return fail(Err("%s does not exist", d.c_str()));
      for (const std::string& sub : list_dir(d, ""))
        if (exists(d + "/" + sub + "/model.onnx")) cases.push_back(d + "/" + sub);
    }
    int passed = 0, failed = 0, skipped = 0;
    for (const std::string& c : cases) {
      std::string why;
      const Verdict v = run_case(c, &why);
      const std::string name = c.substr(c.find_last_of('/') + 1);
      if (v == Verdict::pass) {
        ++passed;
        if (!*quiet) std::printf("pass         %s\n", name.c_str());
      } else if (v == Verdict::skip) {
        ++skipped;
        if (!*quiet) std::printf("unsupported  %s: %s\n", name.c_str(), why.c_str());
      } else {
        ++failed;
        std::printf("FAIL         %s: %s\n", name.c_str(), why.c_str());
      }
      std::fflush(stdout);
    }
    std::printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    if (failed > 0) fail(Err("%d ONNX backend case(s) failed", failed));
  });
}

}  // namespace systolic::tools
