// simdnorm._core: the compiled core of the Python package, over the public C
// API only. Descriptors come in as plain integers (addresses, sizes, dtype
// codes) that the pure-Python layer (simdnorm/_rows.py) takes from NumPy
// arrays and torch tensors and has checked against their buffers; statuses go
// back as integers, which that layer turns into TypeError or ValueError with
// simdnorm_status_string's words. The GIL is released around every call that
// computes. Everything else (dtype and layout rules, threads, modules) is
// Python, so that it reads like torch.nn.functional.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "one_dimension.h"
#include "simdnorm/simdnorm.h"
#include "simdnorm/simdnorm.hpp"

namespace py = pybind11;

namespace {

// Addresses cross from Python as integers; 0 is NULL.
template <class T>
T* Ptr(uintptr_t address) {
  return reinterpret_cast<T*>(address);
}

// The i-th dtype packed in `types` (x | y << 4 | param << 8; the batch
// backward's x | dy << 4 | dx << 8 | param << 12).
simdnorm_dtype TypeAt(unsigned types, int i) {
  return static_cast<simdnorm_dtype>((types >> (4 * i)) & 0xFu);
}

// The descriptor of one call. `types` packs the three dtypes (x | y << 4 |
// param << 8) so that the hot call takes fewer arguments: pybind11 converts
// each one separately, and the torch layer's budget per call is about 1 us.
simdnorm_desc Desc(int kind, size_t rows, size_t cols, uintptr_t x,
                   size_t x_stride, uintptr_t y, size_t y_stride,
                   uintptr_t gamma, uintptr_t beta, unsigned types, float eps,
                   float gamma_offset, unsigned flags, size_t max_threads,
                   uintptr_t residual, size_t residual_stride,
                   uintptr_t sum_out, size_t sum_out_stride) {
  simdnorm_desc d{};
  d.kind = static_cast<simdnorm_kind>(kind);
  d.rows = rows;
  d.cols = cols;
  d.x = Ptr<const void>(x);
  d.x_type = static_cast<simdnorm_dtype>(types & 0xFu);
  d.x_stride = x_stride;
  d.y = Ptr<void>(y);
  d.y_type = static_cast<simdnorm_dtype>((types >> 4) & 0xFu);
  d.y_stride = y_stride;
  d.gamma = Ptr<const void>(gamma);
  d.beta = Ptr<const void>(beta);
  d.param_type = static_cast<simdnorm_dtype>((types >> 8) & 0xFu);
  d.eps = eps;
  d.max_threads = max_threads;
  d.residual = Ptr<const void>(residual);
  d.residual_stride = residual_stride;
  d.sum_out = Ptr<void>(sum_out);
  d.sum_out_stride = sum_out_stride;
  d.gamma_offset = gamma_offset;
  d.flags = flags;
  return d;
}

// One bit per dtype (simdnorm_op_info's masks) as the dtypes' codes.
std::vector<int> DTypes(unsigned mask) {
  std::vector<int> codes;
  for (int t = 0; t < 32; ++t) {
    if (mask & (1u << t)) codes.push_back(t);
  }
  return codes;
}

// normalize(...) as plain CPython (METH_FASTCALL), not through pybind11's
// dispatcher: the torch layer calls it once per norm, and converting 14
// arguments one by one through pybind11 cost about 0.35 us here, a third of
// that layer's budget per call. Negative integers raise OverflowError.
PyObject* FastNormalize(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  constexpr Py_ssize_t kArgs = 14, kFusedArgs = 18, kSavingArgs = 20;
  if (nargs != kArgs && nargs != kFusedArgs && nargs != kSavingArgs) {
    PyErr_Format(PyExc_TypeError,
                 "normalize takes %zd, %zd or %zd arguments (%zd given)", kArgs,
                 kFusedArgs, kSavingArgs, nargs);
    return nullptr;
  }
  size_t v[kSavingArgs] = {};
  double eps = 0, gamma_offset = 0;
  for (Py_ssize_t i = 0; i < nargs; ++i) {
    if (i == 10 || i == 11) {
      (i == 10 ? eps : gamma_offset) = PyFloat_AsDouble(args[i]);
    } else {
      v[i] = PyLong_AsSize_t(args[i]);
    }
    if (PyErr_Occurred()) return nullptr;
  }
  simdnorm_desc d =
      Desc(static_cast<int>(v[0]), v[1], v[2], v[3], v[4], v[5], v[6], v[7],
           v[8], static_cast<unsigned>(v[9]), static_cast<float>(eps),
           static_cast<float>(gamma_offset), static_cast<unsigned>(v[12]),
           v[13], v[14], v[15], v[16], v[17]);
  d.mean_out = Ptr<float>(v[18]);
  d.rstd_out = Ptr<float>(v[19]);
  PyThreadState* unlocked = PyEval_SaveThread();  // the GIL released
  const simdnorm_status s = simdnorm_normalize(&d);
  PyEval_RestoreThread(unlocked);
  return PyLong_FromLong(s);
}

// address(obj): the first byte of obj's buffer (NumPy arrays: element 0,
// whatever the strides), through the buffer protocol.
PyObject* Address(PyObject*, PyObject* obj) {
  Py_buffer view;
  if (PyObject_GetBuffer(obj, &view, PyBUF_RECORDS_RO) != 0) return nullptr;
  PyObject* address = PyLong_FromVoidPtr(view.buf);
  PyBuffer_Release(&view);
  return address;
}

// The torch layer's common call, with the tensors' attributes read here:
// in Python each attribute costs an interpreted step, and the ~20 of one
// call were half its time at one row. torch_setup() hands over the objects
// compared against (torch's dtypes, torch.strided) and torch.empty_like.
struct Torch {
  PyObject* dtypes[3] = {};  // indexed by simdnorm_dtype: F32, BF16, F16
  PyObject* strided = nullptr;
  PyObject* empty_like = nullptr;
  PyObject* is_grad_enabled = nullptr;
  PyObject* get_num_threads = nullptr;
  // Interned attribute and method names.
  PyObject *dtype, *is_cpu, *layout, *shape, *is_contiguous, *data_ptr,
      *requires_grad;
} torch_objects;

// max_threads of the last torch_normalize call, for the tests (threads
// follow torch.get_num_threads(); the results are the same bits anyway).
std::atomic<size_t> last_torch_threads{0};

// A new reference, or nullptr with the error cleared.
PyObject* Attr(PyObject* o, PyObject* name) {
  PyObject* v = PyObject_GetAttr(o, name);
  if (v == nullptr) PyErr_Clear();
  return v;
}
PyObject* Method(PyObject* o, PyObject* name) {
  PyObject* v = PyObject_CallMethodNoArgs(o, name);  // no bound method made
  if (v == nullptr) PyErr_Clear();
  return v;
}

// A dense strided CPU tensor of a simdnorm dtype and `cols` elements in its
// last dimension (any, when cols is 0: then set to it), with its row count;
// false for anything else (the Python path then decides, and explains).
struct Dense {
  int dtype = -1;
  size_t rows = 0, cols = 0, dims = 0;
  uintptr_t data = 0;
};
bool DenseTensor(PyObject* t, size_t cols, Dense* out) {
  const Torch& T = torch_objects;
  py::object dtype = py::reinterpret_steal<py::object>(Attr(t, T.dtype));
  if (!dtype) return false;
  for (int i = 0; i < 3; ++i) {
    if (dtype.ptr() == T.dtypes[i]) out->dtype = i;
  }
  if (out->dtype < 0) return false;
  py::object cpu = py::reinterpret_steal<py::object>(Attr(t, T.is_cpu));
  py::object layout = py::reinterpret_steal<py::object>(Attr(t, T.layout));
  if (cpu.ptr() != Py_True || layout.ptr() != T.strided) return false;
  py::object shape = py::reinterpret_steal<py::object>(Attr(t, T.shape));
  if (!shape || !PyTuple_Check(shape.ptr())) return false;
  const Py_ssize_t dims = PyTuple_GET_SIZE(shape.ptr());
  if (dims == 0) return false;
  size_t numel = 1;
  for (Py_ssize_t i = 0; i < dims; ++i) {
    const size_t n = PyLong_AsSize_t(PyTuple_GET_ITEM(shape.ptr(), i));
    if (n == static_cast<size_t>(-1) && PyErr_Occurred()) {
      PyErr_Clear();
      return false;
    }
    numel *= n;
  }
  const size_t last = PyLong_AsSize_t(PyTuple_GET_ITEM(shape.ptr(), dims - 1));
  if (last == 0 || (cols != 0 && last != cols)) return false;
  py::object contiguous =
      py::reinterpret_steal<py::object>(Method(t, T.is_contiguous));
  if (contiguous.ptr() != Py_True) return false;
  py::object data = py::reinterpret_steal<py::object>(Method(t, T.data_ptr));
  if (!data) return false;
  out->data = PyLong_AsSize_t(data.ptr());
  if (PyErr_Occurred()) {
    PyErr_Clear();
    return false;
  }
  out->cols = last;
  out->rows = numel / last;
  out->dims = static_cast<size_t>(dims);
  return true;
}

// True when autograd is on and any of the tensors (or None) requires grad.
bool NeedsGrad(PyObject* const* tensors, int count) {
  const Torch& T = torch_objects;
  py::object on =
      py::reinterpret_steal<py::object>(PyObject_CallNoArgs(T.is_grad_enabled));
  if (on.ptr() != Py_True) {
    PyErr_Clear();
    return on.ptr() != Py_False;  // an error: let the Python path decide
  }
  for (int i = 0; i < count; ++i) {
    if (tensors[i] == Py_None) continue;
    py::object r =
        py::reinterpret_steal<py::object>(Attr(tensors[i], T.requires_grad));
    if (r.ptr() != Py_False) return true;
  }
  return false;
}

// torch_normalize(kind, x, normalized_shape, weight, bias, eps,
// gamma_offset, flags) -> y (a new tensor, torch.empty_like(x)), an int
// status when the library refused the call (nothing written), or None when
// the call is not the common one: normalized_shape one dimension, x a dense
// CPU tensor of a simdnorm dtype ending in it, weight and bias None or dense
// vectors of that length and one dtype, nothing requiring grad while
// autograd is on. The Python path handles (and explains) everything else.
// Threads: torch.get_num_threads().
PyObject* TorchNormalize(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  const Torch& T = torch_objects;
  if (nargs != 8 || T.empty_like == nullptr) {
    PyErr_SetString(PyExc_TypeError,
                    "torch_normalize takes 8 arguments, after torch_setup");
    return nullptr;
  }
  const long kind = PyLong_AsLong(args[0]);
  const double eps = PyFloat_AsDouble(args[5]);
  const double gamma_offset = PyFloat_AsDouble(args[6]);
  const size_t flags = PyLong_AsSize_t(args[7]);
  if (PyErr_Occurred()) {
    PyErr_Clear();
    Py_RETURN_NONE;
  }
  const size_t cols = OneDimension(args[2]);
  if (cols == 0 || NeedsGrad(args + 3, 2) || NeedsGrad(args + 1, 1)) {
    Py_RETURN_NONE;
  }
  py::object threads =
      py::reinterpret_steal<py::object>(PyObject_CallNoArgs(T.get_num_threads));
  const size_t max_threads = threads ? PyLong_AsSize_t(threads.ptr()) : 0;
  if (PyErr_Occurred()) return nullptr;
  last_torch_threads.store(max_threads, std::memory_order_relaxed);
  Dense x, w, b;
  if (!DenseTensor(args[1], cols, &x) || x.rows == 0 ||
      (args[3] != Py_None && !DenseTensor(args[3], cols, &w)) ||
      (args[4] != Py_None && !DenseTensor(args[4], cols, &b)) || w.dims > 1 ||
      b.dims > 1 || (w.dtype >= 0 && b.dtype >= 0 && w.dtype != b.dtype)) {
    Py_RETURN_NONE;
  }
  const int param_type = w.dtype >= 0 ? w.dtype : (b.dtype >= 0 ? b.dtype : 0);
  // A contiguous tensor of x's shape and dtype (x is contiguous).
  PyObject* y = PyObject_CallOneArg(torch_objects.empty_like, args[1]);
  if (y == nullptr) return nullptr;
  PyObject* y_data = Method(y, torch_objects.data_ptr);
  const uintptr_t y_ptr = y_data ? PyLong_AsSize_t(y_data) : 0;
  Py_XDECREF(y_data);
  if (y_ptr == 0 || PyErr_Occurred()) {
    Py_DECREF(y);
    return nullptr;
  }
  const unsigned types =
      static_cast<unsigned>(x.dtype | x.dtype << 4 | param_type << 8);
  const simdnorm_desc d = Desc(
      static_cast<int>(kind), x.rows, cols, x.data, cols, y_ptr, cols, w.data,
      b.data, types, static_cast<float>(eps), static_cast<float>(gamma_offset),
      static_cast<unsigned>(flags), max_threads, 0, 0, 0, 0);
  PyThreadState* unlocked = PyEval_SaveThread();  // the GIL released
  const simdnorm_status s = simdnorm_normalize(&d);
  PyEval_RestoreThread(unlocked);
  if (s != SIMDNORM_OK) {
    Py_DECREF(y);
    return PyLong_FromLong(s);
  }
  return y;
}

// Adds a plain CPython function to the module.
void AddFunction(py::module_& m, PyMethodDef* def) {
  m.add_object(def->ml_name, py::reinterpret_steal<py::object>(
                                 PyCFunction_NewEx(def, nullptr, nullptr)));
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() =
      "The compiled core of simdnorm: the C API over integer descriptors. "
      "Use the functions of the simdnorm package, which check arrays and "
      "tensors before they reach this module.";

  m.attr("F32") = int{SIMDNORM_F32};
  m.attr("BF16") = int{SIMDNORM_BF16};
  m.attr("F16") = int{SIMDNORM_F16};
  m.attr("I8") = int{SIMDNORM_I8};
  m.attr("LAYERNORM") = int{SIMDNORM_LAYERNORM};
  m.attr("RMSNORM") = int{SIMDNORM_RMSNORM};
  m.attr("L2NORM") = int{SIMDNORM_L2NORM};
  m.attr("GROUPNORM") = int{SIMDNORM_GROUPNORM};
  m.attr("NCHW") = int{SIMDNORM_NCHW};
  m.attr("NHWC") = int{SIMDNORM_NHWC};
  m.attr("ROUND_NORMALIZED") = int{SIMDNORM_ROUND_NORMALIZED};
  m.attr("Y_STREAM") = int{SIMDNORM_Y_STREAM};
  m.attr("Y_CACHED") = int{SIMDNORM_Y_CACHED};
  m.attr("FAST_ROUNDING") = int{SIMDNORM_FAST_ROUNDING};
  m.attr("OK") = int{SIMDNORM_OK};
  m.attr("INVALID_ARGUMENT") = int{SIMDNORM_INVALID_ARGUMENT};
  m.attr("INVALID_SHAPE") = int{SIMDNORM_INVALID_SHAPE};
  m.attr("OVERLAP") = int{SIMDNORM_OVERLAP};
  m.attr("UNSUPPORTED") = int{SIMDNORM_UNSUPPORTED};

  // The hot call, added as a plain CPython function (FastNormalize).
  static PyMethodDef normalize_def = {
      "normalize",
      reinterpret_cast<PyCFunction>(
          reinterpret_cast<void (*)(void)>(FastNormalize)),
      METH_FASTCALL,
      "normalize(kind, rows, cols, x, x_stride, y, y_stride, gamma, beta, "
      "types, eps, gamma_offset, flags, max_threads[, residual, "
      "residual_stride, sum_out, sum_out_stride[, mean_out, rstd_out]]) -> "
      "status: simdnorm_normalize on one descriptor (addresses as integers, "
      "0 = NULL; types = x | y << 4 | param << 8), the GIL released."};
  AddFunction(m, &normalize_def);
  static PyMethodDef torch_def = {
      "torch_normalize",
      reinterpret_cast<PyCFunction>(
          reinterpret_cast<void (*)(void)>(TorchNormalize)),
      METH_FASTCALL,
      "torch_normalize(kind, x, normalized_shape, weight, bias, eps, "
      "gamma_offset, flags) -> y, a status, or None: the torch layer's "
      "common call (dense CPU tensors), None for any other."};
  AddFunction(m, &torch_def);
  m.def(
      "torch_setup",
      [](py::object empty_like, py::object is_grad_enabled,
         py::object get_num_threads, py::object f32, py::object bf16,
         py::object f16, py::object strided) {
        Torch& T = torch_objects;
        // Kept for the process's life, as torch's own module is.
        T.empty_like = empty_like.release().ptr();
        T.is_grad_enabled = is_grad_enabled.release().ptr();
        T.get_num_threads = get_num_threads.release().ptr();
        T.dtypes[SIMDNORM_F32] = f32.release().ptr();
        T.dtypes[SIMDNORM_BF16] = bf16.release().ptr();
        T.dtypes[SIMDNORM_F16] = f16.release().ptr();
        T.strided = strided.release().ptr();
        T.dtype = PyUnicode_InternFromString("dtype");
        T.is_cpu = PyUnicode_InternFromString("is_cpu");
        T.layout = PyUnicode_InternFromString("layout");
        T.shape = PyUnicode_InternFromString("shape");
        T.is_contiguous = PyUnicode_InternFromString("is_contiguous");
        T.data_ptr = PyUnicode_InternFromString("data_ptr");
        T.requires_grad = PyUnicode_InternFromString("requires_grad");
      },
      "Hands torch.empty_like, torch.is_grad_enabled, "
      "torch.get_num_threads, torch.float32, torch.bfloat16, torch.float16 "
      "and torch.strided to torch_normalize.");
  m.def(
      "last_torch_threads",
      [] { return last_torch_threads.load(std::memory_order_relaxed); },
      "max_threads of the last torch_normalize call (for the tests).");
  static PyMethodDef address_def = {
      "address",
      reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(Address)),
      METH_O,
      "address(obj) -> int: where the buffer of obj (e.g. a NumPy array) "
      "starts."};
  AddFunction(m, &address_def);

