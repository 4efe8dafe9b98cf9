# ctest -R python_installed_package: installs the build tree into a prefix,
# moves the prefix, and imports the Python package from there with nothing
# but PYTHONPATH set (no LD_LIBRARY_PATH): the extension must find
# libsimdnorm through its relative RPATH, and the modules must all be there.
# Run as: cmake -DBUILD_DIR=... -DWORK_DIR=... -DPYTHON=... -DPY_DIR=...
#   -P PythonPackageTest.cmake   (PY_DIR: the package's folder in the prefix)
file(REMOVE_RECURSE ${WORK_DIR})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR}
                        --prefix ${WORK_DIR}/first
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed: ${err}")
endif()
file(RENAME ${WORK_DIR}/first ${WORK_DIR}/moved)
set(site ${WORK_DIR}/moved/${PY_DIR})
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env --unset=LD_LIBRARY_PATH PYTHONPATH=${site}
          ${PYTHON} -c [=[
import importlib.util, sys
import numpy as np
import simdnorm
y = simdnorm.rms_norm(np.ones((2, 8), np.float32), eps=0.0)
assert (y == 1).all(), y
modules = ["simdnorm.reference"]
if importlib.util.find_spec("torch"):
    import torch, simdnorm.torch
    modules.append("simdnorm.torch")
    # Built with torch's C++ headers: the common call must load too.
    if importlib.util.find_spec("simdnorm._torch_core"):
        assert simdnorm.torch._common_call.__module__ != "simdnorm._core"
        y = simdnorm.torch.rms_norm(torch.ones(2, 8), (8,), eps=0.0)
        assert (y == 1).all(), y
        modules.append("simdnorm._torch_core")
print(simdnorm.__file__, simdnorm.active_isa(), *modules)
]=]
  # Not the build tree's python/ folder (the test's directory, which
  # `python -c` would put first on sys.path).
  WORKING_DIRECTORY ${WORK_DIR}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "import from ${site} failed (${rc}):\n${out}${err}")
endif()
if(NOT out MATCHES "^${site}/simdnorm/__init__.py ")
  message(FATAL_ERROR "imported another simdnorm: ${out}")
endif()
message(STATUS "ok: ${out}")
