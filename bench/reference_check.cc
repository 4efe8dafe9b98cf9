#include "reference_check.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "peers.h"

namespace simdnorm_bench {
namespace {

using simdnorm_peers::dtype_size;
using Bytes = std::vector<unsigned char>;

float F16ToFloat(uint16_t h) {
  const float sign = (h & 0x8000u) ? -1.0f : 1.0f;
  const int e = (h >> 10) & 0x1F;
  const int m = h & 0x3FF;
  if (e == 0x1F) return m ? NAN : sign * INFINITY;
  if (e == 0) return sign * std::ldexp(static_cast<float>(m), -24);
  return sign * std::ldexp(static_cast<float>(m | 0x400), e - 25);
}

float Load(const Bytes& b, simdnorm_dtype t, size_t i) {
  if (t == SIMDNORM_F32) {
    float f;
    std::memcpy(&f, &b[4 * i], 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, &b[2 * i], 2);
  if (t == SIMDNORM_F16) return F16ToFloat(h);
  const uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Dense copy of `rows` rows of `cols` elements, `stride` (0 = cols) apart.
Bytes CopyRows(const void* p, size_t rows, size_t cols, size_t stride,
               size_t elem) {
  const size_t s = stride ? stride : cols;
  Bytes out(rows * cols * elem);
  for (size_t r = 0; r < rows; ++r) {
    std::memcpy(&out[r * cols * elem],
                static_cast<const char*>(p) + r * s * elem, cols * elem);
  }
  return out;
}

struct Outputs {
  Bytes y, sum;
  std::vector<float> scale;
};

// Points m's outputs at fresh, zeroed buffers in o.
void Attach(const simdnorm_desc& d, simdnorm_desc* m, Outputs* o) {
  const size_t n = m->rows * m->cols;
  o->y.assign(n * dtype_size(d.y_type), 0);
  m->y = o->y.data();
  if (d.sum_out) {
    o->sum.assign(n * dtype_size(d.x_type), 0);
    m->sum_out = o->sum.data();
  }
  if (d.y_type == SIMDNORM_I8) {
    o->scale.assign(m->rows * simdnorm_peers::scales_per_row(d), 0.0f);
    m->y_scale = o->scale.data();
  }
}

std::string Where(const char* what, size_t i) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%s differs at element %zu", what, i);
  return buf;
}

bool Near(float got, float want, double rel, double abs) {
  if (std::isnan(want)) return std::isnan(got);
  return std::fabs(static_cast<double>(got) - want) <=
         rel * std::fabs(want) + abs;
}

}  // namespace

std::string CheckAgainstReference(const simdnorm_desc& d, const RunFn& run) {
  const size_t rows = std::min<size_t>(d.rows, 4);
  const size_t n = rows * d.cols;
  const size_t sx = dtype_size(d.x_type);
  simdnorm_desc m = d;
  m.rows = rows;
  m.max_threads = 1;
  const Bytes x = CopyRows(d.x, rows, d.cols, d.x_stride, sx);
  m.x = x.data();
  m.x_stride = 0;
  Bytes residual;
  if (d.residual) {
    residual = CopyRows(d.residual, rows, d.cols, d.residual_stride, sx);
    m.residual = residual.data();
    m.residual_stride = 0;
  }
  m.y_stride = 0;
  m.sum_out_stride = 0;

  simdnorm_desc got_desc = m, want_desc = m;
  Outputs got, want;
  Attach(d, &got_desc, &got);
  Attach(d, &want_desc, &want);
  std::vector<float> scratch(n);
  std::string why;
  if (!run(got_desc, scratch.data(), &why)) return why;
  const simdnorm_status s = simdnorm_normalize_reference(&want_desc);
  if (s != SIMDNORM_OK) {
    return std::string("reference: ") + simdnorm_status_string(s);
  }

  if (got.sum != want.sum) return "sum_out differs from x + residual";
  if (d.y_type == SIMDNORM_I8) {
    for (size_t i = 0; i < got.scale.size(); ++i) {
      if (!Near(got.scale[i], want.scale[i], 1e-5, 0.0)) {
        return Where("y_scale", i);
      }
    }
    for (size_t i = 0; i < n; ++i) {
      const int dq =
          static_cast<int8_t>(got.y[i]) - static_cast<int8_t>(want.y[i]);
      if (dq < -1 || dq > 1) return Where("int8 y", i);
    }
    return "";
  }
  const double rel = d.y_type == SIMDNORM_BF16  ? 0x1p-7
                     : d.y_type == SIMDNORM_F16 ? 0x1p-10
                                                : 1e-4;
  for (size_t i = 0; i < n; ++i) {
    if (!Near(Load(got.y, d.y_type, i), Load(want.y, d.y_type, i), rel, 1e-4)) {
      return Where("y", i);
    }
  }
  return "";
}

}  // namespace simdnorm_bench
