# cmake -DBUILD_DIR=<moreau build> -DWORK=<scratch dir> -P run.cmake: installs the build into
# WORK/prefix, configures and builds this folder's project against it, and runs it.
file(REMOVE_RECURSE ${WORK})
foreach(step
    "${CMAKE_COMMAND};--install;${BUILD_DIR};--prefix;${WORK}/prefix"
    "${CMAKE_COMMAND};-S;${CMAKE_CURRENT_LIST_DIR};-B;${WORK}/build;-G;Ninja;-DCMAKE_PREFIX_PATH=${WORK}/prefix"
    "${CMAKE_COMMAND};--build;${WORK}/build"
    "${WORK}/build/downstream")
  execute_process(COMMAND ${step} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "downstream: '${step}' failed (${rc})")
  endif()
endforeach()
