// normalized_shape's last dimension, shared by both extension modules.
#ifndef SIMDNORM_PYTHON_SRC_ONE_DIMENSION_H_
#define SIMDNORM_PYTHON_SRC_ONE_DIMENSION_H_

#include <Python.h>

#include <cstddef>

// The last dimension normalized_shape names when it names one (an int, or
// a sequence of one int); 0 otherwise (no Python error left set).
inline size_t OneDimension(PyObject* normalized_shape) {
  PyObject* n = normalized_shape;
  PyObject* item = nullptr;
  if (!PyLong_Check(n)) {
    if (!PySequence_Check(n) || PySequence_Size(n) != 1) {
      PyErr_Clear();
      return 0;
    }
    item = PySequence_GetItem(n, 0);
    n = item;
  }
  const size_t cols = n && PyLong_Check(n) ? PyLong_AsSize_t(n) : 0;
  Py_XDECREF(item);
  if (PyErr_Occurred()) {
    PyErr_Clear();
    return 0;
  }
  return cols;
}

#endif  // SIMDNORM_PYTHON_SRC_ONE_DIMENSION_H_
