// simdnorm._torch_core: simdnorm.torch's common call in C++ over ATen, built
// where torch's C++ headers are (Debian 12: libtorch-dev). The same contract
// as simdnorm._core.torch_normalize, which reads the tensors through Python
// attribute getters (~20 of them, 40-50 ns each, plus torch.empty_like
// called from C: 1.5-2.3 us a call); here they are inline reads of the
// TensorImpl and the output comes from the CPU allocator: the layer costs
// ~0.5 us over the library's call. Without this module simdnorm.torch uses
// _core's.
#include <ATen/EmptyTensor.h>
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <Python.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/python_variable.h>

#include <atomic>
#include <exception>
#include <vector>

#include "one_dimension.h"
#include "simdnorm/simdnorm.h"

namespace {

// The max_threads of the last call (tests check it follows torch's).
std::atomic<size_t> last_threads{0};
// RowNorm's backward calls, and those given the forward's saved statistics
// (tests check that the backward skips the statistics pass).
std::atomic<size_t> backward_calls{0}, backward_saved{0};

// A dense CPU tensor of a simdnorm dtype whose last dimension is cols (any
// cols when 0), contiguous; false for anything else (the Python path
// decides).
struct Dense {
  int dtype = -1;
  int64_t rows = 0, cols = 0, dims = 0;
  void* data = nullptr;
};

// The simdnorm dtype of a CPU strided tensor of float32, bfloat16 or
// float16; -1 for any other.
int DtypeOf(const at::Tensor& t) {
  if (!t.is_cpu() || t.layout() != at::kStrided) return -1;
  switch (t.scalar_type()) {
    case at::kFloat:
      return SIMDNORM_F32;
    case at::kBFloat16:
      return SIMDNORM_BF16;
    case at::kHalf:
      return SIMDNORM_F16;
    default:
      return -1;
  }
}

bool DenseOf(const at::Tensor& t, int64_t cols, Dense* out) {
  out->dtype = DtypeOf(t);
  if (out->dtype < 0) return false;
  if (t.dim() == 0) return false;
  const int64_t last = t.size(-1);
  if (last == 0 || (cols != 0 && last != cols) || !t.is_contiguous()) {
    return false;
  }
  out->data = t.data_ptr();
  out->cols = last;
  out->rows = t.numel() / last;
  out->dims = t.dim();
  return true;
}

// A library status other than SIMDNORM_OK from inside the autograd
// Function's forward: Normalize returns it as its int.
struct Refused {
  simdnorm_status status;
};

// One forward call on dense tensors (x's rows of cols, weight and bias
// vectors of one dtype or undefined): y, a new tensor like x; mean and
// rstd (rows floats) get the rows' statistics where defined. Throws
// Refused for a status other than SIMDNORM_OK (nothing written).
at::Tensor Forward(long kind, const at::Tensor& x, const Dense& dx,
                   const at::Tensor& weight, const at::Tensor& bias, double eps,
                   double gamma_offset, unsigned long flags,
                   const at::Tensor& mean, const at::Tensor& rstd) {
  // Contiguous, as x is; made by the CPU allocator directly, without the
  // dispatcher's hops of at::empty_like (~0.2 us of a call).
  at::Tensor y(at::detail::empty_cpu(x.sizes(), x.scalar_type()));
  simdnorm_desc d{};
  d.kind = static_cast<simdnorm_kind>(kind);
  d.rows = static_cast<size_t>(dx.rows);
  d.cols = static_cast<size_t>(dx.cols);
  d.x = dx.data;
  d.x_type = d.y_type = static_cast<simdnorm_dtype>(dx.dtype);
  d.y = y.data_ptr();
  const at::Tensor& p = weight.defined() ? weight : bias;
  if (p.defined()) d.param_type = static_cast<simdnorm_dtype>(DtypeOf(p));
  d.gamma = weight.defined() ? weight.data_ptr() : nullptr;
  d.beta = bias.defined() ? bias.data_ptr() : nullptr;
  d.eps = static_cast<float>(eps);
  d.gamma_offset = static_cast<float>(gamma_offset);
  d.flags = static_cast<unsigned>(flags);
  d.max_threads = static_cast<size_t>(at::get_num_threads());
  if (mean.defined()) d.mean_out = mean.data_ptr<float>();
  if (rstd.defined()) d.rstd_out = rstd.data_ptr<float>();
  last_threads.store(d.max_threads, std::memory_order_relaxed);
  simdnorm_status s;
  Py_BEGIN_ALLOW_THREADS s = simdnorm_normalize(&d);
  Py_END_ALLOW_THREADS if (s != SIMDNORM_OK) throw Refused{s};
  return y;
}

// The row kinds under autograd, all in C++ (the engine calls the backward
// without Python: at 64 rows of 896 a Python Function's bookkeeping cost
// as much as the kernel). The forward saves each row's mean and rstd (not
// L2's: simdnorm.h) so that the backward skips the statistics pass, as
// torch's native_layer_norm does. Same gradients as simdnorm.torch's
// Python Function (_Norm), which handles every other layout.
struct RowNorm : public torch::autograd::Function<RowNorm> {
  // weight and bias: optional, as undefined tensors are not inputs to
  // torch 1.13's custom Functions.
  static at::Tensor forward(torch::autograd::AutogradContext* ctx,
                            const at::Tensor& x,
                            const c10::optional<at::Tensor>& weight_in,
                            const c10::optional<at::Tensor>& bias_in,
                            int64_t kind, double eps, double gamma_offset,
                            int64_t flags) {
    const at::Tensor weight = weight_in.value_or(at::Tensor());
    const at::Tensor bias = bias_in.value_or(at::Tensor());
    Dense dx;
    DenseOf(x, 0, &dx);
    at::Tensor mean, rstd;
    if (kind != SIMDNORM_L2NORM) {
      mean = at::detail::empty_cpu({dx.rows}, at::kFloat);
      rstd = at::detail::empty_cpu({dx.rows}, at::kFloat);
    }
    at::Tensor y = Forward(kind, x, dx, weight, bias, eps, gamma_offset,
                           static_cast<unsigned long>(flags), mean, rstd);
    ctx->save_for_backward({x, weight, mean, rstd});
    ctx->saved_data["kind"] = kind;
    ctx->saved_data["eps"] = eps;
    ctx->saved_data["gamma_offset"] = gamma_offset;
    if (bias.defined()) {
      ctx->saved_data["bias_dtype"] = static_cast<int64_t>(bias.scalar_type());
    }
    return y;
  }

