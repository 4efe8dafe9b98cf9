# Runs one command of a tool and checks its exit status and output (stdout
# and stderr together), for the tools' help and usage-error tests:
#   cmake -DTOOL=<file> "-DARGS=a;b" -DSTATUS=<n> "-DEXPECT=<regex>"
#         ["-DEMULATOR=<command;args>"] -P ToolCommandTest.cmake
execute_process(COMMAND ${EMULATOR} ${TOOL} ${ARGS}
                RESULT_VARIABLE status
                OUTPUT_VARIABLE out
                ERROR_VARIABLE out)
if(NOT status STREQUAL STATUS)
  message(FATAL_ERROR "${TOOL} ${ARGS}: exit status ${status}, want "
                      "${STATUS}; output:\n${out}")
endif()
if(NOT out MATCHES "${EXPECT}")
  message(FATAL_ERROR "${TOOL} ${ARGS}: output does not match '${EXPECT}':\n"
                      "${out}")
endif()
