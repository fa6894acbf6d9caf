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
# Student files are compiled with main renamed (kiln_library); the header must be built the same way.
target_compile_definitions(kiln_student_pch PRIVATE main=kiln_student_main)
# The same debug level as the student files (-g1): GCC refuses a header built with another.
target_compile_options(kiln_student_pch PRIVATE -g1)

# AddressSanitizer and UndefinedBehaviorSanitizer, for the sanitized twin of every test binary: a
# check passes only when its run is also clean under them. Only the student files are
# instrumented; the sanitizers' runtime still sees every allocation.
set(KILN_SANITIZE -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
add_library(kiln_student_pch_san OBJECT ${PROJECT_SOURCE_DIR}/grader/testing/src/pch.cpp)
target_precompile_headers(kiln_student_pch_san PRIVATE
  <algorithm> <cmath> <cstdint> <functional> <memory> <optional> <string> <utility> <vector>)
target_compile_definitions(kiln_student_pch_san PRIVATE main=kiln_student_main)
target_compile_options(kiln_student_pch_san PRIVATE ${KILN_SANITIZE} -O0 -g1)  # as the files that use it

# kiln_cuda(nvcc): the CUDA Toolkit the grader found (the course description calls this first;
# without it no device part is built). nvcc is called directly, because CMake 3.25 cannot ask it
# for C++20. The kernels get SASS for sm_90 (H100, H200) and PTX for compute_75, which the driver
# compiles for any newer GPU.
macro(kiln_cuda nvcc)
  set(KILN_NVCC ${nvcc})
  get_filename_component(CUDAToolkit_ROOT ${KILN_NVCC} DIRECTORY)
  get_filename_component(CUDAToolkit_ROOT ${CUDAToolkit_ROOT} DIRECTORY)
  find_package(CUDAToolkit REQUIRED)
  set(KILN_NVCC_ARCH -gencode=arch=compute_90,code=sm_90 -gencode=arch=compute_75,code=compute_75)
endmacro()

# kiln_module(NAME DIR dir [GIVEN src...] [TESTS src...] [REQUIRES module...]
#             [DEVICE cu...] [DEVICE_TESTS src...] [DEVICE_BENCH src...] [DEVICE_BENCH_CUDA cu...])
function(kiln_module name)
  cmake_parse_arguments(M "" "DIR" "GIVEN;TESTS;REQUIRES;DEVICE;DEVICE_TESTS;DEVICE_BENCH;DEVICE_BENCH_CUDA" ${ARGN})
  add_library(${name}_headers INTERFACE)
  target_include_directories(${name}_headers INTERFACE ${M_DIR}/include)
  set(includes ${M_DIR}/include)
  foreach(dep IN LISTS M_REQUIRES)
    target_link_libraries(${name}_headers INTERFACE ${dep}_headers)
    get_property(dep_includes GLOBAL PROPERTY KILN_${dep}_INCLUDES)
    list(APPEND includes ${dep_includes})
  endforeach()
  list(REMOVE_DUPLICATES includes)
  set_property(GLOBAL PROPERTY KILN_${name}_INCLUDES "${includes}")
  set_property(GLOBAL PROPERTY KILN_${name}_DEVICE "${M_DEVICE}")
  set_property(GLOBAL PROPERTY KILN_${name}_DEVICE_BENCH "${M_DEVICE_BENCH}")
  if(KILN_NVCC AND M_DEVICE_TESTS)
    add_library(${name}_device_tests OBJECT ${M_DEVICE_TESTS})
    target_link_libraries(${name}_device_tests PRIVATE ${name}_headers kiln_testing)
    kiln_use_testing_pch(${name}_device_tests)
    add_library(${name}_device_observer_tests OBJECT EXCLUDE_FROM_ALL ${M_DEVICE_TESTS})  # as ${name}_observer_tests
    target_link_libraries(${name}_device_observer_tests PRIVATE ${name}_headers kiln_observer)
    target_compile_definitions(${name}_device_observer_tests PRIVATE KILN_OBSERVER)
    kiln_use_testing_pch(${name}_device_observer_tests)
  endif()
  if(KILN_NVCC AND M_DEVICE_BENCH_CUDA)
    set(objects)
    foreach(cu IN LISTS M_DEVICE_BENCH_CUDA)
      get_filename_component(stem ${cu} NAME_WE)
      kiln_nvcc(${CMAKE_BINARY_DIR}/device/${name}_bench_${stem}.o ${cu} "${includes}")
      list(APPEND objects ${CMAKE_BINARY_DIR}/device/${name}_bench_${stem}.o)
    endforeach()
    set_property(GLOBAL PROPERTY KILN_${name}_DEVICE_BENCH_OBJECTS "${objects}")
  endif()
  if(M_GIVEN)
    add_library(${name}_given OBJECT ${M_GIVEN})
    target_link_libraries(${name}_given PRIVATE ${name}_headers Eigen3::Eigen)
  endif()
  if(M_TESTS)  # a module being written may have none yet
    add_library(${name}_tests OBJECT ${M_TESTS})
    target_link_libraries(${name}_tests PRIVATE ${name}_headers kiln_testing)
    kiln_use_testing_pch(${name}_tests)
    # The observed program's build of the same checks: every judging step compiled out
    # (kiln/testing.h), linked with the observer library alone, so that a judging call left outside
    # KILN_JUDGE cannot link. Built only for `grader grade` and `grader verify`.
    add_library(${name}_observer_tests OBJECT EXCLUDE_FROM_ALL ${M_TESTS})
    target_link_libraries(${name}_observer_tests PRIVATE ${name}_headers kiln_observer)
    target_compile_definitions(${name}_observer_tests PRIVATE KILN_OBSERVER)
    kiln_use_testing_pch(${name}_observer_tests)
  endif()
  set_property(GLOBAL PROPERTY KILN_${name}_REQUIRES "${M_REQUIRES}")
  set_property(GLOBAL PROPERTY KILN_${name}_HAS_GIVEN "${M_GIVEN}")
endfunction()

# kiln_library(TARGET MODULE name SOURCES student-src...): the module's given objects plus one
# variant's student files.
# REUSE library REUSED regex: also the objects of `library` (the reference's) whose names match,
# instead of compiling the same files again (a mutant changes one file of the reference).
function(kiln_library target)
  cmake_parse_arguments(L "" "MODULE;REUSE;REUSED" "SOURCES;LINK" ${ARGN})
  get_property(given GLOBAL PROPERTY KILN_${L_MODULE}_HAS_GIVEN)
  set(objects)
  if(given)
    set(objects $<TARGET_OBJECTS:${L_MODULE}_given>)
  endif()
  set(reused)
  set(reused_san)
  if(L_REUSE)
    set(reused "$<FILTER:$<TARGET_OBJECTS:${L_REUSE}>,INCLUDE,${L_REUSED}>")
    set(reused_san "$<FILTER:$<TARGET_OBJECTS:${L_REUSE}_san>,INCLUDE,${L_REUSED}>")
  endif()
  add_library(${target} STATIC ${L_SOURCES} ${objects} ${reused})
  target_link_libraries(${target} PUBLIC ${L_MODULE}_headers ${L_LINK})
  # A main() a student kept for experiments is not the test program's: rename it.
  set_source_files_properties(${L_SOURCES} PROPERTIES COMPILE_DEFINITIONS main=kiln_student_main)
  target_precompile_headers(${target} REUSE_FROM kiln_student_pch)
  # A function that can end without returning its value is a compile error, not a silent bug. Line
  # tables (-g1), so that a crash or a hang is placed at a line of the student's code; the tests
  # and given code go without, which keeps links quick.
  target_compile_options(${target} PRIVATE -Werror=return-type -g1)
  # The sanitized twin: the same files, instrumented (kiln_test_binary's s_ binary links it).
  add_library(${target}_san STATIC EXCLUDE_FROM_ALL ${L_SOURCES} ${objects} ${reused_san})
  target_link_libraries(${target}_san PUBLIC ${L_MODULE}_headers ${L_LINK})
  # Unoptimised: the sanitizers' checks make optimising slow, and these runs are about memory, not speed.
  target_compile_options(${target}_san PRIVATE ${KILN_SANITIZE} -Werror=return-type -g1 -O0)
  target_precompile_headers(${target}_san REUSE_FROM kiln_student_pch_san)
endfunction()

# kiln_test_binary(TARGET MODULE name LIBRARIES lib... [OBSERVER]): the module's tests linked
# against one library per module it requires (the variant chooses which). OBSERVER: the observed
# program, with the judging compiled out and no judging library to link.
function(kiln_test_binary target)
  cmake_parse_arguments(T "OBSERVER" "MODULE" "LIBRARIES" ${ARGN})
  set(tests ${T_MODULE}_tests)
  set(testing kiln_testing)
  if(T_OBSERVER)
    set(tests ${T_MODULE}_observer_tests)
    set(testing kiln_observer)
  endif()
  add_executable(${target} $<TARGET_OBJECTS:${tests}> $<TARGET_OBJECTS:kiln_testing_main>)
  # The test library first: it uses module 01's Tensor, which the variant's libraries bring after it.
  target_link_libraries(${target} PRIVATE ${testing} ${T_LIBRARIES})
  # gold links a test binary in less than half of ld's time: every edit, mutant and submission links.
  target_link_options(${target} PRIVATE -fuse-ld=gold)
  # s_...: the same checks on the sanitized student files.
  string(REGEX REPLACE "^t_" "s_" sanitized ${target})
  set(san_libraries)
  foreach(lib IN LISTS T_LIBRARIES)
    list(APPEND san_libraries ${lib}_san)
  endforeach()
  add_executable(${sanitized} EXCLUDE_FROM_ALL $<TARGET_OBJECTS:${tests}> $<TARGET_OBJECTS:kiln_testing_main>)
  target_link_libraries(${sanitized} PRIVATE ${testing} ${san_libraries})
  target_link_options(${sanitized} PRIVATE ${KILN_SANITIZE} -fuse-ld=gold)
endfunction()

# kiln_bench_binary(TARGET MODULE name SOURCES bench-src... LIBRARIES lib...): the module's given
# bench code, timing one variant's kernels.
function(kiln_bench_binary target)
  cmake_parse_arguments(B "" "MODULE" "SOURCES;LIBRARIES" ${ARGN})
  add_executable(${target} ${B_SOURCES})
  target_link_libraries(${target} PRIVATE ${B_LIBRARIES} kiln_bench_main Eigen3::Eigen)
endfunction()

# kiln_nvcc(OBJECT SOURCE INCLUDES): one CUDA translation unit compiled by nvcc, with its header
# dependencies tracked.
function(kiln_nvcc object source includes)
  set(flags)
  foreach(dir IN LISTS includes)
    list(APPEND flags -I${dir})
  endforeach()
  add_custom_command(OUTPUT ${object}
    COMMAND ${KILN_NVCC} -std=c++20 ${KILN_NVCC_ARCH} -O2 -x cu -c ${source} -o ${object} ${flags}
            -MD -MF ${object}.d
    DEPENDS ${source}
    DEPFILE ${object}.d
    COMMENT "nvcc ${source}")
endfunction()

# kiln_device_kernels(NAME MODULE name KERNELS student-src...): the module's given CUDA code
# (device/*.cu) and one variant's student files, in one nvcc translation unit: the launchers see
# the student's kernels. Sets ${NAME}_OBJECT in the caller.
function(kiln_device_kernels name)
  cmake_parse_arguments(K "" "MODULE" "KERNELS" ${ARGN})
  set(object ${CMAKE_BINARY_DIR}/device/${name}.o)
  get_property(done GLOBAL PROPERTY KILN_${name}_DONE)
  if(NOT done)
    set_property(GLOBAL PROPERTY KILN_${name}_DONE TRUE)
    get_property(includes GLOBAL PROPERTY KILN_${K_MODULE}_INCLUDES)
    get_property(given GLOBAL PROPERTY KILN_${K_MODULE}_DEVICE)
    # The launchers name the first kernel file when a kernel still marked KILN_NOT_IMPLEMENTED ran.
    list(GET K_KERNELS 0 first)
    set(content "// Written by the grader: a variant's kernels and the module's launchers, one unit.\n")
    string(APPEND content "#define KILN_KERNELS_FILE \"${first}\"\n")
    foreach(file IN LISTS K_KERNELS given)
      string(APPEND content "#include \"${file}\"\n")
    endforeach()
    file(CONFIGURE OUTPUT ${CMAKE_BINARY_DIR}/device/${name}.cu CONTENT "${content}" @ONLY)
    kiln_nvcc(${object} ${CMAKE_BINARY_DIR}/device/${name}.cu "${includes}")
  endif()
  set(${name}_OBJECT ${object} PARENT_SCOPE)
endfunction()

# kiln_device_test_binary(TARGET MODULE name KERNELS student-src... LIBRARIES lib... [OBSERVER]): the
# module's device checks, run against one variant's kernels on a CUDA device. The libraries are
# the module's prerequisites (for Tensor and the test helpers); the module's own host library is
# not linked, since its emulator kernels carry the same names as the device kernels.
function(kiln_device_test_binary target)
  cmake_parse_arguments(D "OBSERVER" "MODULE;VARIANT" "KERNELS;LIBRARIES" ${ARGN})
  kiln_device_kernels(${D_VARIANT}_cuda MODULE ${D_MODULE} KERNELS ${D_KERNELS})
  set(tests ${D_MODULE}_device_tests)
  set(testing kiln_testing)
  if(D_OBSERVER)  # the observed program, as kiln_test_binary's
    set(tests ${D_MODULE}_device_observer_tests)
    set(testing kiln_observer)
  endif()
  add_executable(${target} $<TARGET_OBJECTS:${tests}> ${${D_VARIANT}_cuda_OBJECT}
                 $<TARGET_OBJECTS:kiln_testing_main>)
  target_link_libraries(${target} PRIVATE ${D_MODULE}_headers ${testing} ${D_LIBRARIES} CUDA::cudart_static)
endfunction()

# kiln_gpu_bench_binary(TARGET MODULE name VARIANT v KERNELS student-src... LIBRARIES lib...):
# `grader bench --gpu`: the variant's kernels timed on the device beside cuBLAS.
function(kiln_gpu_bench_binary target)
  cmake_parse_arguments(B "" "MODULE;VARIANT" "KERNELS;LIBRARIES" ${ARGN})
  if(NOT TARGET CUDA::cublas OR NOT TARGET kiln_bench_main)
    return()  # no cuBLAS or no Google Benchmark: `grader bench --gpu` says the target is missing
  endif()
  kiln_device_kernels(${B_VARIANT}_cuda MODULE ${B_MODULE} KERNELS ${B_KERNELS})
  get_property(sources GLOBAL PROPERTY KILN_${B_MODULE}_DEVICE_BENCH)
  get_property(objects GLOBAL PROPERTY KILN_${B_MODULE}_DEVICE_BENCH_OBJECTS)
  add_executable(${target} ${sources} ${objects} ${${B_VARIANT}_cuda_OBJECT})
  target_link_libraries(${target} PRIVATE ${B_MODULE}_headers ${B_LIBRARIES} kiln_bench_main
                        CUDA::cudart_static CUDA::cublas)
endfunction()

# kiln_program(TARGET SOURCES src... INCLUDES dir... LIBRARIES lib...): given code (a milestone's
# trainer) linked with one variant's module libraries.
function(kiln_program target)
  cmake_parse_arguments(P "" "" "SOURCES;INCLUDES;LIBRARIES" ${ARGN})
  add_executable(${target} ${P_SOURCES})
  target_include_directories(${target} PRIVATE ${P_INCLUDES})
  target_link_libraries(${target} PRIVATE ${P_LIBRARIES})
  target_link_options(${target} PRIVATE -fuse-ld=gold)
endfunction()