  static torch::autograd::variable_list backward(
      torch::autograd::AutogradContext* ctx,
      torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& x = saved[0];
    const at::Tensor& weight = saved[1];
    const at::Tensor& mean = saved[2];
    const at::Tensor& rstd = saved[3];
    const at::Tensor dy = grads[0].contiguous();
    Dense dx_in, ddy;
    DenseOf(x, 0, &dx_in);
    TORCH_CHECK(DenseOf(dy, dx_in.cols, &ddy) && dy.numel() == x.numel(),
                "simdnorm.torch (backward): the gradient of y is not a "
                "tensor of y's shape");
    at::Tensor dx(at::detail::empty_cpu(x.sizes(), x.scalar_type()));
    const bool want_w = weight.defined() && ctx->needs_input_grad(1);
    const bool want_b =
        ctx->saved_data.count("bias_dtype") != 0 && ctx->needs_input_grad(2);
    at::Tensor dgamma, dbeta;
    if (want_w) dgamma = at::detail::empty_cpu({dx_in.cols}, at::kFloat);
    if (want_b) dbeta = at::detail::empty_cpu({dx_in.cols}, at::kFloat);
    simdnorm_backward_desc d{};
    d.kind = static_cast<simdnorm_kind>(ctx->saved_data["kind"].toInt());
    d.rows = static_cast<size_t>(dx_in.rows);
    d.cols = static_cast<size_t>(dx_in.cols);
    d.x = dx_in.data;
    d.x_type = static_cast<simdnorm_dtype>(dx_in.dtype);
    d.dy = ddy.data;
    d.dy_type = static_cast<simdnorm_dtype>(ddy.dtype);
    d.dx = dx.data_ptr();
    d.dx_type = d.x_type;
    if (weight.defined()) {
      d.gamma = weight.data_ptr();
      d.param_type = static_cast<simdnorm_dtype>(DtypeOf(weight));
    }
    d.gamma_offset =
        static_cast<float>(ctx->saved_data["gamma_offset"].toDouble());
    d.eps = static_cast<float>(ctx->saved_data["eps"].toDouble());
    if (want_w) d.dgamma = dgamma.data_ptr<float>();
    if (want_b) d.dbeta = dbeta.data_ptr<float>();
    d.max_threads = static_cast<size_t>(at::get_num_threads());
    if (mean.defined()) {
      d.mean = mean.data_ptr<float>();
      d.rstd = rstd.data_ptr<float>();
    }
    backward_calls.fetch_add(1, std::memory_order_relaxed);
    if (d.rstd) backward_saved.fetch_add(1, std::memory_order_relaxed);
    const simdnorm_status s = simdnorm_backward(&d);
    TORCH_CHECK(s == SIMDNORM_OK,
                "simdnorm.torch (backward): ", simdnorm_status_string(s));
    if (want_w && weight.scalar_type() != at::kFloat) {
      dgamma = dgamma.to(weight.scalar_type());
    }
    if (want_b) {
      const auto bias_dtype =
          static_cast<at::ScalarType>(ctx->saved_data["bias_dtype"].toInt());
      if (bias_dtype != at::kFloat) dbeta = dbeta.to(bias_dtype);
    }
    return {ctx->needs_input_grad(0) ? dx : at::Tensor(),
            dgamma,
            dbeta,
            at::Tensor(),
            at::Tensor(),
            at::Tensor(),
            at::Tensor()};
  }
};

// A tensor argument (None: an undefined one); false for anything else.
bool TensorArg(PyObject* o, const at::Tensor** t) {
  if (o == Py_None) return true;
  if (!THPVariable_Check(o)) return false;
  *t = &THPVariable_Unpack(o);
  return true;
}

// normalize(kind, x, normalized_shape, weight, bias, eps, gamma_offset,
// flags) -> y, a new tensor of x's shape and dtype; an int status when the
// library refused the call (nothing written); None when the call is not the
// common one (normalized_shape one dimension, x a dense CPU tensor of a
// simdnorm dtype ending in it, weight and bias None or dense vectors of that
// length and one dtype): the Python path handles and explains the rest.
// Where autograd is on and a tensor requires grad, y comes from RowNorm
// (its backward is simdnorm_backward). Threads: torch.get_num_threads().
// The GIL is released during the library's forward call.
PyObject* Normalize(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 8) {
    PyErr_SetString(PyExc_TypeError, "normalize takes 8 arguments");
    return nullptr;
  }
  const long kind = PyLong_AsLong(args[0]);
  const double eps = PyFloat_AsDouble(args[5]);
  const double gamma_offset = PyFloat_AsDouble(args[6]);
  const unsigned long flags = PyLong_AsUnsignedLong(args[7]);
  const int64_t cols = static_cast<int64_t>(OneDimension(args[2]));
  if (PyErr_Occurred()) {
    PyErr_Clear();
    Py_RETURN_NONE;
  }
  const at::Tensor* x = nullptr;
  const at::Tensor* weight = nullptr;
  const at::Tensor* bias = nullptr;
  if (cols == 0 || args[1] == Py_None || !TensorArg(args[1], &x) ||
      !TensorArg(args[3], &weight) || !TensorArg(args[4], &bias)) {
    Py_RETURN_NONE;
  }
  try {
    Dense dx, dw, db;
    if (!DenseOf(*x, cols, &dx) || dx.rows == 0 ||
        (weight && (!DenseOf(*weight, cols, &dw) || dw.dims > 1)) ||
        (bias && (!DenseOf(*bias, cols, &db) || db.dims > 1)) ||
        (weight && bias && dw.dtype != db.dtype)) {
      Py_RETURN_NONE;
    }
    const at::Tensor none;
    const at::Tensor& w = weight ? *weight : none;
    const at::Tensor& b = bias ? *bias : none;
    if (c10::GradMode::is_enabled() &&
        (x->requires_grad() || (weight && weight->requires_grad()) ||
         (bias && bias->requires_grad()))) {
      return THPVariable_Wrap(RowNorm::apply(
          *x, weight ? c10::optional<at::Tensor>(*weight) : c10::nullopt,
          bias ? c10::optional<at::Tensor>(*bias) : c10::nullopt, kind, eps,
          gamma_offset, flags));
    }
    return THPVariable_Wrap(
        Forward(kind, *x, dx, w, b, eps, gamma_offset, flags, none, none));
  } catch (const Refused& r) {
    return PyLong_FromLong(r.status);
  } catch (const std::exception&) {
    // A tensor whose metadata ATen will not hand out (a subclass, a
    // tensor without storage): the Python path.
    Py_RETURN_NONE;
  }
}

