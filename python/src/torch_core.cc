// simdnorm._torch_core: simdnorm.torch's common call in C++ over ATen, built
// where torch's C++ headers are (Debian 12: libtorch-dev). The same contract
// as simdnorm._core.torch_normalize, which reads the tensors through Python
// attribute getters (~20 of them, 40-50 ns each, plus torch.empty_like
// called from C: 1.5-2.3 us a call); here they are inline reads of the
// TensorImpl and the output comes from at::empty_like: the layer costs
// ~0.5 us over the library's call. Without this module simdnorm.torch uses
// _core's.
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#include <Python.h>
#include <c10/core/GradMode.h>
#include <torch/csrc/autograd/python_variable.h>

#include <atomic>
#include <exception>

#include "one_dimension.h"
#include "simdnorm/simdnorm.h"

namespace {

// The max_threads of the last call (tests check it follows torch's).
std::atomic<size_t> last_threads{0};

// A dense CPU tensor of a simdnorm dtype whose last dimension is cols (any
// cols when 0), contiguous; false for anything else (the Python path
// decides).
struct Dense {
  int dtype = -1;
  int64_t rows = 0, cols = 0, dims = 0;
  void* data = nullptr;
};

bool DenseOf(const at::Tensor& t, int64_t cols, Dense* out) {
  switch (t.scalar_type()) {
    case at::kFloat:
      out->dtype = SIMDNORM_F32;
      break;
    case at::kBFloat16:
      out->dtype = SIMDNORM_BF16;
      break;
    case at::kHalf:
      out->dtype = SIMDNORM_F16;
      break;
    default:
      return false;
  }
  if (!t.is_cpu() || t.layout() != at::kStrided || t.dim() == 0) return false;
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
// length and one dtype, nothing requiring grad while autograd is on): the
// Python path handles and explains the rest. Threads:
// torch.get_num_threads(). The GIL is released during the call.
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
    if (c10::GradMode::is_enabled() &&
        (x->requires_grad() || (weight && weight->requires_grad()) ||
         (bias && bias->requires_grad()))) {
      Py_RETURN_NONE;
    }
    Dense dx, dw, db;
    if (!DenseOf(*x, cols, &dx) || dx.rows == 0 ||
        (weight && (!DenseOf(*weight, cols, &dw) || dw.dims > 1)) ||
        (bias && (!DenseOf(*bias, cols, &db) || db.dims > 1)) ||
        (weight && bias && dw.dtype != db.dtype)) {
      Py_RETURN_NONE;
    }
    const int param_type = weight ? dw.dtype : (bias ? db.dtype : 0);
    at::Tensor y = at::empty_like(*x);  // contiguous: x is
    simdnorm_desc d{};
    d.kind = static_cast<simdnorm_kind>(kind);
    d.rows = static_cast<size_t>(dx.rows);
    d.cols = static_cast<size_t>(cols);
    d.x = dx.data;
    d.x_type = d.y_type = static_cast<simdnorm_dtype>(dx.dtype);
    d.y = y.data_ptr();
    d.gamma = dw.data;
    d.beta = db.data;
    d.param_type = static_cast<simdnorm_dtype>(param_type);
    d.eps = static_cast<float>(eps);
    d.gamma_offset = static_cast<float>(gamma_offset);
    d.flags = static_cast<unsigned>(flags);
    d.max_threads = static_cast<size_t>(at::get_num_threads());
    last_threads.store(d.max_threads, std::memory_order_relaxed);
    simdnorm_status s;
    Py_BEGIN_ALLOW_THREADS s = simdnorm_normalize(&d);
    Py_END_ALLOW_THREADS if (s != SIMDNORM_OK) return PyLong_FromLong(s);
    return THPVariable_Wrap(std::move(y));
  } catch (const std::exception&) {
    // A tensor whose metadata ATen will not hand out (a subclass, a
    // tensor without storage): the Python path.
    Py_RETURN_NONE;
  }
}

PyObject* LastThreads(PyObject*, PyObject*) {
  return PyLong_FromSize_t(last_threads.load(std::memory_order_relaxed));
}

PyMethodDef kMethods[] = {
    {"normalize",
     reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(Normalize)),
     METH_FASTCALL,
     "normalize(kind, x, normalized_shape, weight, bias, eps, gamma_offset, "
     "flags) -> y, a status, or None: simdnorm.torch's common call (dense "
     "CPU tensors), None for any other."},
    {"last_threads", LastThreads, METH_NOARGS,
     "max_threads of the last normalize call (for tests)."},
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
