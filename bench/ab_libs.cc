// simdnorm_ab_libs: two builds of libsimdnorm timed in one process.
//
//   simdnorm_ab_libs OLD.so NEW.so [kind=rmsnorm] [dtype=bf16] [rows=64]
//       [cols=896] [offset=0] [yoffset=OFFSET] [woffset=OFFSET] [batches=100]
//       [flags=0] [isa=NAME] [param=f32|bf16|f16] [weights=yes|none]
//       [residual=no|yes] [saved=no|yes]
//
// offset: bytes past a 64-byte line of x, gamma and beta (and y, unless
// yoffset gives y's; gamma and beta, unless woffset gives theirs). Both
// libraries are loaded with dlopen (give two different paths: copy one build's
// libsimdnorm.so.* aside first) and called alternately, in batches of ~2 ms,
// the order swapped every batch, so that both see the same machine state.
// Prints each build's min and median ns per row, their ratios (old / new: above
// 1 is a speed-up) and whether the outputs are byte-identical. On a noisy VM
// two copies of one build measure 1.00-1.01x this way, where separate processes
// differ by up to 30 %. kind: layernorm (with gamma and beta), rmsnorm, l2norm
// (gamma; weights=none: neither gamma nor beta; residual=yes: the fused
// add, h = x + residual to sum_out, which is compared too; saved=yes: the
// forward also writes mean_out and rstd_out, compared too); dtype: f32, bf16 or
// f16 for x, y and the weights, or X:Y for x and y apart (the weights X's
// unless param gives theirs); flags: simdnorm_desc.flags (e.g. 1 =
// SIMDNORM_ROUND_NORMALIZED, 8 = SIMDNORM_FAST_ROUNDING). kind KIND-backward
// (layernorm, rmsnorm) times simdnorm_backward instead: dx, dgamma and dbeta
// (layernorm) from the forward's saved statistics, as autograd calls it
// (saved=no: without them, as a C caller may); dy = N(0,1). kind groupnorm-nchw
// or groupnorm-nhwc times simdnorm_group_norm on one sample of cols channels
// and rows positions, 32 groups (gamma, beta); batchnorm-training-nchw or -nhwc
// simdnorm_batch_norm in training on the same shape, batchnorm-nchw or -nhwc in
// inference; samples=S splits the rows positions into S samples (n = S).
#include <dlfcn.h>
#include <simdnorm/simdnorm.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace {

using NormalizeFn = simdnorm_status (*)(const simdnorm_desc*, size_t);
using BackwardFn = simdnorm_status (*)(const simdnorm_backward_desc*, size_t);
using GroupFn = simdnorm_status (*)(const simdnorm_group_desc*, size_t);
using BatchFn = simdnorm_status (*)(const simdnorm_batch_desc*, size_t);
using SetIsaFn = simdnorm_status (*)(const char*);

struct Lib {
  NormalizeFn normalize = nullptr;
  BackwardFn backward = nullptr;
  GroupFn group = nullptr;
  BatchFn batch = nullptr;
  std::vector<double> ns;
};

bool Open(std::string path, const char* isa, Lib& lib) {
  // dlopen searches the library path for a name without a slash.
  if (path.find('/') == std::string::npos) path = "./" + path;
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    std::fprintf(stderr, "%s\n", dlerror());
    return false;
  }
  lib.normalize =
      reinterpret_cast<NormalizeFn>(dlsym(h, "simdnorm_normalize_sized"));
  lib.backward =
      reinterpret_cast<BackwardFn>(dlsym(h, "simdnorm_backward_sized"));
  lib.group = reinterpret_cast<GroupFn>(dlsym(h, "simdnorm_group_norm_sized"));
  lib.batch = reinterpret_cast<BatchFn>(dlsym(h, "simdnorm_batch_norm_sized"));
  auto set_isa = reinterpret_cast<SetIsaFn>(dlsym(h, "simdnorm_set_isa"));
  if (lib.normalize == nullptr || lib.backward == nullptr ||
      lib.group == nullptr || lib.batch == nullptr || set_isa == nullptr) {
    std::fprintf(stderr, "%s: not a libsimdnorm\n", path.c_str());
    return false;
  }
  if (isa != nullptr && set_isa(isa) != SIMDNORM_OK) {
    std::fprintf(stderr, "%s: ISA %s not available\n", path.c_str(), isa);
    return false;
  }
  return true;
}