  m.def(
      "reference_f64",
      [](int kind, size_t rows, size_t cols, uintptr_t x, size_t x_stride,
         uintptr_t gamma, uintptr_t beta, unsigned types, float eps,
         float gamma_offset, unsigned flags, uintptr_t residual,
         size_t residual_stride, uintptr_t out, uintptr_t xhat) {
        // The float64 path writes only out and xhat, but validates the whole
        // descriptor: y is out (fresh doubles, disjoint from every input).
        const simdnorm_desc d =
            Desc(kind, rows, cols, x, x_stride, out, 0, gamma, beta, types, eps,
                 gamma_offset, flags, 1, residual, residual_stride, 0, 0);
        py::gil_scoped_release unlocked;
        return static_cast<int>(
            simdnorm::reference_f64(d, Ptr<double>(out), Ptr<double>(xhat)));
      },
      "The float64 truth of a descriptor, unrounded, into rows * cols dense "
      "doubles (out, and xhat unless 0); returns the status.");

  m.def(
      "backward",
      [](int kind, size_t rows, size_t cols, uintptr_t x, uintptr_t dy,
         uintptr_t dx, unsigned types, uintptr_t gamma, float gamma_offset,
         float eps, uintptr_t dgamma, uintptr_t dbeta, size_t max_threads,
         uintptr_t mean, uintptr_t rstd) {
        simdnorm_backward_desc d{};
        d.kind = static_cast<simdnorm_kind>(kind);
        d.rows = rows;
        d.cols = cols;
        d.x = Ptr<const void>(x);
        d.x_type = static_cast<simdnorm_dtype>(types & 0xFu);
        d.dy = Ptr<const void>(dy);
        d.dy_type = static_cast<simdnorm_dtype>((types >> 4) & 0xFu);
        d.dx = Ptr<void>(dx);
        d.dx_type = static_cast<simdnorm_dtype>((types >> 8) & 0xFu);
        d.gamma = Ptr<const void>(gamma);
        d.param_type = static_cast<simdnorm_dtype>((types >> 12) & 0xFu);
        d.gamma_offset = gamma_offset;
        d.eps = eps;
        d.dgamma = Ptr<float>(dgamma);
        d.dbeta = Ptr<float>(dbeta);
        d.max_threads = max_threads;
        d.mean = Ptr<const float>(mean);
        d.rstd = Ptr<const float>(rstd);
        py::gil_scoped_release unlocked;
        return static_cast<int>(simdnorm_backward(&d));
      },
      "simdnorm_backward over dense rows (types: x | dy << 4 | dx << 8 | "
      "param << 12; mean, rstd: the forward's saved statistics or 0); "
      "returns the status.");

