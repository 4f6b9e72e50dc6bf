# Runs one MPI test program (conflux_add_mpi_test): cmake -DMPIEXEC=... -DFLAGS="..." -DNP=n
# -DEXE=... -DARGS="..." -P RunMpiTest.cmake. Fails unless mpirun exits 0 and each of the n
# ranks printed "rank R of n: all tests passed".
separate_arguments(flags UNIX_COMMAND "${FLAGS}")
separate_arguments(args UNIX_COMMAND "${ARGS}")
execute_process(COMMAND ${MPIEXEC} ${flags} -n ${NP} ${EXE} --gtest_brief=1 ${args}
  RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
set(passed 0)
math(EXPR last "${NP} - 1")
foreach(rank RANGE ${last})
  string(FIND "${out}" "rank ${rank} of ${NP}: all tests passed" at)
  if(at GREATER -1)
    math(EXPR passed "${passed} + 1")
  endif()
endforeach()
if(NOT status EQUAL 0 OR NOT passed EQUAL NP)
  message(FATAL_ERROR "${passed} of ${NP} ranks passed every test (mpirun: ${status})")
endif()
message("all ${NP} ranks passed")
