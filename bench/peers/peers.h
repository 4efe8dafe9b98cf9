// Peers that simdnorm's benchmarks and simdnorm-profile compare against, one
// copy for both: the hand-written loop, memcpy of the same bytes, and
// oneDNN's layer normalization when it was found at configure time.
//
// Every peer takes the problem as a simdnorm_desc. The hand-written loop and
// the unfused peer follow its strides; copy_bytes copies dense bytes.
// max_threads follows simdnorm's meaning: 1 = the calling thread only, 0 =
// all threads.
#ifndef SIMDNORM_BENCH_PEERS_PEERS_H_
#define SIMDNORM_BENCH_PEERS_PEERS_H_

#include <cstddef>
#include <memory>
#include <string>

#include "simdnorm/simdnorm.h"

namespace simdnorm_peers {

// Bytes per element: 4 (F32), 2 (BF16, F16), 1 (I8).
size_t dtype_size(simdnorm_dtype t);
// Element i of p, of type t, widened to float (exactly).
float load_float(const void* p, simdnorm_dtype t, size_t i);
// y_scale floats per row: ceil(cols / quant_group) for I8 output, else 0.
size_t scales_per_row(const simdnorm_desc& d);

// Bytes the roofline counts for one call: x read and y written, once per row,
// plus residual read and sum_out written when given (in place too: a read
// and a write) and the int8 scales (gamma and beta are cols elements,
// L1-resident, and are not counted).
size_t moved_bytes(const simdnorm_desc& d);

// The hand-written loop: the textbook code with float accumulators (LayerNorm:
// a mean pass, a variance pass and an output pass; RMSNorm: a sum-of-squares
// pass and an output pass), compiled -O3 -march=native without -ffast-math,
// so GCC keeps the float sums in order and does not vectorize them. With
// max_threads != 1 the rows are split over TBB like simdnorm does.
// Returns false when the descriptor is outside what the loop handles.
bool naive_normalize(const simdnorm_desc& d);
// How the loop was compiled: "-O3 -march=native".
const char* naive_flags();

// The unfused peer: the work of one fused call (residual add, int8 output)
// done the way an engine without the fused kernel does it. With a residual:
// a plain add loop writes sum_out = x + residual (rounded to x_type; f32 and
// bf16 only; sum_out must be given, and may be residual as in vLLM), then
// simdnorm_normalize normalizes sum_out into y. With int8 output: the norm
// writes f32 rows into `scratch` (rows * cols floats, dense), then a
// quantize loop writes y and y_scale (max|y| per group, scale = max / 127,
// q = round-half-even(y * 127 / max)). The loops are compiled -O3
// -march=native (and vectorize); the norm runs on the active ISA. Returns
// false, with the reason in *why, when it cannot run the descriptor.
bool unfused_normalize(const simdnorm_desc& d, float* scratch,
                       std::string* why = nullptr);
// Bytes the unfused peer moves for d: add (x, residual read, sum written),
// norm (its input read, y or f32 written), quantize (f32 read, int8 and
// scales written).
size_t unfused_moved_bytes(const simdnorm_desc& d);

// Copies moved_bytes(d) / 2 bytes from src to dst: the same number of bytes
// read plus written as one normalize call on d, in memcpy calls of 64 KiB
// (so glibc keeps ordinary, cached stores, as a normalize kernel does); with
// max_threads != 1 the blocks are split over TBB. Both buffers must hold
// moved_bytes(d) / 2 bytes.
void copy_bytes(const simdnorm_desc& d, const void* src, void* dst);

// The next layer reading y after a norm call, as a matmul reads its input:
// the sum over the rows of dot(y row, w), w being d.cols floats (a weight
// row, L1-resident); on the calling thread, vectorized (-O3 -march=native).
// f32 and bf16 y; NaN for other dtypes.
float dot_y(const simdnorm_desc& d, const float* w);

// oneDNN 2.x layer_normalization_forward (forward_inference), the same shape
// and dtype (x and y of one type; oneDNN 2.6 has no mixed src/dst), with
// use_scale | use_shift when gamma / beta are given. gamma and beta are
// copied to f32 (oneDNN 2.6 takes scale and shift in f32 only). oneDNN has no
// RMSNorm before 3.x.
class OneDnnLayerNorm {
 public:
  // nullptr when oneDNN is not built in or cannot run this problem; *why
  // says why.
  static std::unique_ptr<OneDnnLayerNorm> Create(const simdnorm_desc& d,
                                                 std::string* why);
  ~OneDnnLayerNorm();
  OneDnnLayerNorm(const OneDnnLayerNorm&) = delete;
  OneDnnLayerNorm& operator=(const OneDnnLayerNorm&) = delete;

  // `calls` forward calls on the pointers of the descriptor given to Create
  // (the thread limit is set once around them).
  void Run(size_t calls = 1);

 private:
  struct Impl;
  explicit OneDnnLayerNorm(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// True when oneDNN was found at configure time.
bool onednn_built();
// "oneDNN 2.6.3 (OpenMP runtime): 1-thread runs use omp_set_num_threads(1)",
// or why there is no oneDNN peer.
std::string onednn_info();
// Whether the oneDNN peer really runs on one thread when max_threads == 1.
bool onednn_can_limit_threads();

}  // namespace simdnorm_peers

#endif  // SIMDNORM_BENCH_PEERS_PEERS_H_
