// The words both tools share (beside tests/support's dtypes, 16-bit
// floats and ISAs, which the tests share too): dtype names, the kinds of
// normalization, the ISAs and the engine variants of issue #7 that they run
// beside the plain call: fused residual add, Gemma's gamma offset, Hugging
// Face's rounding order and int8 output. A variant is a set of these features;
// `--variant fused-add+int8` combines them.
#ifndef SIMDNORM_TOOLS_COMMON_VOCABULARY_H_
#define SIMDNORM_TOOLS_COMMON_VOCABULARY_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "simdnorm/simdnorm.h"
#include "simdnorm/simdnorm.hpp"
#include "support/checks.h"
#include "support/dtypes.h"
#include "support/half.h"
#include "support/isas.h"

namespace simdnorm_tools {

// "f32", "bf16", "f16", "i8".
const char* dtype_name(simdnorm_dtype t);
// f32 (or fp32, float), bf16, f16 (or fp16, half), in any case.
bool parse_dtype(const std::string& s, simdnorm_dtype* t);
using simdnorm_test::ElemSize;  // bytes per element
using simdnorm_test::Is16;      // bf16 and f16: 16-bit floats, as their bits
inline float half_to_float(simdnorm_dtype t, uint16_t b) {  // exact
  if (t == SIMDNORM_F16) return simdnorm::f16::from_bits(b).to_float();
  return simdnorm::bf16::from_bits(b).to_float();
}
// Whether element i of a and element j of b (type t) hold the same bits,
// or NaN both.
inline bool same_element(simdnorm_dtype t, const void* a, size_t i,
                         const void* b, size_t j) {
  const auto* pa = static_cast<const unsigned char*>(a) + i * ElemSize(t);
  const auto* pb = static_cast<const unsigned char*>(b) + j * ElemSize(t);
  return simdnorm_test::SameElement(t, pa, pb);
}

// The data types of x, y and the weights (gamma, beta) of one call.
using Dtypes = simdnorm_test::DTypes;

// The kinds of normalization are the library's registry (simdnorm_op_at):
// every row kind in order (AllKinds; GroupNorm's descriptor is another),
// each one's entry (name, centered, ...).
// Centered kinds are run with beta, as engines call LayerNorm.
using simdnorm_test::AllKinds;
inline const simdnorm_op_info& op_of(simdnorm_kind k) {
  return *simdnorm_op_of(k);
}
inline const char* kind_name(simdnorm_kind k) { return op_of(k).name; }
// Short, for charts: "LN", "RMS", else the registry's title.
const char* kind_label(simdnorm_kind k);
// A kind's name; with `lenient`, in any case or its alias ("ln", "rms").
bool parse_kind(const std::string& s, simdnorm_kind* k, bool lenient);
std::string kind_names();  // "layernorm, rmsnorm or l2norm"
std::string kind_list();   // "layernorm, rmsnorm, l2norm"

// Appends v to *out unless it is there already.
template <class T>
void AddUnique(std::vector<T>* out, const T& v) {
  if (std::find(out->begin(), out->end(), v) == out->end()) out->push_back(v);
}
// The values in their first order, repeats dropped.
template <class T>
std::vector<T> unique(const std::vector<T>& v) {
  std::vector<T> out;
  for (const T& e : v) AddUnique(&out, e);
  return out;
}

// A whole decimal number, nothing around it.
bool parse_size(const std::string& s, size_t* v);
// s cut at every sep (empty parts kept).
std::vector<std::string> split(const std::string& s, char sep);

struct Variant {
  bool fused_add = false;  // residual given: h = x + residual, to sum_out
  bool gemma = false;      // gamma_offset = 1 (weights drawn around 0)
  bool hf_round = false;   // SIMDNORM_ROUND_NORMALIZED
  bool int8 = false;       // y_type I8 with y_scale
  size_t quant_group = 0;  // int8: 0 = one scale per row

  bool plain() const { return !fused_add && !gemma && !hf_round && !int8; }
  // "plain", "fused-add", "int8-g128", "fused-add+gemma+int8", ...
  std::string name() const;
  bool operator==(const Variant& o) const { return name() == o.name(); }
};

// What --variant takes, for its usage errors.
constexpr const char* kVariantSyntax =
    "plain, or fused-add, gemma, hf-round, int8, int8-gN joined with '+'";
// Parses one name as printed by Variant::name() (features joined by '+',
// in any order; "int8-gN" for a group of N elements, N >= 1).
bool parse_variant(const std::string& s, Variant* v);
// The default list: plain, fused-add, gemma, hf-round, int8, int8-g128.
std::vector<Variant> default_variants();

}  // namespace simdnorm_tools

#endif  // SIMDNORM_TOOLS_COMMON_VOCABULARY_H_