  m.def(
      "group_norm",
      [](size_t n, size_t c, size_t hw, size_t groups, int layout, uintptr_t x,
         uintptr_t y, unsigned types, uintptr_t gamma, uintptr_t beta,
         float eps, unsigned flags, size_t max_threads, uintptr_t mean_out,
         uintptr_t rstd_out) {
        // In the field order of simdnorm_group_desc (which only grows at
        // its end).
        const simdnorm_group_desc d{n,
                                    c,
                                    hw,
                                    groups,
                                    static_cast<simdnorm_layout>(layout),
                                    Ptr<const void>(x),
                                    TypeAt(types, 0),
                                    Ptr<void>(y),
                                    TypeAt(types, 1),
                                    Ptr<const void>(gamma),
                                    Ptr<const void>(beta),
                                    TypeAt(types, 2),
                                    eps,
                                    max_threads,
                                    flags,
                                    Ptr<float>(mean_out),
                                    Ptr<float>(rstd_out)};
        py::gil_scoped_release unlocked;
        return static_cast<int>(simdnorm_group_norm(&d));
      },
      py::arg("n"), py::arg("c"), py::arg("hw"), py::arg("groups"),
      py::arg("layout"), py::arg("x"), py::arg("y"), py::arg("types"),
      py::arg("gamma"), py::arg("beta"), py::arg("eps"), py::arg("flags"),
      py::arg("max_threads"), py::arg("mean_out") = 0, py::arg("rstd_out") = 0,
      "simdnorm_group_norm on one descriptor (n, c, hw, groups, layout, x, "
      "y, types = x | y << 4 | param << 8, gamma, beta, eps, flags, "
      "max_threads[, mean_out, rstd_out: n * groups float32 each, the saved "
      "statistics]; addresses as integers, 0 = NULL); returns the status.");

