// oneDNN 2.x's other normalization primitives, f32, as peers of simdnorm's
// backward passes and BatchNorm (bench/family_bench.cc): layer
// normalization backward, batch normalization forward (inference with
// global statistics, training) and backward, each with scale and shift.
// oneDNN 2.6 has no group normalization. Every buffer is the primitive's
// own (filled with N(0,1)-like values, variances 1): timing does not
// depend on the values.
#ifndef SIMDNORM_BENCH_PEERS_ONEDNN_PASSES_H_
#define SIMDNORM_BENCH_PEERS_ONEDNN_PASSES_H_

#include <cstddef>
#include <memory>
#include <string>

namespace simdnorm_peers {

class OneDnnPass {
 public:
  enum class Op {
    kLayerNormBackward,   // rows n of c elements (hw ignored)
    kBatchNormInference,  // (n, c, hw), nchw or nhwc
    kBatchNormTraining,
    kBatchNormBackward,  // training's (batch statistics)
  };
  // nullptr, with the reason in *why, when oneDNN is not built in or cannot
  // run this problem. threads as simdnorm's max_threads (1 or 0 = all).
  static std::unique_ptr<OneDnnPass> Create(Op op, size_t n, size_t c,
                                            size_t hw, bool nhwc,
                                            size_t threads, std::string* why);
  ~OneDnnPass();
  void Run(size_t calls = 1);

 private:
  struct Impl;
  explicit OneDnnPass(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace simdnorm_peers

#endif  // SIMDNORM_BENCH_PEERS_ONEDNN_PASSES_H_
