# ctest -R package: installs the build tree's simdnorm into a prefix, moves
# the prefix (the package must be relocatable), runs the installed tools from
# there with no LD_LIBRARY_PATH (their RPATH is relative), then builds and runs
# the examples against it with find_package(simdnorm CONFIG) and with
# pkg-config, using the build's own compilers and flags (a sanitizer build's
# consumers need the same runtime flags).
# Run as: cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... [-DC_COMPILER=...
#   -DCXX_COMPILER=... -DC_FLAGS=... -DCXX_FLAGS=... -DEXE_LINKER_FLAGS=...]
#   -P PackageTest.cmake
function(run)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=LD_LIBRARY_PATH ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}")
  endif()
  message(STATUS "ok: ${ARGN}")
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/first)
file(RENAME ${WORK_DIR}/first ${WORK_DIR}/moved)
set(prefix ${WORK_DIR}/moved)

# The installed tools, when this build has them: a short run each.
if(EXISTS ${prefix}/bin/simdnorm-profile)
  run(${prefix}/bin/simdnorm-profile --rows 1 --reps 1 --batch-ms 1 --no-peers
      --kind rmsnorm --dtype f32)
endif()
if(EXISTS ${prefix}/bin/simdnorm-accuracy)
  run(${prefix}/bin/simdnorm-accuracy --rows 16 --variant plain --cols 896
      --family normal,offset1e4 --no-shortcuts --quiet)
endif()

# CMake package.
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples -B ${WORK_DIR}/consumer
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release
    "-DCMAKE_C_COMPILER=${C_COMPILER}" "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}"
    "-DCMAKE_C_FLAGS=${C_FLAGS}" "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}"
    "-DCMAKE_EXE_LINKER_FLAGS=${EXE_LINKER_FLAGS}")
run(${CMAKE_COMMAND} --build ${WORK_DIR}/consumer)
run(${WORK_DIR}/consumer/layernorm_c)
run(${WORK_DIR}/consumer/rmsnorm_cpp)
run(${WORK_DIR}/consumer/fused_add_rmsnorm_c)

# pkg-config; the program finds the library by the RPATH given at its link.
file(GLOB_RECURSE pc_files ${prefix}/*/simdnorm.pc)
list(GET pc_files 0 pc_file)
get_filename_component(pc_dir ${pc_file} DIRECTORY)
get_filename_component(lib_dir ${pc_dir} DIRECTORY)
find_program(PKG_CONFIG pkg-config REQUIRED)
execute_process(COMMAND ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${pc_dir}
                ${PKG_CONFIG} --cflags --libs simdnorm
                OUTPUT_VARIABLE flags OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pkg-config --cflags --libs simdnorm failed")
endif()
separate_arguments(flags UNIX_COMMAND "${flags}")
separate_arguments(c_flags UNIX_COMMAND "${C_FLAGS} ${EXE_LINKER_FLAGS}")
if(NOT C_COMPILER)
  set(C_COMPILER cc)
endif()
run(${C_COMPILER} ${c_flags} ${SOURCE_DIR}/examples/layernorm_c.c ${flags}
    -Wl,-rpath,${lib_dir} -o ${WORK_DIR}/layernorm_c_pkgconfig)
run(${WORK_DIR}/layernorm_c_pkgconfig)