  m.def(
      "group_norm_backward",
      [](size_t n, size_t c, size_t hw, size_t groups, int layout, uintptr_t x,
         uintptr_t dy, uintptr_t dx, unsigned types, uintptr_t gamma, float eps,
         uintptr_t dgamma, uintptr_t dbeta, size_t max_threads, uintptr_t mean,
         uintptr_t rstd) {
        // In the field order of simdnorm_group_backward_desc (which only
        // grows at its end).
        const simdnorm_group_backward_desc d{
            n,
            c,
            hw,
            groups,
            static_cast<simdnorm_layout>(layout),
            Ptr<const void>(x),
            TypeAt(types, 0),
            Ptr<const void>(dy),
            TypeAt(types, 1),
            Ptr<void>(dx),
            TypeAt(types, 2),
            Ptr<const void>(gamma),
            TypeAt(types, 3),
            eps,
            Ptr<float>(dgamma),
            Ptr<float>(dbeta),
            max_threads,
            0u,
            Ptr<const float>(mean),
            Ptr<const float>(rstd)};
        py::gil_scoped_release unlocked;
        return static_cast<int>(simdnorm_group_norm_backward(&d));
      },
      py::arg("n"), py::arg("c"), py::arg("hw"), py::arg("groups"),
      py::arg("layout"), py::arg("x"), py::arg("dy"), py::arg("dx"),
      py::arg("types"), py::arg("gamma"), py::arg("eps"), py::arg("dgamma"),
      py::arg("dbeta"), py::arg("max_threads"), py::arg("mean") = 0,
      py::arg("rstd") = 0,
      "simdnorm_group_norm_backward on one descriptor (n, c, hw, groups, "
      "layout, x, dy, dx, types = x | dy << 4 | dx << 8 | param << 12, "
      "gamma, eps, dgamma, dbeta (float32 or 0), max_threads[, mean, rstd: "
      "the forward's saved statistics]; addresses as integers, 0 = NULL); "
      "returns the status.");

