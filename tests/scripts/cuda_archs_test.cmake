# cmake -P tests/scripts/cuda_archs_test.cmake: the CUDA architectures a default build picks
# (cmake/cuda_archs.cmake, issue 45: nvcc without a GPU used to build five architectures for
# ten minutes), for machines this one need not be: a GPU, none, nvcc 12 and 13.
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/cuda_archs.cmake)
function(expect what got want)
  if(NOT "${got}" STREQUAL "${want}")
    message(SEND_ERROR "cuda_archs: ${what}: got '${got}', expected '${want}'")
  endif()
endfunction()
set(nvcc12 "Cuda compilation tools, release 12.4, V12.4.131")
set(nvcc13 "Cuda compilation tools, release 13.0, V13.0.48")
# native: the GPUs present, each capability once
ns_cuda_pick_archs(AUTO native "9.0\n8.0\n9.0\n" "${nvcc12}" archs skip)
expect("native, an H100, an A100 and another H100" "${archs}|${skip}" "90;80|FALSE")
# native without a GPU: AUTO skips CUDA (with a NOTICE saying how to build it); ON builds all
ns_cuda_pick_archs(AUTO native "" "${nvcc12}" archs skip)
expect("native, no GPU, AUTO" "${skip}" "TRUE")
ns_cuda_pick_archs(ON native "" "${nvcc12}" archs skip)
expect("native, no GPU, ON" "${archs}|${skip}" "70-real;75-real;80-real;86-real;89-real;90|FALSE")
# all: Volta dropped from CUDA 13 on
ns_cuda_pick_archs(AUTO all "" "${nvcc13}" archs skip)
expect("all, nvcc 13" "${archs}|${skip}" "75-real;80-real;86-real;89-real;90|FALSE")
# a list as given, whatever the machine
ns_cuda_pick_archs(AUTO "80;90" "" "${nvcc12}" archs skip)
expect("a list" "${archs}|${skip}" "80;90|FALSE")
