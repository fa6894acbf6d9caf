# Targets for module variants. The grader writes a file of kiln_module() and kiln_variant()
# calls from the modules' module.yaml files; this file turns them into targets.
#
# Everything that does not change when a student edits a file is built once per build directory
# and shared by every variant: the given sources of each module and its tests. A variant compiles
# only its own copies of the student files, then links.

# The standard headers student files use, precompiled once so that recompiling an edited file
# takes a fraction of a second less.
add_library(kiln_student_pch OBJECT ${PROJECT_SOURCE_DIR}/grader/testing/src/pch.cpp)
target_precompile_headers(kiln_student_pch PRIVATE
  <algorithm> <cmath> <cstdint> <functional> <memory> <optional> <string> <utility> <vector>)

# kiln_module(NAME DIR dir [GIVEN src...] [TESTS src...] [REQUIRES module...])
function(kiln_module name)
  cmake_parse_arguments(M "" "DIR" "GIVEN;TESTS;REQUIRES" ${ARGN})
  add_library(${name}_headers INTERFACE)
  target_include_directories(${name}_headers INTERFACE ${M_DIR}/include)
  foreach(dep IN LISTS M_REQUIRES)
    target_link_libraries(${name}_headers INTERFACE ${dep}_headers)
  endforeach()
  if(M_GIVEN)
    add_library(${name}_given OBJECT ${M_GIVEN})
    target_link_libraries(${name}_given PRIVATE ${name}_headers Eigen3::Eigen)
  endif()
  add_library(${name}_tests OBJECT ${M_TESTS})
  target_link_libraries(${name}_tests PRIVATE ${name}_headers kiln_testing)
  target_precompile_headers(${name}_tests REUSE_FROM kiln_testing_pch)
  set_property(GLOBAL PROPERTY KILN_${name}_REQUIRES "${M_REQUIRES}")
  set_property(GLOBAL PROPERTY KILN_${name}_HAS_GIVEN "${M_GIVEN}")
endfunction()

# kiln_library(TARGET MODULE name SOURCES student-src...): the module's given objects plus one
# variant's student files.
function(kiln_library target)
  cmake_parse_arguments(L "" "MODULE" "SOURCES;LINK" ${ARGN})
  get_property(given GLOBAL PROPERTY KILN_${L_MODULE}_HAS_GIVEN)
  set(objects)
  if(given)
    set(objects $<TARGET_OBJECTS:${L_MODULE}_given>)
  endif()
  add_library(${target} STATIC ${L_SOURCES} ${objects})
  target_link_libraries(${target} PUBLIC ${L_MODULE}_headers ${L_LINK})
  target_precompile_headers(${target} REUSE_FROM kiln_student_pch)
endfunction()

# kiln_test_binary(TARGET MODULE name LIBRARIES lib...): the module's tests linked against
# one library per module it requires (the variant chooses which).
function(kiln_test_binary target)
  cmake_parse_arguments(T "" "MODULE" "LIBRARIES" ${ARGN})
  add_executable(${target} $<TARGET_OBJECTS:${T_MODULE}_tests>)
  target_link_libraries(${target} PRIVATE ${T_LIBRARIES} kiln_testing_main)
endfunction()

# kiln_imported_library(TARGET MODULE name LOCATION archive [LINK lib...]): a library built in
# another build directory, used here as it is.
function(kiln_imported_library target)
  cmake_parse_arguments(L "" "MODULE;LOCATION" "LINK" ${ARGN})
  add_library(${target} STATIC IMPORTED)
  set_target_properties(${target} PROPERTIES IMPORTED_LOCATION ${L_LOCATION})
  target_link_libraries(${target} INTERFACE ${L_MODULE}_headers ${L_LINK})
endfunction()

# kiln_bench_binary(TARGET MODULE name SOURCES bench-src... LIBRARIES lib...): the module's given
# bench code, timing one variant's kernels.
function(kiln_bench_binary target)
  cmake_parse_arguments(B "" "MODULE" "SOURCES;LIBRARIES" ${ARGN})
  add_executable(${target} ${B_SOURCES})
  target_link_libraries(${target} PRIVATE ${B_LIBRARIES} kiln_bench_main Eigen3::Eigen)
endfunction()