  m.def(
      "batch_norm",
      [](size_t n, size_t c, size_t hw, int layout, uintptr_t x, uintptr_t y,
         unsigned types, uintptr_t gamma, uintptr_t beta,
         uintptr_t running_mean, uintptr_t running_var, uintptr_t save_mean,
         uintptr_t save_invstd, float momentum, float eps, bool training,
         unsigned flags, size_t max_threads) {
        // In the field order of simdnorm_batch_desc (which only grows at
        // its end).
        const simdnorm_batch_desc d{n,
                                    c,
                                    hw,
                                    static_cast<simdnorm_layout>(layout),
                                    Ptr<const void>(x),
                                    TypeAt(types, 0),
                                    Ptr<void>(y),
                                    TypeAt(types, 1),
                                    Ptr<const void>(gamma),
                                    Ptr<const void>(beta),
                                    TypeAt(types, 2),
                                    Ptr<float>(running_mean),
                                    Ptr<float>(running_var),
                                    Ptr<float>(save_mean),
                                    Ptr<float>(save_invstd),
                                    momentum,
                                    eps,
                                    training ? 1 : 0,
                                    max_threads,
                                    flags};
        py::gil_scoped_release unlocked;
        return static_cast<int>(simdnorm_batch_norm(&d));
      },
      "simdnorm_batch_norm on one descriptor (n, c, hw, layout, x, y, "
      "types = x | y << 4 | param << 8, gamma, beta, running_mean, "
      "running_var, save_mean, save_invstd, momentum, eps, training, flags, "
      "max_threads; addresses as integers, 0 = NULL); returns the status.");

