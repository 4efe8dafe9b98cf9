// The operations beyond the row kinds' forward pass, named from the
// registry (simdnorm_op_at): the row kinds' backward passes, GroupNorm and
// InstanceNorm (groups = channels), BatchNorm in inference and training,
// and their backward passes. One problem's buffers, and its call to the
// library or to the float64 reference: what the tools run with --op and
// bench/family_bench.cc registers.
#ifndef SIMDNORM_BENCH_PEERS_FAMILY_PROBLEM_H_
#define SIMDNORM_BENCH_PEERS_FAMILY_PROBLEM_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "peers.h"
#include "simdnorm/simdnorm.h"

namespace simdnorm_peers {

struct FamilyOp {
  std::string name;  // "layernorm-backward", "instancenorm", ...
  const simdnorm_op_info* op = nullptr;
  bool backward = false, training = false, instance = false;
  bool rows() const { return op->descriptor == SIMDNORM_ROW_DESC; }
  // tau of docs/accuracy.md: xhat has an absolute error part.
  bool centered() const { return op->centered && (training || !batch()); }
  bool batch() const { return op->descriptor == SIMDNORM_BATCH_DESC; }
};
// Every one, in registry order: for a row kind its backward pass; for
// GroupNorm groupnorm, instancenorm and their backward passes; for
// BatchNorm batchnorm (inference), batchnorm-training and theirs.
std::vector<FamilyOp> family_ops();
bool parse_family_op(const std::string& s, FamilyOp* op);
std::string family_op_list();  // "layernorm-backward, ..."

// (n, c, hw) in a layout with `groups` groups (InstanceNorm: groups = c);
// the rows of a row kind are n rows of c columns (hw = 1, NHWC: x[i * c +
// col]).
struct FamilyShape {
  size_t n = 1, c = 1, hw = 1, groups = 1;
  simdnorm_layout layout = SIMDNORM_NCHW;
  size_t elems() const { return n * c * hw; }
  size_t index(size_t i, size_t ch, size_t p) const {
    return layout == SIMDNORM_NCHW ? (i * c + ch) * hw + p
                                   : (i * hw + p) * c + ch;
  }
};
// The shape's name: "64x896" (rows), "1x320x4096 g32 nchw".
std::string shape_name(const FamilyOp& op, const FamilyShape& s);
// The shapes of realistic models the profile measures by default.
std::vector<FamilyShape> profile_shapes(const FamilyOp& op);

// A buffer of n elements of one dtype, set from floats rounded once.
struct Typed {
  simdnorm_dtype type = SIMDNORM_F32;
  std::vector<uint8_t> bytes;
  Typed() = default;
  Typed(simdnorm_dtype t, size_t n) : type(t), bytes(n * dtype_size(t)) {}
  Typed(simdnorm_dtype t, const std::vector<float>& v);
  void* data() { return bytes.data(); }
  const void* data() const { return bytes.data(); }
  float at(size_t i) const { return load_float(data(), type, i); }  // exact
};

// What a call writes: y or dx, and a backward pass's dgamma and dbeta.
struct FamilyOutput {
  Typed out;
  std::vector<float> dgamma, dbeta;
};

// One problem: x (and dy) rounded to their dtypes (backward: x is x_type,
// dy and dx y_type), gamma in [0.9, 1.1] and beta in [-0.1, 0.1] of
// w_type, eps 1e-5 unless set; BatchNorm's running statistics near each
// channel's own.
class FamilyProblem {
 public:
  FamilyProblem(const FamilyOp& op, const FamilyShape& s, simdnorm_dtype x_type,
                simdnorm_dtype y_type, simdnorm_dtype w_type,
                const std::vector<float>& x, const std::vector<float>& dy);
  // The library (or the float64 reference, rounded once to out_type) on
  // at most `threads` threads into *o (sized here on first use); 16-bit
  // outputs correctly rounded, the library's default (as users run it).
  simdnorm_status run(FamilyOutput* o, simdnorm_dtype out_type, size_t threads,
                      bool reference);
  // Bytes a call reads and writes (x, dy, y or dx; not the weights).
  size_t moved_bytes() const;

  const FamilyOp op;
  const FamilyShape shape;
  const simdnorm_dtype y_type, w_type;
  float eps = 1e-5f;
  Typed x, dy, gamma, beta;
  std::vector<float> running_mean, running_var;
};

}  // namespace simdnorm_peers

#endif  // SIMDNORM_BENCH_PEERS_FAMILY_PROBLEM_H_
