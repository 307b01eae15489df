// The compile cache: key derivation, lookup, and atomic (temp file + rename) stores.
#include "api/compile_cache.h"

#include <onnx/onnx_pb.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "frontend/onnx/import.h"

namespace systolic::api {
namespace {

using clock_type = std::chrono::steady_clock;

double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

// A read-only mapping of a whole file (empty when it cannot be opened or is empty).
class MappedFile {
 public:
  explicit MappedFile(const std::string& path) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat sb;
    if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0) {
      void* p = mmap(nullptr, static_cast<std::size_t>(sb.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
      if (p != MAP_FAILED) {
        data_ = static_cast<const char*>(p);
        size_ = static_cast<std::size_t>(sb.st_size);
      }
    }
    close(fd);
  }
  ~MappedFile() {
    if (data_) munmap(const_cast<char*>(data_), size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  std::string_view view() const { return {data_ ? data_ : "", size_}; }

 private:
  const char* data_ = nullptr;
  std::size_t size_ = 0;
};

std::string stat_str(const std::string& path) {
  struct stat sb;
  if (stat(path.c_str(), &sb) != 0) return "missing";
  return std::to_string(static_cast<long long>(sb.st_size)) + ":" + std::to_string(static_cast<long long>(sb.st_mtim.tv_sec)) +
         "." + std::to_string(static_cast<long long>(sb.st_mtim.tv_nsec));
}

std::string dir_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// Names, sizes and mtimes of the external data files the model refers to (if any).
std::string external_files(const std::string& model_path, std::string_view bytes) {
  if (bytes.find("location") == std::string::npos) return "";  // cheap test before a parse
  onnx::ModelProto m;
  if (bytes.size() > INT32_MAX || !m.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return "";
  std::string out;
  auto add = [&](const onnx::TensorProto& t) {
    for (const auto& kv : t.external_data())
      if (kv.key() == "location") out += kv.value() + "=" + stat_str(dir_of(model_path) + "/" + kv.value()) + ";";
  };
  for (const auto& t : m.graph().initializer()) add(t);
  for (const auto& n : m.graph().node())
    for (const auto& a : n.attribute())
      if (a.has_t()) add(a.t());
  return out;
}

bool make_dirs(const std::string& dir) {
  for (std::size_t pos = 1; pos <= dir.size(); ++pos)
    if (pos == dir.size() || dir[pos] == '/') {
      const std::string d = dir.substr(0, pos);
      if (mkdir(d.c_str(), 0755) != 0 && errno != EEXIST) return false;
    }
  struct stat sb;
  return stat(dir.c_str(), &sb) == 0 && S_ISDIR(sb.st_mode);
}

// Writes `bytes` to a temporary file beside `path` and renames it over `path`. The temporary
// name is unique per process and per call, so concurrent stores of one key never share it.
Status write_atomic(const std::string& path, const std::string& bytes) {
  static std::atomic<uint64_t> serial{0};
  const std::string tmp = path + ".tmp." + std::to_string(getpid()) + "." + std::to_string(serial++);
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return Err("%s", std::strerror(errno));
  const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  const int err = errno;
  if (std::fclose(f) != 0 || !ok) {
    std::remove(tmp.c_str());
    return Err("%s", std::strerror(ok ? errno : err));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    std::remove(tmp.c_str());
    return Err("%s", std::strerror(e));
  }
  return Status::Ok();
}

// The file this code was loaded from: the executable, or the shared library (the Python
// module) it is linked into; not /proc/self/exe, which names the interpreter there.
std::string library_file() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&library_file), &info) && info.dli_fname && info.dli_fname[0] == '/')
    return info.dli_fname;
  return "/proc/self/exe";
}

std::string stem_of(const std::string& path) {
  std::string s = path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
  if (s.size() > 5 && s.compare(s.size() - 5, 5, ".onnx") == 0) s.resize(s.size() - 5);
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  return s.substr(0, 48);
}

}  // namespace

std::string default_cache_dir() {
  const char* d = std::getenv("SYSTOLIC_CACHE_DIR");
  if (d && *d) return d;
  const char* x = std::getenv("XDG_CACHE_HOME");
  if (x && *x) return std::string(x) + "/systolic";
  const char* h = std::getenv("HOME");
  if (h && *h) return std::string(h) + "/.cache/systolic";
  return "";
}

