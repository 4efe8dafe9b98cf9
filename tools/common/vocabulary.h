// The words both tools share: the names of dtypes and kinds, and the engine
// variants of issue #7 that they run beside the plain call: fused residual add,
// Gemma's gamma offset, Hugging Face's rounding order and int8 output. A
// variant is a set of these features; `--variant fused-add+int8` combines them.
#ifndef SIMDNORM_TOOLS_COMMON_VOCABULARY_H_
#define SIMDNORM_TOOLS_COMMON_VOCABULARY_H_

#include <cstddef>
#include <string>
#include <vector>

#include "simdnorm/simdnorm.h"

namespace simdnorm_tools {

// "f32", "bf16", "f16", "i8".
const char* dtype_name(simdnorm_dtype t);
// f32 (or fp32, float), bf16, f16 (or fp16, half), in any case.
bool parse_dtype(const std::string& s, simdnorm_dtype* t);
// "layernorm", "rmsnorm".
const char* kind_name(simdnorm_kind k);

struct Variant {
  bool fused_add = false;  // residual given: h = x + residual, to sum_out
  bool gemma = false;      // gamma_offset = 1 (weights drawn around 0)
  bool hf_round = false;   // SIMDNORM_ROUND_NORMALIZED
  bool int8 = false;       // y_type I8 with y_scale
  size_t quant_group = 0;  // int8: 0 = one scale per row

  bool plain() const { return !fused_add && !gemma && !hf_round && !int8; }
  // "plain", "fused-add", "int8-g128", "fused-add+gemma+int8", ...
  std::string name() const;
};

inline bool operator==(const Variant& a, const Variant& b) {
  return a.name() == b.name();
}

// Parses one name as printed by Variant::name() (features joined by '+',
// in any order; "int8-gN" for a group of N elements, N >= 1).
bool parse_variant(const std::string& s, Variant* v);

// The default list: plain, fused-add, gemma, hf-round, int8, int8-g128.
std::vector<Variant> default_variants();

}  // namespace simdnorm_tools

#endif  // SIMDNORM_TOOLS_COMMON_VOCABULARY_H_
