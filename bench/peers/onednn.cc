// The oneDNN peer: layer_normalization_forward of oneDNN 2.x. Compiled with
// SIMDNORM_HAVE_ONEDNN only when CMake found DNNL::dnnl; otherwise every
// entry point reports that the peer is not built.
#include <cstdint>
#include <cstring>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "peers.h"

#ifdef SIMDNORM_HAVE_ONEDNN
#include "onednn_threads.h"
#endif

namespace simdnorm_peers {

#ifdef SIMDNORM_HAVE_ONEDNN
namespace {

const char* RuntimeName(unsigned r) {
  switch (r) {
    case DNNL_RUNTIME_OMP:
      return "OpenMP";
    case DNNL_RUNTIME_TBB:
      return "TBB";
    case DNNL_RUNTIME_SEQ:
      return "sequential";
    case DNNL_RUNTIME_THREADPOOL:
      return "threadpool";
    default:
      return "unknown";
  }
}

float Widen(const void* p, simdnorm_dtype t, size_t i) {
  if (t == SIMDNORM_F32) return static_cast<const float*>(p)[i];
  uint16_t b;
  std::memcpy(&b, static_cast<const char*>(p) + 2 * i, 2);
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace

struct OneDnnLayerNorm::Impl {
  size_t threads = 0;
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  dnnl::layer_normalization_forward prim;
  std::unordered_map<int, dnnl::memory> args;
  std::vector<float> scale, shift;
};

std::unique_ptr<OneDnnLayerNorm> OneDnnLayerNorm::Create(const simdnorm_desc& d,
                                                         std::string* why) {
  auto fail = [why](const std::string& m) {
    if (why) *why = m;
    return std::unique_ptr<OneDnnLayerNorm>();
  };
  if (d.kind != SIMDNORM_LAYERNORM) return fail("oneDNN 2.x has no RMSNorm");
  if (d.x_type != d.y_type) {
    return fail("oneDNN 2.x layer norm needs one dtype for x and y");
  }
  if ((d.x_stride && d.x_stride != d.cols) ||
      (d.y_stride && d.y_stride != d.cols)) {
    return fail("strided rows are not wired to oneDNN here");
  }
  auto impl = std::make_unique<Impl>();
  impl->threads = d.max_threads;
  try {
    using dt = dnnl::memory::data_type;
    using tag = dnnl::memory::format_tag;
    const dt type = d.x_type == SIMDNORM_BF16 ? dt::bf16 : dt::f32;
    const dnnl::memory::dims dims = {static_cast<dnnl::memory::dim>(d.rows),
                                     static_cast<dnnl::memory::dim>(d.cols)};
    const dnnl::memory::desc data_md(dims, type, tag::ab);
    auto flags = dnnl::normalization_flags::none;
    if (d.gamma) flags |= dnnl::normalization_flags::use_scale;
    if (d.beta) flags |= dnnl::normalization_flags::use_shift;
    WithThreads(d.max_threads, [&] {
      const dnnl::layer_normalization_forward::desc desc(
          dnnl::prop_kind::forward_inference, data_md, d.eps, flags);
      const dnnl::layer_normalization_forward::primitive_desc pd(desc,
                                                                 impl->engine);
      impl->prim = dnnl::layer_normalization_forward(pd);
      auto& args = impl->args;
      args[DNNL_ARG_SRC] =
          dnnl::memory(data_md, impl->engine, const_cast<void*>(d.x));
      args[DNNL_ARG_DST] = dnnl::memory(data_md, impl->engine, d.y);
      const dnnl::memory::desc param_md({dims[1]}, dt::f32, tag::a);
      if (d.gamma) {
        impl->scale.resize(d.cols);
        for (size_t i = 0; i < d.cols; ++i) {
          impl->scale[i] = Widen(d.gamma, d.param_type, i);
        }
        args[DNNL_ARG_SCALE] =
            dnnl::memory(param_md, impl->engine, impl->scale.data());
      }
      if (d.beta) {
        impl->shift.resize(d.cols);
        for (size_t i = 0; i < d.cols; ++i) {
          impl->shift[i] = Widen(d.beta, d.param_type, i);
        }
        args[DNNL_ARG_SHIFT] =
            dnnl::memory(param_md, impl->engine, impl->shift.data());
      }
      // Statistics are outputs in training only; allocate them if asked.
      if (pd.mean_desc().get_size() != 0) {
        args[DNNL_ARG_MEAN] = dnnl::memory(pd.mean_desc(), impl->engine);
        args[DNNL_ARG_VARIANCE] =
            dnnl::memory(pd.variance_desc(), impl->engine);
      }
      if (pd.scratchpad_desc().get_size() != 0) {
        args[DNNL_ARG_SCRATCHPAD] =
            dnnl::memory(pd.scratchpad_desc(), impl->engine);
      }
    });
  } catch (const dnnl::error& e) {
    return fail(std::string("oneDNN: ") + e.what());
  }
  return std::unique_ptr<OneDnnLayerNorm>(new OneDnnLayerNorm(std::move(impl)));
}

void OneDnnLayerNorm::Run(size_t calls) {
  WithThreads(impl_->threads, [&] {
    for (size_t i = 0; i < calls; ++i) {
      impl_->prim.execute(impl_->stream, impl_->args);
    }
    impl_->stream.wait();
  });
}

bool onednn_built() { return true; }

std::string onednn_info() {
  const dnnl_version_t* v = dnnl_version();
  std::string s = "oneDNN " + std::to_string(v->major) + "." +
                  std::to_string(v->minor) + "." + std::to_string(v->patch) +
                  " (" + RuntimeName(v->cpu_runtime) + " runtime";
  switch (v->cpu_runtime) {
    case DNNL_RUNTIME_OMP:
      s += "; 1-thread runs call omp_set_num_threads(1)";
      break;
    case DNNL_RUNTIME_TBB:
      s += "; 1-thread runs execute in a 1-thread tbb::task_arena";
      break;
    case DNNL_RUNTIME_SEQ:
      s += "; always 1 thread";
      break;
    default:
      s += "; the thread count cannot be limited here";
      break;
  }
  return s + ")";
}

bool onednn_can_limit_threads() {
  const dnnl_version_t* v = dnnl_version();
  // The header this file was compiled against decides how WithThreads limits
  // threads; the library loaded at run time must use that same runtime.
  return v->cpu_runtime == DNNL_CPU_RUNTIME &&
         (v->cpu_runtime == DNNL_RUNTIME_OMP ||
          v->cpu_runtime == DNNL_RUNTIME_TBB ||
          v->cpu_runtime == DNNL_RUNTIME_SEQ);
}

#else  // !SIMDNORM_HAVE_ONEDNN

struct OneDnnLayerNorm::Impl {};

std::unique_ptr<OneDnnLayerNorm> OneDnnLayerNorm::Create(const simdnorm_desc&,
                                                         std::string* why) {
  if (why) *why = "oneDNN not found at configure time";
  return nullptr;
}

void OneDnnLayerNorm::Run(size_t) {}

bool onednn_built() { return false; }

std::string onednn_info() {
  return "oneDNN not built in (find_package(dnnl) found nothing)";
}

bool onednn_can_limit_threads() { return false; }

#endif  // SIMDNORM_HAVE_ONEDNN

OneDnnLayerNorm::OneDnnLayerNorm(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}
OneDnnLayerNorm::~OneDnnLayerNorm() = default;

}  // namespace simdnorm_peers
