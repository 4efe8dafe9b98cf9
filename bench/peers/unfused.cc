// The unfused peer: the work of one fused simdnorm call done as an engine
// without the fused kernel does it (see peers.h).
#include <string>

#include "parallel_range.h"
#include "peers.h"
#include "unfused_loops.h"

namespace simdnorm_peers {

size_t unfused_moved_bytes(const simdnorm_desc& d) {
  const size_t n = d.rows * d.cols;
  const size_t sx = dtype_size(d.x_type);
  size_t bytes = 0;
  if (d.residual) bytes += 3 * sx * n;  // x, residual read; sum written
  bytes += sx * n;                      // the norm reads x (or the sum)
  if (d.y_type == SIMDNORM_I8) {
    // f32 written by the norm, read back by the quantizer; int8 written.
    bytes += (4 + 4 + 1) * n + d.rows * scales_per_row(d) * 4;
  } else {
    bytes += dtype_size(d.y_type) * n;
  }
  return bytes;
}

bool unfused_normalize(const simdnorm_desc& d, float* scratch,
                       std::string* why) {
  auto fail = [&](const std::string& reason) {
    if (why) *why = reason;
    return false;
  };
  if (d.rows == 0 || d.cols == 0) return fail("empty problem");
  simdnorm_desc norm = d;
  if (d.residual) {
    if (!d.sum_out) return fail("the add loop needs sum_out");
    if (d.x_type != SIMDNORM_F32 && d.x_type != SIMDNORM_BF16) {
      return fail("the add loop takes f32 and bf16 only");
    }
    bool ok = true;
    detail::ParallelRange(d.rows,
                          detail::RowGrain(d.cols * dtype_size(d.x_type)),
                          d.max_threads, [&](size_t r0, size_t r1) {
                            if (!detail::add_rows(d, r0, r1)) ok = false;
                          });
    if (!ok) return fail("the add loop failed");
    norm.x = d.sum_out;
    norm.x_stride = d.sum_out_stride;
    norm.residual = nullptr;
    norm.residual_stride = 0;
    norm.sum_out = nullptr;
    norm.sum_out_stride = 0;
  }
  const bool quantize = d.y_type == SIMDNORM_I8;
  if (quantize) {
    if (!scratch) return fail("int8 output needs the f32 scratch rows");
    norm.y = scratch;
    norm.y_type = SIMDNORM_F32;
    norm.y_stride = 0;
    norm.y_scale = nullptr;
    norm.quant_group = 0;
  }
  const simdnorm_status s = simdnorm_normalize(&norm);
  if (s != SIMDNORM_OK) return fail(simdnorm_status_string(s));
  if (quantize) {
    detail::ParallelRange(d.rows, detail::RowGrain(d.cols * 4), d.max_threads,
                          [&](size_t r0, size_t r1) {
                            detail::quantize_rows(d, scratch, r0, r1);
                          });
  }
  return true;
}

}  // namespace simdnorm_peers