// x (N, C, *spatial) as simdnorm_group_norm reads it in place: NCHW when
// contiguous, NHWC when channels last (C innermost, then the spatial
// dimensions, then N; size-1 dimensions with any stride, as
// simdnorm.torch._channels_last decides); false for any other layout.
bool GroupLayoutOf(const at::Tensor& x, simdnorm_layout* layout) {
  if (x.is_contiguous()) {
    *layout = SIMDNORM_NCHW;
    return true;
  }
  const auto sizes = x.sizes();
  const auto strides = x.strides();
  const int64_t dims = x.dim();
  if (dims <= 2 || (sizes[1] > 1 && strides[1] != 1)) return false;
  int64_t expected = sizes[1];
  for (int64_t i = dims - 1; i > 1; --i) {
    if (sizes[i] != 1 && strides[i] != expected) return false;
    expected *= sizes[i];
  }
  if (sizes[0] != 1 && strides[0] != expected) return false;
  *layout = SIMDNORM_NHWC;
  return true;
}

// group_norm(x, num_groups, weight, bias, eps, flags) -> y, a new tensor of
// x's shape, dtype and memory format; an int status when the library
// refused the call (nothing written); None when the call is not the common
// one (x a CPU tensor of a simdnorm dtype, at least (N, C), contiguous or
// channels last; num_groups an int; weight and bias None or dense vectors
// of one dtype; nothing requiring grad while autograd is on): the Python
// path handles and explains the rest. Threads: torch.get_num_threads().
PyObject* GroupNorm(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 6) {
    PyErr_SetString(PyExc_TypeError, "group_norm takes 6 arguments");
    return nullptr;
  }
  const at::Tensor* x = nullptr;
  const at::Tensor* weight = nullptr;
  const at::Tensor* bias = nullptr;
  if (args[0] == Py_None || !TensorArg(args[0], &x) ||
      !PyLong_CheckExact(args[1]) || !TensorArg(args[2], &weight) ||
      !TensorArg(args[3], &bias)) {
    Py_RETURN_NONE;
  }
  const long groups = PyLong_AsLong(args[1]);
  const double eps = PyFloat_AsDouble(args[4]);
  const unsigned long flags = PyLong_AsUnsignedLong(args[5]);
  if (PyErr_Occurred()) {
    PyErr_Clear();
    Py_RETURN_NONE;
  }
  try {
    if (c10::GradMode::is_enabled() &&
        (x->requires_grad() || (weight && weight->requires_grad()) ||
         (bias && bias->requires_grad()))) {
      Py_RETURN_NONE;
    }
    Dense dw, db;
    simdnorm_layout layout;
    const int x_type = DtypeOf(*x);
    if (x_type < 0 || x->dim() < 2 || groups < 1 || x->size(1) % groups != 0 ||
        x->numel() == 0) {
      Py_RETURN_NONE;
    }
    const int64_t n = x->size(0), c = x->size(1);
    if (!GroupLayoutOf(*x, &layout) ||
        (weight && (!DenseOf(*weight, c, &dw) || dw.dims != 1)) ||
        (bias && (!DenseOf(*bias, c, &db) || db.dims != 1)) ||
        (weight && bias && dw.dtype != db.dtype)) {
      Py_RETURN_NONE;
    }
    at::Tensor y;
    if (layout == SIMDNORM_NCHW) {
      y = at::detail::empty_cpu(x->sizes(), x->scalar_type());
    } else {  // (N, *spatial, C) dense, seen as (N, C, *spatial)
      std::vector<int64_t> shape(x->sizes().begin(), x->sizes().end());
      shape.erase(shape.begin() + 1);
      shape.push_back(c);
      y = at::Tensor(at::detail::empty_cpu(shape, x->scalar_type()))
              .movedim(-1, 1);
    }
    simdnorm_group_desc d{};
    d.n = static_cast<size_t>(n);
    d.c = static_cast<size_t>(c);
    d.hw = static_cast<size_t>(x->numel() / (n * c));
    d.groups = static_cast<size_t>(groups);
    d.layout = layout;
    d.x = x->data_ptr();
    d.x_type = d.y_type = static_cast<simdnorm_dtype>(x_type);
    d.y = y.data_ptr();
    d.gamma = weight ? dw.data : nullptr;
    d.beta = bias ? db.data : nullptr;
    d.param_type =
        static_cast<simdnorm_dtype>(weight ? dw.dtype : (bias ? db.dtype : 0));
    d.eps = static_cast<float>(eps);
    d.flags = static_cast<unsigned>(flags);
    d.max_threads = static_cast<size_t>(at::get_num_threads());
    last_threads.store(d.max_threads, std::memory_order_relaxed);
    simdnorm_status s;
    Py_BEGIN_ALLOW_THREADS s = simdnorm_group_norm(&d);
    Py_END_ALLOW_THREADS if (s != SIMDNORM_OK) return PyLong_FromLong(s);
    return THPVariable_Wrap(std::move(y));
  } catch (const std::exception&) {
    Py_RETURN_NONE;
  }
}

