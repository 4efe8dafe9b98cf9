# ctest -R broken_peer: configures simdnorm with an optional peer (oneDNN)
# whose CMake config fails (tests/fixtures/broken-peer), which must succeed
# and say in one line that the peer was skipped and why; then compiles the
# code that would use the peer. The library itself is not rebuilt.
# Run as: cmake -DSOURCE_DIR=... -DWORK_DIR=... [-DC_COMPILER=...
#   -DCXX_COMPILER=...] -P BrokenPeerTest.cmake
set(fixture ${SOURCE_DIR}/tests/fixtures/broken-peer)
file(REMOVE_RECURSE ${WORK_DIR})
execute_process(
  COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}
          -DCMAKE_PREFIX_PATH=${fixture} -Ddnnl_DIR=${fixture}/lib/cmake/dnnl
          "-DCMAKE_C_COMPILER=${C_COMPILER}" "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}"
          -DSIMDNORM_BUILD_TESTS=OFF -DSIMDNORM_BUILD_BENCH=OFF
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configure failed with a broken optional peer:\n${out}\n${err}")
endif()
string(REGEX MATCH "simdnorm peers: [^\n]*" line "${out}")
message(STATUS "${line}")
if(NOT line MATCHES "dnnl skipped \\(.*SimdnormFixtureMissingDependency")
  message(FATAL_ERROR "the configure output does not say why dnnl was skipped:\n${out}")
endif()
# The peers' code, compiled without oneDNN (objects only: no library build).
foreach(object onednn.cc.o peers.cc.o)
  execute_process(COMMAND make -C ${WORK_DIR}/bench/peers ${object}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${object} does not compile without the peer:\n${out}")
  endif()
  message(STATUS "ok: ${object} compiles without the peer")
endforeach()
