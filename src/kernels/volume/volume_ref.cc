// The N-D reference: windows walked with an odometer over the spatial axes, so one loop serves
// any rank.
#include <limits>

#include "kernels/volume/volume.h"

namespace systolic::kernels {
namespace {

int64_t volume(const std::vector<SpatialDim>& dims, bool out) {
  int64_t v = 1;
  for (const auto& d : dims) v *= out ? d.out : d.in;
  return v;
}

// Advances a multi-index over `limits` (last axis fastest); false once it wraps to all zeros.
bool next(std::vector<int64_t>& idx, const std::vector<int64_t>& limits) {
  for (std::size_t a = idx.size(); a-- > 0;) {
    if (++idx[a] < limits[a]) return true;
    idx[a] = 0;
  }
  return false;
}

// Calls f(flat input offset) for each in-input position of output `o`'s window, and returns
// how many window positions lie inside the input or its pads (count_include_pad's divisor).
template <class F>
int64_t window(const std::vector<SpatialDim>& dims, const std::vector<int64_t>& o, F&& f) {
  const std::size_t r = dims.size();
  std::vector<int64_t> k(r, 0), klim(r);
  for (std::size_t a = 0; a < r; ++a) klim[a] = dims[a].k;
  int64_t padded = 0;
  do {
    bool inside = true, in_pads = true;
    int64_t off = 0;
    for (std::size_t a = 0; a < r; ++a) {
      const SpatialDim& d = dims[a];
      const int64_t i = o[a] * d.s - d.pad_begin + k[a] * d.d;
      in_pads = in_pads && i >= -d.pad_begin && i < d.in + d.pad_end;
      inside = inside && i >= 0 && i < d.in;
      off = off * d.in + i;
    }
    padded += in_pads;
    if (inside) f(off, k);
  } while (next(k, klim));
  return padded;
}

}  // namespace

void conv_volume_ref(const VolumeConvParams& p, const float* x, const float* w, const float* bias, float* y) {
  const int64_t in_vol = volume(p.dims, false), out_vol = volume(p.dims, true);
  const int64_t icg = p.ic / p.groups, ocg = p.oc / p.groups;
  int64_t k_vol = 1;
  for (const auto& d : p.dims) k_vol *= d.k;
  std::vector<int64_t> olim;
  for (const auto& d : p.dims) olim.push_back(d.out);
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t oc = 0; oc < p.oc; ++oc) {
      const int64_t g = oc / ocg;
      std::vector<int64_t> o(p.dims.size(), 0);
      float* yo = y + (n * p.oc + oc) * out_vol;
      int64_t at = 0;
      do {
        double sum = bias ? bias[oc] : 0.0;
        window(p.dims, o, [&](int64_t off, const std::vector<int64_t>& k) {
          int64_t kf = 0;
          for (std::size_t a = 0; a < k.size(); ++a) kf = kf * p.dims[a].k + k[a];
          for (int64_t c = 0; c < icg; ++c)
            sum += double(x[(n * p.ic + g * icg + c) * in_vol + off]) * w[(oc * icg + c) * k_vol + kf];
        });
        yo[at++] = static_cast<float>(sum);
      } while (next(o, olim));
    }
}

void pool_volume_ref(const VolumePoolParams& p, const float* x, float* y) {
  const int64_t in_vol = volume(p.dims, false), out_vol = volume(p.dims, true);
  std::vector<int64_t> olim;
  for (const auto& d : p.dims) olim.push_back(d.out);
  for (int64_t nc = 0; nc < p.n * p.c; ++nc) {
    const float* xs = x + nc * in_vol;
    std::vector<int64_t> o(p.dims.size(), 0);
    int64_t at = 0;
    do {
      double sum = 0.0;
      float mx = -std::numeric_limits<float>::infinity();
      int64_t inside = 0;
      const int64_t padded = window(p.dims, o, [&](int64_t off, const std::vector<int64_t>&) {
        const float v = xs[off];
        sum += v;
        mx = v > mx ? v : mx;
        ++inside;
      });
      const int64_t div = p.count_include_pad ? padded : inside;
      y[nc * out_vol + at++] = p.max ? mx : (div ? static_cast<float>(sum / div) : 0.f);
    } while (next(o, olim));
  }
}

}  // namespace systolic::kernels
