#include "common/vocabulary.h"

#include <fmt/format.h>
#include <strings.h>

#include <charconv>
#include <cmath>
#include <cstring>

namespace simdnorm_tools {

const char* dtype_name(simdnorm_dtype t) {
  static const char* const kNames[] = {"f32", "bf16", "f16", "i8"};
  return kNames[t];
}

bool parse_dtype(const std::string& s, simdnorm_dtype* t) {
  static const std::pair<const char*, simdnorm_dtype> kNames[] = {
      {"f32", SIMDNORM_F32},   {"fp32", SIMDNORM_F32}, {"float", SIMDNORM_F32},
      {"bf16", SIMDNORM_BF16}, {"f16", SIMDNORM_F16},  {"fp16", SIMDNORM_F16},
      {"half", SIMDNORM_F16}};
  for (const auto& [name, type] : kNames) {
    if (strcasecmp(s.c_str(), name) == 0) {
      *t = type;
      return true;
    }
  }
  return false;
}

float load_float(const void* p, simdnorm_dtype t, size_t i) {
  if (t == SIMDNORM_F32) return static_cast<const float*>(p)[i];
  if (t == SIMDNORM_I8) return static_cast<const int8_t*>(p)[i];
  return half_to_float(t, static_cast<const uint16_t*>(p)[i]);
}

const std::vector<KindInfo>& kinds() {
  // The library's registry of operations (simdnorm_op_at), with the short
  // alias and chart label the tools have for some kinds (others use their
  // name and title). Centered kinds are run with beta, as engines call
  // LayerNorm; oneDNN 2.x has LayerNorm only.
  static const std::vector<KindInfo> kKinds = [] {
    struct Short {
      const char *name, *alias, *label;
    };
    static const Short kShort[] = {{"layernorm", "ln", "LN"},
                                   {"rmsnorm", "rms", "RMS"}};
    std::vector<KindInfo> out;
    for (size_t i = 0; const simdnorm_op_info* op = simdnorm_op_at(i); ++i) {
      const bool centered = op->centered != 0;
      KindInfo k{op->kind,
                 op->name,
                 op->name,
                 op->title,
                 centered,
                 centered,
                 op->kind == SIMDNORM_LAYERNORM};
      for (const Short& s : kShort) {
        if (std::strcmp(s.name, op->name) == 0) {
          k.alias = s.alias;
          k.label = s.label;
        }
      }
      out.push_back(k);
    }
    return out;
  }();
  return kKinds;
}

const KindInfo& kind_info(simdnorm_kind k) {
  for (const KindInfo& i : kinds()) {
    if (i.kind == k) return i;
  }
  return kinds().front();
}

std::vector<simdnorm_kind> all_kinds() {
  std::vector<simdnorm_kind> out;
  for (const KindInfo& i : kinds()) out.push_back(i.kind);
  return out;
}

bool parse_kind(const std::string& s, simdnorm_kind* k, bool lenient) {
  for (const KindInfo& i : kinds()) {
    if (lenient ? strcasecmp(s.c_str(), i.name) == 0 ||
                      strcasecmp(s.c_str(), i.alias) == 0
                : s == i.name) {
      *k = i.kind;
      return true;
    }
  }
  return false;
}

std::string kind_list() {
  std::string out;
  for (const KindInfo& k : kinds())
    out += (out.empty() ? "" : ", ") + std::string(k.name);
  return out;
}

std::string kind_names() {
  std::string out;
  for (size_t i = 0; i < kinds().size(); ++i) {
    out += i == 0 ? "" : (i + 1 == kinds().size() ? " or " : ", ");
    out += kinds()[i].name;
  }
  return out;
}

bool parse_size(const std::string& s, size_t* v) {
  const char* end = s.data() + s.size();
  const auto r = std::from_chars(s.data(), end, *v);
  return !s.empty() && r.ec == std::errc() && r.ptr == end;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out(1);
  for (char c : s) {
    if (c == sep) {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

std::string Variant::name() const {
  std::vector<std::string> f;
  if (fused_add) f.push_back("fused-add");
  if (gemma) f.push_back("gemma");
  if (hf_round) f.push_back("hf-round");
  if (int8)
    f.push_back(quant_group ? fmt::format("int8-g{}", quant_group) : "int8");
  return f.empty() ? "plain" : fmt::format("{}", fmt::join(f, "+"));
}

bool parse_variant(const std::string& s, Variant* v) {
  Variant out;
  for (const std::string& f :
       s == "plain" ? std::vector<std::string>() : split(s, '+')) {
    bool* feature = f == "fused-add"                           ? &out.fused_add
                    : f == "gemma"                             ? &out.gemma
                    : f == "hf-round"                          ? &out.hf_round
                    : f == "int8" || f.rfind("int8-g", 0) == 0 ? &out.int8
                                                               : nullptr;
    if (!feature || *feature) return false;  // unknown or repeated
    *feature = true;
    const std::string n = f.substr(std::min<size_t>(6, f.size()));
    if (feature == &out.int8 && f != "int8" &&  // int8-gN, no leading 0
        (n[0] == '0' || !parse_size(n, &out.quant_group) ||
         out.quant_group > (1u << 24))) {
      return false;
    }
  }
  *v = out;
  return true;
}

std::vector<Variant> default_variants() {
  std::vector<Variant> out(6);
  out[1].fused_add = true;
  out[2].gemma = true;
  out[3].hf_round = true;
  out[4].int8 = out[5].int8 = true;
  out[5].quant_group = 128;
  return out;
}

}  // namespace simdnorm_tools
