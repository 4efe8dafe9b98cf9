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

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "simdnorm/simdnorm.h"
#include "simdnorm/simdnorm.hpp"

namespace py = pybind11;

namespace {

// Addresses cross from Python as integers; 0 is NULL.
template <class T>
T* Ptr(uintptr_t address) {
  return reinterpret_cast<T*>(address);
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
  constexpr Py_ssize_t kArgs = 14, kFusedArgs = 18;
  if (nargs != kArgs && nargs != kFusedArgs) {
    PyErr_Format(PyExc_TypeError,
                 "normalize takes %zd or %zd arguments (%zd given)", kArgs,
                 kFusedArgs, nargs);
    return nullptr;
  }
  size_t v[kFusedArgs] = {};
  double eps = 0, gamma_offset = 0;
  for (Py_ssize_t i = 0; i < nargs; ++i) {
    if (i == 10 || i == 11) {
      (i == 10 ? eps : gamma_offset) = PyFloat_AsDouble(args[i]);
    } else {
      v[i] = PyLong_AsSize_t(args[i]);
    }
    if (PyErr_Occurred()) return nullptr;
  }
  const simdnorm_desc d =
      Desc(static_cast<int>(v[0]), v[1], v[2], v[3], v[4], v[5], v[6], v[7],
           v[8], static_cast<unsigned>(v[9]), static_cast<float>(eps),
           static_cast<float>(gamma_offset), static_cast<unsigned>(v[12]),
           v[13], v[14], v[15], v[16], v[17]);
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
      "residual_stride, sum_out, sum_out_stride]) -> status: "
      "simdnorm_normalize on one descriptor (addresses as integers, 0 = "
      "NULL; types = x | y << 4 | param << 8), the GIL released."};
  m.add_object("normalize", py::reinterpret_steal<py::object>(PyCFunction_NewEx(
                                &normalize_def, nullptr, nullptr)));
  static PyMethodDef address_def = {
      "address",
      reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(Address)),
      METH_O,
      "address(obj) -> int: where the buffer of obj (e.g. a NumPy array) "
      "starts."};
  m.add_object("address", py::reinterpret_steal<py::object>(PyCFunction_NewEx(
                              &address_def, nullptr, nullptr)));

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
          ops.append(entry);
        }
        return ops;
      },
      "The registry of operations (simdnorm_op_at) as dicts.");
}