  m.def(
      "batch_norm_backward",
      [](size_t n, size_t c, size_t hw, int layout, uintptr_t x, uintptr_t dy,
         uintptr_t dx, unsigned types, uintptr_t gamma, uintptr_t running_mean,
         uintptr_t running_var, float eps, bool training, uintptr_t dgamma,
         uintptr_t dbeta, size_t max_threads, uintptr_t save_mean,
         uintptr_t save_invstd) {
        // In the field order of simdnorm_batch_backward_desc (which only
        // grows at its end).
        const simdnorm_batch_backward_desc d{
            n,
            c,
            hw,
            static_cast<simdnorm_layout>(layout),
            Ptr<const void>(x),
            TypeAt(types, 0),
            Ptr<const void>(dy),
            TypeAt(types, 1),
            Ptr<void>(dx),
            TypeAt(types, 2),
            Ptr<const void>(gamma),
            TypeAt(types, 3),
            Ptr<const float>(running_mean),
            Ptr<const float>(running_var),
            eps,
            training ? 1 : 0,
            Ptr<float>(dgamma),
            Ptr<float>(dbeta),
            max_threads,
            0u,
            Ptr<const float>(save_mean),
            Ptr<const float>(save_invstd)};
        py::gil_scoped_release unlocked;
        return static_cast<int>(simdnorm_batch_norm_backward(&d));
      },
      py::arg("n"), py::arg("c"), py::arg("hw"), py::arg("layout"),
      py::arg("x"), py::arg("dy"), py::arg("dx"), py::arg("types"),
      py::arg("gamma"), py::arg("running_mean"), py::arg("running_var"),
      py::arg("eps"), py::arg("training"), py::arg("dgamma"), py::arg("dbeta"),
      py::arg("max_threads"), py::arg("save_mean") = 0,
      py::arg("save_invstd") = 0,
      "simdnorm_batch_norm_backward on one descriptor (n, c, hw, layout, x, "
      "dy, dx, types = x | dy << 4 | dx << 8 | param << 12, gamma, "
      "running_mean, running_var, eps, training, dgamma, dbeta, "
      "max_threads[, save_mean, save_invstd: training's saved statistics]; "
      "addresses as integers, 0 = NULL); returns the status.");