std::string content_hash(const void* data, std::size_t n) {
  // Two multiply-rotate lanes over 8-byte words (in the spirit of xxHash), then a finalizer.
  const auto* p = static_cast<const uint8_t*>(data);
  uint64_t a = 0x9E3779B97F4A7C15ull ^ n, b = 0xC2B2AE3D27D4EB4Full + n;
  auto rotl = [](uint64_t x, int r) { return (x << r) | (x >> (64 - r)); };
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    uint64_t w0, w1;
    std::memcpy(&w0, p + i, 8);
    std::memcpy(&w1, p + i + 8, 8);
    a = rotl(a ^ (w0 * 0x87C37B91114253D5ull), 31) * 0x4CF5AD432745937Full;
    b = rotl(b ^ (w1 * 0x4CF5AD432745937Full), 29) * 0x87C37B91114253D5ull;
  }
  for (; i < n; ++i) a = (a ^ p[i]) * 0x100000001B3ull;
  auto mix = [](uint64_t x) {
    x ^= x >> 33;
    x *= 0xFF51AFD7ED558CCDull;
    x ^= x >> 33;
    x *= 0xC4CEB9FE1A85EC53ull;
    return x ^ (x >> 33);
  };
  const uint64_t h1 = mix(a ^ rotl(b, 17)), h2 = mix(b + a * 3);
  char out[33];
  std::snprintf(out, sizeof out, "%016llx%016llx", static_cast<unsigned long long>(h1),
                static_cast<unsigned long long>(h2));
  return out;
}

std::string cache_key(const std::string& model_path, std::string_view model_bytes, const plan::CompileOptions& opts) {
  const CpuFeatures& c = opts.cpu_set ? opts.cpu : host_cpu();
  std::string k = "plan=" + std::to_string(plan::kPlanVersion) + "|isa=" + plan::isa_name(c) + "|features=";
  for (bool f : {c.avx2, c.fma, c.avx512f, c.avx512bw, c.avx512vl, c.avx512dq, c.avx512bf16, c.avx512vnni, c.amx_tile,
                 c.amx_bf16, c.amx_int8, c.avx_vnni})
    k += f ? '1' : '0';
  k += "|batch=" + std::to_string(opts.batch) + "|micro=" + std::to_string(opts.micro_batch) +
       "|optimize=" + std::to_string(opts.optimize);
  for (const auto& [name, shape] : opts.input_shapes) k += "|shape:" + name + "=" + ir::shape_str(shape);
  k += "|precision=" + std::string(passes::precision_name(opts.precision)) + (opts.precision_auto ? ",auto" : "");
  if (opts.precision == passes::Precision::int8 || opts.precision_auto) {
    k += "|calibration=" + opts.calibration_key + "|residual=" + std::to_string(opts.fuse_residual) + "|keep=";
    for (const std::string& n : opts.keep_fp32) k += n + ",";
    if (opts.activation_quant) {
      std::string q;
      for (const auto& [name, p] : *opts.activation_quant) {
        q += name + ":";
        for (std::size_t i = 0; i < p.scale.size(); ++i)
          q += std::to_string(p.scale[i]) + "/" + std::to_string(p.zero_point[i]) + ",";
      }
      k += "|quant=" + content_hash(q.data(), q.size());
    }
  }
  const ir::ImagePreprocess& pre = opts.preprocess;
  if (pre.enabled()) {
    k += "|preprocess=" + std::to_string(pre.resize) + "," + std::to_string(pre.crop_h) + "," + std::to_string(pre.crop_w);
    for (const auto* v : {&pre.mean, &pre.std})
      for (float f : *v) k += "," + std::to_string(f);
  }
  k += "|model=" + content_hash(model_bytes.data(), model_bytes.size()) + "|external=" + external_files(model_path, model_bytes);
  k += "|build=" + stat_str(library_file());  // a rebuilt compiler may plan differently
  return content_hash(k.data(), k.size());
}

uint64_t cache_max_bytes(std::string* note) {
  constexpr uint64_t kDefault = uint64_t(2) << 30;
  const char* v = std::getenv("SYSTOLIC_CACHE_MAX");
  if (!v || !*v) return kDefault;
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(v, &end, 10);
  // An optional K, M or G (powers of 1024), optionally followed by B or iB.
  std::string_view rest(end);
  uint64_t unit = 1;
  if (!rest.empty()) {
    const int u = std::toupper(static_cast<unsigned char>(rest[0]));
    unit = u == 'K' ? uint64_t(1) << 10 : u == 'M' ? uint64_t(1) << 20 : u == 'G' ? uint64_t(1) << 30 : 0;
    rest.remove_prefix(1);
    if (rest == "B" || rest == "b" || rest == "iB") rest = {};
    if (!rest.empty()) unit = 0;
  }
  if (end == v || errno == ERANGE || unit == 0 || v[0] == '-' || (unit > 1 && n > UINT64_MAX / unit)) {
    if (note) *note = std::string("ignoring SYSTOLIC_CACHE_MAX='") + v + "' (not a size such as 2G or 500M); capping the cache at 2 GiB";
    return kDefault;
  }
  return uint64_t(n) * unit;
}