uint16_t Bf16(float f) {  // round to nearest-even (finite inputs)
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

// f16 bits of a normal |f| in [2^-14, 65504] (the inputs' range here),
// rounded half up: any f16 value serves as an input.
uint16_t F16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  const uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7FFFFFFFu;
  if (a < 0x38800000u) return static_cast<uint16_t>(sign);  // to +-0
  return static_cast<uint16_t>(sign | ((a - 0x38000000u + 0x1000u) >> 13));
}

struct Type {
  simdnorm_dtype id;
  size_t bytes;
};

Type TypeOf(const std::string& name) {
  if (name == "bf16") return {SIMDNORM_BF16, 2};
  if (name == "f16") return {SIMDNORM_F16, 2};
  if (name == "f32") return {SIMDNORM_F32, 4};
  std::fprintf(stderr, "unknown dtype %s\n", name.c_str());
  std::exit(2);
}

// A buffer of n elements starting `offset` bytes past a 64-byte line.
struct Buffer {
  std::vector<unsigned char> raw;
  unsigned char* p = nullptr;
  Buffer(size_t bytes, size_t offset) : raw(bytes + 128) {
    const uintptr_t a = reinterpret_cast<uintptr_t>(raw.data());
    p = raw.data() + ((64 - a % 64) % 64) + offset;
  }
};

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() > suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The fields of a group or batch descriptor for `samples` samples of d.cols
// channels and d.rows / samples positions, with d's types, weights and flags.
template <class Desc>
void ChannelDesc(const simdnorm_desc& d, const void* beta,
                 const std::string& kind, size_t samples, Desc& e) {
  e.n = samples;
  e.c = d.cols;
  e.hw = d.rows / samples;
  e.layout = EndsWith(kind, "-nhwc") ? SIMDNORM_NHWC : SIMDNORM_NCHW;
  e.x = d.x;
  e.x_type = d.x_type;
  e.y_type = d.y_type;
  e.gamma = d.gamma;
  e.beta = beta;
  e.param_type = d.param_type;
  e.eps = 1e-5f;
  e.max_threads = 1;
  e.flags = d.flags;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: %s OLD.so NEW.so [kind=rmsnorm] [dtype=bf16|X:Y] "
                 "[rows=64] [cols=896] [offset=0] [yoffset=OFFSET] "
                 "[woffset=OFFSET] [batches=100] [flags=0] "
                 "[isa=NAME] [param=f32|bf16|f16] [weights=yes|none] "
                 "[residual=no|yes] [samples=1]\n",
                 argv[0]);
    return 2;
  }
  std::map<std::string, std::string> opt = {
      {"kind", "rmsnorm"}, {"dtype", "bf16"}, {"rows", "64"},
      {"cols", "896"},     {"offset", "0"},   {"batches", "100"},
      {"yoffset", ""},     {"flags", "0"},    {"isa", ""},
      {"param", ""},       {"woffset", ""},   {"weights", "yes"},
      {"residual", "no"},  {"saved", "no"},   {"samples", "1"}};
  for (int i = 3; i < argc; ++i) {
    const char* eq = std::strchr(argv[i], '=');
    const std::string key =
        eq ? std::string(argv[i], static_cast<size_t>(eq - argv[i])) : argv[i];
    if (eq == nullptr || opt.count(key) == 0) {
      std::fprintf(stderr, "unknown argument %s\n", argv[i]);
      return 2;
    }
    opt[key] = eq + 1;
  }
  const char* isa = opt["isa"].empty() ? nullptr : opt["isa"].c_str();
  Lib libs[2];
  if (!Open(argv[1], isa, libs[0]) || !Open(argv[2], isa, libs[1])) return 1;
  if (libs[0].normalize == libs[1].normalize) {
    std::fprintf(stderr, "the same library twice: copy one aside\n");
    return 1;
  }
  const std::string suffix = "-backward";
  const bool backward = EndsWith(opt["kind"], suffix);
  const std::string kind = opt["kind"].substr(
      0, opt["kind"].size() - (backward ? suffix.size() : 0));
  const bool group = kind.rfind("groupnorm-", 0) == 0;
  const bool batch = kind.rfind("batchnorm-", 0) == 0;
  const std::string& dtype = opt["dtype"];
  const size_t colon = dtype.find(':');
  const Type tx = TypeOf(dtype.substr(0, colon));
  const Type ty =
      colon == std::string::npos ? tx : TypeOf(dtype.substr(colon + 1));
  const Type tp = opt["param"].empty() ? tx : TypeOf(opt["param"]);
  const size_t rows = std::stoul(opt["rows"]), cols = std::stoul(opt["cols"]);
  const size_t offset = std::stoul(opt["offset"]);
  const size_t samples = std::stoul(opt["samples"]);
  if (samples == 0 || rows % samples != 0) {
    std::fprintf(stderr, "samples must divide rows\n");
    return 2;
  }
  const auto offset_of = [&](const char* key) {
    return opt[key].empty() ? offset : std::stoul(opt[key]);
  };
  const size_t y_offset = offset_of("yoffset"), w_offset = offset_of("woffset");
  const int batches = std::stoi(opt["batches"]);
  const size_t elem = tx.bytes, y_elem = ty.bytes;

  const size_t out = rows * cols * std::max(elem, y_elem);  // y or dx
  Buffer x(rows * cols * elem, offset), y0(out, y_offset), y1(out, y_offset),
      gamma(cols * 4, w_offset), beta(cols * 4, w_offset),
      dy(rows * cols * elem, offset), sums0(2 * cols * 4, 0),
      sums1(2 * cols * 4, 0), saved(2 * rows * 4, 0);
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  const auto fill = [&](unsigned char* p, size_t n, float mean, float sd,
                        Type t) {
    for (size_t i = 0; i < n; ++i) {
      const float v = mean + sd * normal(rng);
      if (t.bytes == 2) {
        const uint16_t b = t.id == SIMDNORM_BF16 ? Bf16(v) : F16(v);
        std::memcpy(p + 2 * i, &b, 2);
      } else {
        std::memcpy(p + 4 * i, &v, 4);
      }
    }
  };
  fill(x.p, rows * cols, 0.0f, 1.0f, tx);
  fill(gamma.p, cols, 1.0f, 0.1f, tp);
  fill(beta.p, cols, 0.0f, 0.1f, tp);
  fill(dy.p, rows * cols, 0.0f, 1.0f, tx);

  simdnorm_desc d = {};
  d.kind = kind == "layernorm" ? SIMDNORM_LAYERNORM
           : kind == "l2norm"  ? SIMDNORM_L2NORM
                               : SIMDNORM_RMSNORM;
  d.rows = rows;
  d.cols = cols;
  d.x = x.p;
  d.x_type = tx.id;
  d.y_type = ty.id;
  d.param_type = tp.id;
  const bool weights = opt["weights"] != "none";
  d.gamma = weights ? gamma.p : nullptr;
  d.beta = weights && d.kind == SIMDNORM_LAYERNORM ? beta.p : nullptr;
  Buffer h0(rows * cols * elem, offset), h1(rows * cols * elem, offset);
  unsigned char* hs[2] = {h0.p, h1.p};
  if (opt["residual"] == "yes") d.residual = dy.p;
  // saved=yes: each build's saved statistics (mean_out, rstd_out).
  const bool with_saved = opt["saved"] == "yes" && !backward;
  Buffer saved0(2 * rows * 4, 0), saved1(2 * rows * 4, 0);
  float* saves[2] = {reinterpret_cast<float*>(saved0.p),
                     reinterpret_cast<float*>(saved1.p)};
  d.eps = 1e-6f;
  d.max_threads = 1;
  d.flags = static_cast<unsigned>(std::stoul(opt["flags"]));
  unsigned char* outs[2] = {y0.p, y1.p};
  float* sums[2] = {reinterpret_cast<float*>(sums0.p),
                    reinterpret_cast<float*>(sums1.p)};
  simdnorm_group_desc gd = {};
  ChannelDesc(d, beta.p, kind, samples, gd);
  gd.groups = 32;
  // Running statistics as training leaves them: a mean near 0 (not a bf16
  // value) and a variance near 1.
  std::vector<float> running(2 * cols);
  for (size_t j = 0; j < cols; ++j) {
    running[j] = 0.1f * normal(rng);
    running[cols + j] = 1.0f + 0.1f * std::fabs(normal(rng));
  }
  simdnorm_batch_desc nd = {};
  ChannelDesc(d, beta.p, kind, samples, nd);
  nd.running_mean = running.data();
  nd.running_var = running.data() + cols;
  nd.momentum = 0.1f;
  nd.training = kind.rfind("batchnorm-training-", 0) == 0 ? 1 : 0;
  simdnorm_backward_desc bd = {};
  if (backward) {  // the forward's saved statistics, then the backward's
    d.y = y0.p;
    d.mean_out = reinterpret_cast<float*>(saved.p);
    d.rstd_out = d.mean_out + rows;
    if (libs[0].normalize(&d, sizeof(d)) != SIMDNORM_OK) return 1;
    bd.kind = d.kind;
    bd.rows = rows;
    bd.cols = cols;
    bd.x = x.p;
    bd.dy = dy.p;
    bd.x_type = bd.dy_type = bd.dx_type = bd.param_type = d.x_type;
    bd.gamma = gamma.p;
    bd.eps = d.eps;
    bd.max_threads = 1;
    if (opt["saved"] != "no") {  // saved=no: the backward recomputes them
      bd.mean = d.mean_out;
      bd.rstd = d.rstd_out;
    }
  }

  using Clock = std::chrono::steady_clock;
  const auto run = [&](int w, int iters) {
    d.y = outs[w];
    if (d.residual != nullptr) d.sum_out = hs[w];
    if (with_saved) {
      d.mean_out = saves[w];
      d.rstd_out = saves[w] + rows;
    }
    gd.y = outs[w];
    nd.y = outs[w];
    bd.dx = outs[w];
    bd.dgamma = sums[w];
    bd.dbeta = d.kind == SIMDNORM_LAYERNORM ? sums[w] + cols : nullptr;
    const auto t0 = Clock::now();
    for (int i = 0; i < iters; ++i) {
      const simdnorm_status s = group      ? libs[w].group(&gd, sizeof(gd))
                                : batch    ? libs[w].batch(&nd, sizeof(nd))
                                : backward ? libs[w].backward(&bd, sizeof(bd))
                                           : libs[w].normalize(&d, sizeof(d));
      if (s != SIMDNORM_OK) {
        std::fprintf(stderr, "call failed: status %d\n", static_cast<int>(s));
        std::exit(1);
      }
    }
    return std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
  };
  int iters = 1;  // ~2 ms a batch
  while (run(0, iters) < 2e6 && iters < (1 << 24)) iters *= 2;
  for (int b = 0; b < batches; ++b) {
    for (int k = 0; k < 2; ++k) {
      const int w = (b % 2 == 0) ? k : 1 - k;
      libs[w].ns.push_back(run(w, iters) / iters / rows);
    }
  }
  double min[2], median[2];
  for (int w = 0; w < 2; ++w) {
    std::vector<double>& v = libs[w].ns;
    std::sort(v.begin(), v.end());
    min[w] = v.front();
    median[w] = v[v.size() / 2];
  }
  const bool same = std::memcmp(y0.p, y1.p, out) == 0 &&
                    std::memcmp(h0.p, h1.p, rows * cols * elem) == 0 &&
                    std::memcmp(sums0.p, sums1.p, 2 * cols * 4) == 0 &&
                    std::memcmp(saved0.p, saved1.p, 2 * rows * 4) == 0;
  std::printf(
      "%s %s rows %zu cols %zu offset %zu flags %u isa %s: old min %.1f "
      "median %.1f, new min %.1f median %.1f ns/row; old/new min %.3f "
      "median %.3f; outputs %s\n",
      opt["kind"].c_str(), dtype.c_str(), rows, cols, offset, d.flags,
      isa ? isa : "auto", min[0], median[0], min[1], median[1], min[0] / min[1],
      median[0] / median[1], same ? "identical" : "DIFFER");
  return same ? 0 : 3;
}
