// The oneDNN peers of the other passes (onednn_passes.h). Compiled with
// SIMDNORM_HAVE_ONEDNN only when CMake found DNNL::dnnl.
#include "onednn_passes.h"

#include <unordered_map>
#include <utility>

#ifdef SIMDNORM_HAVE_ONEDNN
#include "onednn_threads.h"
#endif

namespace simdnorm_peers {

#ifdef SIMDNORM_HAVE_ONEDNN

struct OneDnnPass::Impl {
  size_t threads = 0;
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  dnnl::primitive prim;
  std::unordered_map<int, dnnl::memory> args;
};

std::unique_ptr<OneDnnPass> OneDnnPass::Create(Op op, size_t n, size_t c,
                                               size_t hw, bool nhwc,
                                               size_t threads,
                                               std::string* why) {
  auto impl = std::make_unique<Impl>();
  impl->threads = threads;
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  using nf = dnnl::normalization_flags;
  using pk = dnnl::prop_kind;
  const auto dim = [](size_t v) { return static_cast<dnnl::memory::dim>(v); };
  const nf flags = nf::use_scale | nf::use_shift;
  const float eps = 1e-5f;
  try {
    dnnl::primitive_desc pd;
    WithThreads(threads, [&] {
      const dnnl::engine& e = impl->engine;
      if (op == Op::kLayerNormBackward) {
        const dnnl::memory::desc md({dim(n), dim(c)}, dt::f32, tag::ab);
        const dnnl::memory::desc stat({dim(n)}, dt::f32, tag::a);
        using fwd = dnnl::layer_normalization_forward;
        using bwd = dnnl::layer_normalization_backward;
        const fwd::primitive_desc hint(
            fwd::desc(pk::forward_training, md, stat, eps, flags), e);
        const bwd::primitive_desc p(
            bwd::desc(pk::backward, md, md, stat, eps, flags), e, hint);
        impl->prim = bwd(p);
        pd = p;
        return;
      }
      const dnnl::memory::desc md({dim(n), dim(c), dim(hw), 1}, dt::f32,
                                  nhwc ? tag::nhwc : tag::nchw);
      using fwd = dnnl::batch_normalization_forward;
      using bwd = dnnl::batch_normalization_backward;
      if (op == Op::kBatchNormInference) {
        const fwd::primitive_desc p(fwd::desc(pk::forward_inference, md, eps,
                                              flags | nf::use_global_stats),
                                    e);
        impl->prim = fwd(p);
        pd = p;
        return;
      }
      const fwd::primitive_desc train(
          fwd::desc(pk::forward_training, md, eps, flags), e);
      if (op == Op::kBatchNormTraining) {
        impl->prim = fwd(train);
        pd = train;
        return;
      }
      const bwd::primitive_desc p(bwd::desc(pk::backward, md, md, eps, flags),
                                  e, train);
      impl->prim = bwd(p);
      pd = p;
    });
    // Every argument the primitive takes, in its own memory.
    for (int arg :
         {DNNL_ARG_SRC, DNNL_ARG_DST, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_SRC,
          DNNL_ARG_MEAN, DNNL_ARG_VARIANCE, DNNL_ARG_SCALE, DNNL_ARG_SHIFT,
          DNNL_ARG_DIFF_SCALE, DNNL_ARG_DIFF_SHIFT, DNNL_ARG_WORKSPACE,
          DNNL_ARG_SCRATCHPAD}) {
      const dnnl::memory::desc md = pd.query_md(dnnl::query::exec_arg_md, arg);
      if (md.get_size() == 0) continue;
      dnnl::memory m(md, impl->engine);
      float* f = static_cast<float*>(m.get_data_handle());
      for (size_t i = 0; i < md.get_size() / sizeof(float); ++i) {
        f[i] = arg == DNNL_ARG_VARIANCE || arg == DNNL_ARG_SCALE
                   ? 1.0f
                   : static_cast<float>(static_cast<int>(i * 37 % 101) - 50) /
                         29.0f;
      }
      impl->args[arg] = m;
    }
  } catch (const dnnl::error& e) {
    if (why) *why = std::string("oneDNN: ") + e.what();
    return nullptr;
  }
  return std::unique_ptr<OneDnnPass>(new OneDnnPass(std::move(impl)));
}

void OneDnnPass::Run(size_t calls) {
  WithThreads(impl_->threads, [&] {
    for (size_t i = 0; i < calls; ++i) {
      impl_->prim.execute(impl_->stream, impl_->args);
    }
    impl_->stream.wait();
  });
}

#else  // !SIMDNORM_HAVE_ONEDNN

struct OneDnnPass::Impl {};

std::unique_ptr<OneDnnPass> OneDnnPass::Create(Op, size_t, size_t, size_t, bool,
                                               size_t, std::string* why) {
  if (why) *why = "oneDNN not found at configure time";
  return nullptr;
}

void OneDnnPass::Run(size_t) {}

#endif  // SIMDNORM_HAVE_ONEDNN

OneDnnPass::OneDnnPass(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
OneDnnPass::~OneDnnPass() = default;

}  // namespace simdnorm_peers