  m.def(
      "status_string",
      [](int s) {
        return std::string(
            simdnorm_status_string(static_cast<simdnorm_status>(s)));
      },
      "simdnorm_status_string.");

  m.def(
      "isas",
      [] {
        std::vector<std::string> names;
        for (size_t i = 0; i < simdnorm_isa_count(); ++i) {
          names.emplace_back(simdnorm_isa_name(i));
        }
        return names;
      },
      "The ISAs compiled in and supported by this CPU, best first.");
  m.def(
      "set_isa",
      [](const std::string& name) {
        return static_cast<int>(simdnorm_set_isa(name.c_str()));
      },
      "simdnorm_set_isa; returns the status.");
  m.def(
      "active_isa", [] { return std::string(simdnorm_active_isa()); },
      "The name of the ISA in use.");
  m.def(
      "version", [] { return std::string(simdnorm_version_string()); },
      "The library's version, MAJOR.MINOR.PATCH.");

  m.def(
      "ops",
      [] {
        py::list ops;
        for (size_t i = 0; i < simdnorm_op_count(); ++i) {
          const simdnorm_op_info* op = simdnorm_op_at(i);
          py::dict entry;
          entry["kind"] = static_cast<int>(op->kind);
          entry["name"] = op->name;
          entry["title"] = op->title;
          entry["formula"] = op->formula;
          entry["torch"] = op->torch;
          entry["centered"] = op->centered != 0;
          entry["x_types"] = DTypes(op->x_types);
          entry["y_types"] = DTypes(op->y_types);
          entry["param_types"] = DTypes(op->param_types);
          entry["flags"] = op->flags;
          entry["f32_bound"] = op->f32_bound;
          entry["has_backward"] = op->has_backward != 0;
          // Row kinds take simdnorm_desc; GroupNorm and BatchNorm their own.
          entry["descriptor"] = op->descriptor == SIMDNORM_ROW_DESC ? "row"
                                : op->descriptor == SIMDNORM_GROUP_DESC
                                    ? "group"
                                    : "batch";
          ops.append(entry);
        }
        return ops;
      },
      "The registry's operations (simdnorm_op_at) as dicts; `descriptor` "
      "is \"row\" (normalize), \"group\" (group_norm) or \"batch\" "
      "(batch_norm).");
}
