# Runs PROGRAM (a list: the program and its arguments) and fails unless its standard output
# equals the file EXPECTED; WANT_NAME names that file's output in the failure message.
if(NOT DEFINED WANT_NAME)
  set(WANT_NAME "the documented output")
endif()
execute_process(COMMAND ${PROGRAM} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
file(READ ${EXPECTED} want)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} exited with ${rc}")
endif()
if(NOT out STREQUAL want)
  message(FATAL_ERROR "output differs from ${WANT_NAME}.\n--- expected:\n${want}\n--- got:\n${out}")
endif()
