# Optional peers (packages the tools and benchmarks compare against, never
# needed by the library): simdnorm_find_peer(<package> <target>) finds one
# only when its package configuration loads cleanly.
#
# A package config that fails (a REQUIRED dependency of its own missing, as
# Debian's dnnl-config.cmake does without the OpenCL headers) raises a fatal
# error that no caller can catch, so each peer is first loaded by a separate
# CMake run (cmake/probe-package) with this build's search paths. Only when
# that succeeds is it found here. The configure output says, in one line,
# which peers were found and why any was skipped.
set(SIMDNORM_PEERS_FOUND "")
set(SIMDNORM_PEERS_SKIPPED "")

function(simdnorm_find_peer package target)
  set(probe_dir ${PROJECT_BINARY_DIR}/peer-probe/${package})
  set(probe_args
    -DPROBE_PACKAGE=${package} -DPROBE_TARGET=${target}
    "-DCMAKE_PREFIX_PATH=${CMAKE_PREFIX_PATH}"
    "-DCMAKE_FIND_ROOT_PATH=${CMAKE_FIND_ROOT_PATH}"
    "-DCMAKE_LIBRARY_ARCHITECTURE=${CMAKE_LIBRARY_ARCHITECTURE}"
    "-DCMAKE_C_COMPILER=${CMAKE_C_COMPILER}"
    "-DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER}")
  if(CMAKE_TOOLCHAIN_FILE)
    list(APPEND probe_args "-DCMAKE_TOOLCHAIN_FILE=${CMAKE_TOOLCHAIN_FILE}")
  endif()
  if(${package}_DIR)
    list(APPEND probe_args "-D${package}_DIR=${${package}_DIR}")
  endif()
  file(REMOVE_RECURSE ${probe_dir})
  execute_process(
    COMMAND ${CMAKE_COMMAND} -S ${PROJECT_SOURCE_DIR}/cmake/probe-package
            -B ${probe_dir} ${probe_args}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    # The error's own words on what is missing, on one line.
    string(REGEX REPLACE "[ \t\r\n]+" " " flat "${err}")
    string(REGEX MATCH "Could NOT find [^)]*\\)|Could not find a package configuration file provided by \"[^\"]*\"|PROBE: not found"
           why "${flat}")
    string(REPLACE "PROBE: " "" why "${why}")
    if(NOT why)
      set(why "its CMake config failed to load")
    endif()
    string(STRIP "${why}" why)
    file(WRITE ${probe_dir}/why.txt "${err}")
    set(SIMDNORM_PEERS_SKIPPED
        "${SIMDNORM_PEERS_SKIPPED}; ${package} skipped (${why}; details in ${probe_dir}/why.txt)"
        PARENT_SCOPE)
    return()
  endif()
  find_package(${package} CONFIG QUIET)
  if(TARGET ${target})
    set(version "${${package}_VERSION}")
    set(SIMDNORM_PEERS_FOUND "${SIMDNORM_PEERS_FOUND}, ${package} ${version}"
        PARENT_SCOPE)
  else()
    set(SIMDNORM_PEERS_SKIPPED "${SIMDNORM_PEERS_SKIPPED}; ${package} skipped (not found)"
        PARENT_SCOPE)
  endif()
endfunction()

# The one line of the configure output about peers.
function(simdnorm_report_peers)
  set(found "${SIMDNORM_PEERS_FOUND}")
  string(REGEX REPLACE "^, " "" found "${found}")
  if(NOT found)
    set(found "none")
  endif()
  message(STATUS "simdnorm peers: found ${found}${SIMDNORM_PEERS_SKIPPED}")
endfunction()
