# ctest -R package: installs the build tree's simdnorm into a prefix, moves
# the prefix (the package must be relocatable), then builds and runs the
# examples against it with find_package(simdnorm CONFIG) and with pkg-config.
# Run as: cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... -P PackageTest.cmake
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}")
  endif()
  message(STATUS "ok: ${ARGN}")
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/first)
file(RENAME ${WORK_DIR}/first ${WORK_DIR}/moved)
set(prefix ${WORK_DIR}/moved)

# CMake package.
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples -B ${WORK_DIR}/consumer
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/consumer)
run(${WORK_DIR}/consumer/layernorm_c)
run(${WORK_DIR}/consumer/rmsnorm_cpp)
run(${WORK_DIR}/consumer/fused_add_rmsnorm_c)

# pkg-config.
file(GLOB_RECURSE pc_files ${prefix}/*/simdnorm.pc)
list(GET pc_files 0 pc_file)
get_filename_component(pc_dir ${pc_file} DIRECTORY)
find_program(PKG_CONFIG pkg-config REQUIRED)
execute_process(COMMAND ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${pc_dir}
                ${PKG_CONFIG} --cflags --libs simdnorm
                OUTPUT_VARIABLE flags OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pkg-config --cflags --libs simdnorm failed")
endif()
separate_arguments(flags UNIX_COMMAND "${flags}")
run(cc ${SOURCE_DIR}/examples/layernorm_c.c ${flags} -o ${WORK_DIR}/layernorm_c_pkgconfig)
get_filename_component(lib_dir ${pc_dir} DIRECTORY)
run(${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${lib_dir} ${WORK_DIR}/layernorm_c_pkgconfig)
