#include "options.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace simdnorm_accuracy {
namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    const size_t end = s.find(sep, start);
    out.push_back(s.substr(start, end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

bool parse_u64(const std::string& s, uint64_t* v) {
  if (s.empty() || s[0] == '-' || s[0] == '+') return false;
  errno = 0;
  char* end = nullptr;
  const unsigned long long r = std::strtoull(s.c_str(), &end, 0);
  if (errno != 0 || end != s.c_str() + s.size()) return false;
  *v = r;
  return true;
}

bool parse_size(const std::string& s, size_t* v, size_t min, size_t max) {
  uint64_t r;
  if (!parse_u64(s, &r) || r < min || r > max) return false;
  *v = static_cast<size_t>(r);
  return true;
}

bool parse_dtype(const std::string& s, simdnorm_dtype* t) {
  if (s == "f32" || s == "fp32" || s == "float") {
    *t = SIMDNORM_F32;
  } else if (s == "bf16") {
    *t = SIMDNORM_BF16;
  } else if (s == "f16" || s == "fp16" || s == "half") {
    *t = SIMDNORM_F16;
  } else {
    return false;
  }
  return true;
}

}  // namespace

const std::vector<size_t>& default_cols() {
  static const std::vector<size_t> kCols = {896, 4096, 1001};
  return kCols;
}

const std::vector<size_t>& default_f16_cols() {
  static const std::vector<size_t> kCols = {896, 1001};
  return kCols;
}

const std::vector<size_t>& default_variant_cols() {
  static const std::vector<size_t> kCols = {1001};
  return kCols;
}

namespace {

std::vector<Dtypes> combinations(const std::vector<simdnorm_dtype>& types,
                                 bool need_f16) {
  std::vector<Dtypes> out;
  for (simdnorm_dtype x : types) {
    for (simdnorm_dtype y : types) {
      for (simdnorm_dtype w : types) {
        const Dtypes d{x, y, w};
        const bool f16 =
            x == SIMDNORM_F16 || y == SIMDNORM_F16 || w == SIMDNORM_F16;
        if (!need_f16 || f16) out.push_back(d);
      }
    }
  }
  return out;
}

}  // namespace

std::vector<Dtypes> f32_bf16_dtypes() {
  return combinations({SIMDNORM_F32, SIMDNORM_BF16}, false);
}

std::vector<Dtypes> f16_dtypes() {
  return combinations({SIMDNORM_F32, SIMDNORM_F16}, true);
}

std::vector<Dtypes> all_dtypes() {
  return combinations({SIMDNORM_F32, SIMDNORM_BF16, SIMDNORM_F16}, false);
}

std::vector<Dtypes> variant_dtypes() {
  return {Dtypes{SIMDNORM_F32, SIMDNORM_F32, SIMDNORM_F32},
          Dtypes{SIMDNORM_BF16, SIMDNORM_BF16, SIMDNORM_BF16},
          Dtypes{SIMDNORM_F16, SIMDNORM_F16, SIMDNORM_F16},
          Dtypes{SIMDNORM_BF16, SIMDNORM_BF16, SIMDNORM_F32}};
}

void print_usage(std::ostream& os) {
  os << R"(Usage: simdnorm-accuracy [options]

Measures simdnorm's LayerNorm and RMSNorm kernels on every ISA of this machine
against the float64 reference, beside textbook shortcuts, and checks the
library against its bounds: fp32 output <= 32 scaled ulps at every element;
bf16 and f16 output >= 99.9% equal to the once-rounded reference and never
beyond 1 ulp (or the rounding of a value within the fp32 bound); int8 output
scales within 1e-6 relative and q within 1 of the float64 ones; the fused
add's sum_out bit-exact. Exit status: 0 within the bounds, 1 a library row
exceeds a bound (or a call failed), 2 usage error.

Selection:
  --isa NAME[,NAME]      ISAs to force (default: every one the library lists)
  --kind K[,K]           layernorm, rmsnorm (default: both)
  --variant V[,V]        plain, fused-add (residual, sum_out), gemma
                         (gamma_offset 1), hf-round (ROUND_NORMALIZED), int8
                         (per-row scale), int8-gN (a scale per N elements);
                         join features with '+', e.g. fused-add+int8-g128
                         (default: plain,fused-add,gemma,hf-round,int8,
                         int8-g128)
  --dtypes X/Y/W[,...]   dtype combinations of x/y/weights, each f32, bf16 or
                         f16; "all" = the 27 (default for plain: the 8 of
                         f32 and bf16, and the 7 with f16 and f32 on hidden
                         sizes 896,1001; for the other variants:
                         f32/f32/f32, bf16/bf16/bf16, f16/f16/f16,
                         bf16/bf16/f32; int8 variants make y i8)
  --family NAME[,NAME]   generated families to run (default: all for plain,
                         normal,llm-hidden,student-t2 for the other variants;
                         see below)
  --cols N[,N]           hidden sizes (default: 896,4096,1001 for plain, 1001
                         for the other variants)
  --rows N               rows per family and hidden size (default: 64;
                         with --input: the first N rows of the file)
  --seed N               seed of the inputs and weights (default: 1)
  --eps E                eps of the families that do not use 0 (default: 1e-5)
  --threads N            max_threads of each call (default: 0 = TBB default)
  --no-shortcuts         skip the textbook shortcuts

Your own activations:
  --input FILE           raw little-endian rows instead of the generated
                         families; requires a single --cols N
  --input-dtype T        element type of FILE: f32, bf16 or f16 (default f32)

Output (the text report goes to stdout unless JSON or CSV does):
  --detail               also one line per (ISA, kind, dtypes, family)
  --json [FILE]          JSON report to FILE, or stdout if none or "-"
  --csv [FILE]           CSV, one line per result row, to FILE or stdout
  --svg FILE             chart of the worst error per family, log scales
  --quiet                no progress line on stderr
  -h, --help             this text

Families: normal, offset1e3, offset1e4, llm-hidden, first-outlier,
student-t2, cauchy, near-constant, near-constant-eps0, constant, huge1e25,
huge1e25-eps0, huge1e36, huge1e36-eps0, tiny1e-25, tiny1e-25-eps0,
subnormal1e-40, subnormal1e-40-eps0, and each again as bf16q:NAME (rounded
to bf16; fp32 x only, since bf16 x is rounded anyway). f16 x runs the
families that fit f16 (not huge*, tiny*, subnormal*). The fused add's
residual is a second draw of the same family (with --input: the next row).
--dtypes, --family and --cols, when given, apply to every variant.
See docs/accuracy.md.
)";
}