void evict_lru(const std::string& dir, uint64_t cap, const std::string& keep) {
  struct Entry {
    std::string path;
    uint64_t bytes;
    struct timespec used;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() < 6 || name.compare(name.size() - 5, 5, ".plan") != 0) continue;  // not temporaries
    const std::string path = dir + "/" + name;
    struct stat sb;
    if (stat(path.c_str(), &sb) != 0 || !S_ISREG(sb.st_mode)) continue;
    entries.push_back({path, uint64_t(sb.st_size), sb.st_mtim});
    total += uint64_t(sb.st_size);
  }
  closedir(d);
  if (total <= cap) return;
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.used.tv_sec != b.used.tv_sec ? a.used.tv_sec < b.used.tv_sec : a.used.tv_nsec < b.used.tv_nsec;
  });
  for (const Entry& e : entries) {
    if (total <= cap) break;
    if (e.path == keep) continue;
    if (std::remove(e.path.c_str()) == 0 || errno == ENOENT) total -= e.bytes;  // another process may have got there first
  }
}

Expected<CachedCompile> compile_onnx_cached(const std::string& model_path, const plan::CompileOptions& opts,
                                            const std::string& cache_dir) {
  CachedCompile r;
  const auto t0 = clock_type::now();
  std::string entry;
  const uint64_t cap = cache_dir.empty() ? 0 : cache_max_bytes(&r.note);
  if (cap > 0) {
    const MappedFile model(model_path);  // hashed in place: no copy
    if (!model.view().empty())
      entry = cache_dir + "/" + stem_of(model_path) + "-b" + std::to_string(opts.batch) + "-" +
              cache_key(model_path, model.view(), opts).substr(0, 24) + ".plan";
  }
  if (!entry.empty()) {
    const MappedFile cached(entry);
    if (!cached.view().empty()) {
      auto p = plan::load_program_bytes(cached.view());
      Status why = p.status();
      if (p.ok() && ((*p)->batch != opts.batch || (*p)->optimized != opts.optimize ||
                     (*p)->preprocess.enabled() != opts.preprocess.enabled()))
        why = Err("compiled for other options");
      if (why.ok()) why = plan::check_runnable(**p, opts.cpu_set ? opts.cpu : host_cpu());
      if (why.ok()) {
        utimensat(AT_FDCWD, entry.c_str(), nullptr, 0);  // most recently used (eviction order)
        r.program = *p;
        r.hit = true;
        r.path = entry;
        r.compile_ms = (*p)->stats.compile_ms;
        r.load_ms = ms_since(t0);
        return r;
      }
      r.note += (r.note.empty() ? "" : "; ") + std::string("ignoring the cached plan ") + entry + " (" + why.message() +
                "); recompiling";
    }
  }
  const auto c0 = clock_type::now();
  auto g = frontend::import_onnx_file(model_path);
  if (!g.ok()) return g.status();
  auto p = plan::compile(std::move(*g), opts);
  if (!p.ok()) return Err("%s: %s", model_path.c_str(), p.status().message().c_str());
  // What the cache saves: the import and the pass pipeline (kept in the cached plan's stats).
  (*p)->stats.compile_ms = ms_since(c0);
  r.program = *p;
  r.compile_ms = (*p)->stats.compile_ms;
  if (entry.empty()) return r;
  if (!make_dirs(cache_dir)) {
    r.note += (r.note.empty() ? "" : "; ") + std::string("compile cache disabled: cannot create ") + cache_dir + " (" + std::strerror(errno) + ")";
    return r;
  }
  Status st = write_atomic(entry, plan::serialize_program(**p));
  if (!st.ok()) {
    r.note += (r.note.empty() ? "" : "; ") + std::string("compile cache disabled: cannot write ") + cache_dir + " (" + st.message() + ")";
    return r;
  }
  r.path = entry;
  evict_lru(cache_dir, cap, entry);
  return r;
}

}  // namespace systolic::api
