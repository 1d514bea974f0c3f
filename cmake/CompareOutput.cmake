# Runs PROGRAM and fails unless its standard output equals the file EXPECTED.
execute_process(COMMAND ${PROGRAM} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
file(READ ${EXPECTED} want)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} exited with ${rc}")
endif()
if(NOT out STREQUAL want)
  message(FATAL_ERROR "output differs from the documented output.\n--- documented:\n${want}\n--- got:\n${out}")
endif()