PyObject* LastThreads(PyObject*, PyObject*) {
  return PyLong_FromSize_t(last_threads.load(std::memory_order_relaxed));
}

PyObject* BackwardCalls(PyObject*, PyObject*) {
  return Py_BuildValue("(nn)", static_cast<Py_ssize_t>(backward_calls.load()),
                       static_cast<Py_ssize_t>(backward_saved.load()));
}

PyMethodDef kMethods[] = {
    {"normalize",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(Normalize)),
     METH_FASTCALL,
     "normalize(kind, x, normalized_shape, weight, bias, eps, gamma_offset, "
     "flags) -> y, a status, or None: simdnorm.torch's common call (dense "
     "CPU tensors), None for any other."},
    {"group_norm",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(GroupNorm)),
     METH_FASTCALL,
     "group_norm(x, num_groups, weight, bias, eps, flags) -> y, a status, "
     "or None: simdnorm.torch.group_norm's common call (NCHW or NHWC "
     "without a copy), None for any other."},
    {"last_threads", LastThreads, METH_NOARGS,
     "max_threads of the last normalize call (for tests)."},
    {"backward_calls", BackwardCalls, METH_NOARGS,
     "(backward calls under autograd, those of them given the forward's "
     "saved statistics) (for tests)."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef kModule = {PyModuleDef_HEAD_INIT,
                       "_torch_core",
                       "simdnorm.torch's common call over ATen.",
                       -1,
                       kMethods,
                       nullptr,
                       nullptr,
                       nullptr,
                       nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__torch_core() { return PyModule_Create(&kModule); }
