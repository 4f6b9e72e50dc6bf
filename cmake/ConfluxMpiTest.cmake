# conflux_add_mpi_test(NAME name TARGET target NP n [ARGS arg...] [TIMEOUT seconds])
#
# A test that runs `target` on n ranks under ${MPIEXEC_EXECUTABLE} (with Open MPI:
# --oversubscribe, so that 3-4 ranks run on 2 cores, and --allow-run-as-root) and passes when
# mpirun exits 0 and every rank printed "rank R of n: all tests passed" (cmake/RunMpiTest.cmake).
# Without MPI at configure time, or without the transport-mpi plugin, the test is added and
# reports itself skipped.
function(conflux_add_mpi_test)
  cmake_parse_arguments(ARG "" "NAME;TARGET;NP;TIMEOUT" "ARGS" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  if(NOT MPI_C_FOUND OR NOT MPIEXEC_EXECUTABLE OR NOT TARGET ${ARG_TARGET})
    add_test(NAME ${ARG_NAME}
      COMMAND sh -c "echo 'skipped: MPI or the transport-mpi plugin was not found at configure time'; exit 77")
    set_tests_properties(${ARG_NAME} PROPERTIES SKIP_RETURN_CODE 77)
    return()
  endif()
  execute_process(COMMAND ${MPIEXEC_EXECUTABLE} --version OUTPUT_VARIABLE version ERROR_QUIET)
  set(flags)
  if(version MATCHES "Open MPI|OpenRTE")
    # mpirun's own limit ends every rank; ctest's TIMEOUT is the backstop.
    math(EXPR mpirun_timeout "${ARG_TIMEOUT} - 20")
    set(flags --oversubscribe --allow-run-as-root --timeout ${mpirun_timeout})
  endif()
  string(REPLACE ";" " " flags "${flags}")
  string(REPLACE ";" " " args "${ARG_ARGS}")
  add_test(NAME ${ARG_NAME}
    COMMAND ${CMAKE_COMMAND} -DMPIEXEC=${MPIEXEC_EXECUTABLE} "-DFLAGS=${flags}" -DNP=${ARG_NP}
            -DEXE=$<TARGET_FILE:${ARG_TARGET}> "-DARGS=${args}"
            -P ${PROJECT_SOURCE_DIR}/cmake/RunMpiTest.cmake)
  set_tests_properties(${ARG_NAME} PROPERTIES TIMEOUT ${ARG_TIMEOUT} PROCESSORS ${ARG_NP})
endfunction()