bool parse_options(int argc, char** argv, Options* opt, std::string* error) {
  auto fail = [&](const std::string& m) {
    *error = m;
    return false;
  };
  bool json_stdout = false, csv_stdout = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    bool has_inline = false;
    if (arg.rfind("--", 0) == 0) {
      const size_t eq = arg.find('=');
      if (eq != std::string::npos) {
        value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
        has_inline = true;
      }
    }
    // A required value: inline (--opt=v) or the next argument.
    auto need = [&](std::string* v) {
      if (has_inline) {
        *v = value;
        return true;
      }
      if (i + 1 >= argc) return false;
      *v = argv[++i];
      return true;
    };
    // An optional file: inline, or the next argument unless it is an option.
    auto optional_file = [&](std::string* v) {
      if (has_inline) {
        *v = value;
      } else if (i + 1 < argc &&
                 (argv[i + 1][0] != '-' || std::string(argv[i + 1]) == "-")) {
        *v = argv[++i];
      } else {
        v->clear();
      }
    };
    std::string v;
    if (arg == "-h" || arg == "--help") {
      opt->help = true;
    } else if (arg == "--detail") {
      opt->detail = true;
    } else if (arg == "--quiet") {
      opt->quiet = true;
    } else if (arg == "--no-shortcuts") {
      opt->shortcuts = false;
    } else if (arg == "--json") {
      opt->json = true;
      optional_file(&opt->json_path);
      json_stdout = opt->json_path.empty() || opt->json_path == "-";
    } else if (arg == "--csv") {
      opt->csv = true;
      optional_file(&opt->csv_path);
      csv_stdout = opt->csv_path.empty() || opt->csv_path == "-";
    } else if (arg == "--svg") {
      if (!need(&opt->svg_path) || opt->svg_path.empty()) {
        return fail("--svg needs a FILE");
      }
    } else if (arg == "--isa") {
      if (!need(&v) || v.empty()) return fail("--isa needs NAME[,NAME]");
      for (const std::string& n : split(v, ',')) {
        if (n.empty()) return fail("--isa: empty name in '" + v + "'");
        opt->isas.push_back(n);
      }
    } else if (arg == "--kind") {
      if (!need(&v)) return fail("--kind needs layernorm or rmsnorm");
      for (const std::string& k : split(v, ',')) {
        if (k == "layernorm") {
          opt->kinds.push_back(SIMDNORM_LAYERNORM);
        } else if (k == "rmsnorm") {
          opt->kinds.push_back(SIMDNORM_RMSNORM);
        } else {
          return fail("--kind: '" + k + "' is not layernorm or rmsnorm");
        }
      }
    } else if (arg == "--dtypes") {
      if (!need(&v)) return fail("--dtypes needs X/Y/W[,X/Y/W]");
      for (const std::string& t : split(v, ',')) {
        if (t == "all") {
          for (const Dtypes& d : all_dtypes()) opt->dtypes.push_back(d);
          continue;
        }
        const std::vector<std::string> p = split(t, '/');
        Dtypes d;
        if (p.size() == 3 && p[1] == "i8") {
          return fail("--dtypes: '" + t +
                      "': int8 output is --variant int8 (or int8-gN)");
        }
        if (p.size() != 3 || !parse_dtype(p[0], &d.x) ||
            !parse_dtype(p[1], &d.y) || !parse_dtype(p[2], &d.w)) {
          return fail("--dtypes: '" + t +
                      "' is not X/Y/W with each f32, bf16 or f16");
        }
        opt->dtypes.push_back(d);
      }
    } else if (arg == "--variant") {
      if (!need(&v) || v.empty()) return fail("--variant needs V[,V]");
      for (const std::string& n : split(v, ',')) {
        Variant var;
        if (!parse_variant(n, &var)) {
          return fail("--variant: '" + n +
                      "' is not plain, or fused-add, gemma, hf-round, int8, "
                      "int8-gN joined with '+'");
        }
        opt->variants.push_back(var);
      }
    } else if (arg == "--family") {
      if (!need(&v) || v.empty()) return fail("--family needs NAME[,NAME]");
      for (const std::string& f : split(v, ',')) opt->families.push_back(f);
    } else if (arg == "--cols") {
      if (!need(&v)) return fail("--cols needs N[,N]");
      for (const std::string& c : split(v, ',')) {
        size_t n;
        if (!parse_size(c, &n, 1, size_t{1} << 24)) {
          return fail("--cols: '" + c + "' is not a size in 1..16777216");
        }
        opt->cols.push_back(n);
      }
    } else if (arg == "--rows") {
      if (!need(&v) || !parse_size(v, &opt->rows, 1, size_t{1} << 24)) {
        return fail("--rows needs a number in 1..16777216");
      }
    } else if (arg == "--seed") {
      if (!need(&v) || !parse_u64(v, &opt->seed)) {
        return fail("--seed needs a non-negative integer");
      }
    } else if (arg == "--eps") {
      if (!need(&v)) return fail("--eps needs a value");
      char* end = nullptr;
      const double e = std::strtod(v.c_str(), &end);
      if (v.empty() || end != v.c_str() + v.size() || !(e >= 0) ||
          !std::isfinite(static_cast<float>(e))) {
        return fail("--eps: '" + v + "' is not a finite value >= 0");
      }
      opt->eps = static_cast<float>(e);
    } else if (arg == "--threads") {
      if (!need(&v) || !parse_size(v, &opt->threads, 0, 4096)) {
        return fail("--threads needs a number in 0..4096");
      }
    } else if (arg == "--input") {
      if (!need(&opt->input) || opt->input.empty()) {
        return fail("--input needs a FILE");
      }
    } else if (arg == "--input-dtype") {
      if (!need(&v) || !parse_dtype(v, &opt->input_dtype)) {
        return fail("--input-dtype needs f32, bf16 or f16");
      }
      opt->input_dtype_given = true;
    } else {
      return fail("unknown option '" + std::string(argv[i]) + "'");
    }
    if (has_inline && (arg == "-h" || arg == "--help" || arg == "--detail" ||
                       arg == "--quiet" || arg == "--no-shortcuts")) {
      return fail(arg + " takes no value");
    }
  }
  if (opt->help) return true;
  if (json_stdout && csv_stdout) {
    return fail(
        "--json and --csv cannot both write to stdout; give one a FILE");
  }
  if (opt->input_dtype_given && opt->input.empty()) {
    return fail("--input-dtype needs --input FILE");
  }
  if (!opt->input.empty() && opt->cols.size() != 1) {
    return fail("--input needs exactly one --cols N (the row length)");
  }
  if (!opt->input.empty() && !opt->families.empty()) {
    return fail(
        "--family selects generated families; it cannot go with --input");
  }
  return true;
}

}  // namespace simdnorm_accuracy
