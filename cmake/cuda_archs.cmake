# Which CUDA architectures a build compiles for when CMAKE_CUDA_ARCHITECTURES is not given
# (CMakeLists.txt; the choice is a function of its inputs so that tests/scripts/cuda_archs_test.cmake
# checks it without a GPU or nvcc).
#
#   ns_cuda_pick_archs(NS_CUDA NS_CUDA_ARCHS SMI_OUTPUT NVCC_VERSION OUT_ARCHS OUT_SKIP)
#
# NS_CUDA: AUTO or ON. NS_CUDA_ARCHS: "native" (the GPUs present), "all", or a list.
# SMI_OUTPUT: nvidia-smi --query-gpu=compute_cap's output ("" where there is no nvidia-smi or it
# failed). NVCC_VERSION: nvcc --version's output. OUT_ARCHS: the list; OUT_SKIP: TRUE when the
# CUDA backend is skipped (native, no GPU, NS_CUDA AUTO: a NOTICE says how to build it anyway).
# "all": machine code for every major architecture from Volta to Hopper (70 V100, 75 T4/RTX 20,
# 80 A100, 86 RTX 30/A40, 89 L4/L40/RTX 40, 90 H100/H200) plus compute_90 PTX, which the driver
# compiles for later chips (Blackwell), for packages; CUDA 13 dropped Volta: 70 is left out there.
function(ns_cuda_pick_archs cuda archs smi_output nvcc_version out_archs out_skip)
  set(_list "")
  set(_skip FALSE)
  if(archs STREQUAL "native")
    string(REGEX MATCHALL "[0-9]+\\.[0-9]+" _caps "${smi_output}")
    foreach(_cap IN LISTS _caps)
      string(REPLACE "." "" _cap "${_cap}")
      list(APPEND _list ${_cap})
    endforeach()
    list(REMOVE_DUPLICATES _list)
    if(NOT _list)
      if(cuda STREQUAL "ON")
        set(archs "all")
      else()
        set(_skip TRUE)
        message(NOTICE "neurosolve: nvcc found but no GPU (nvidia-smi lists none): the CUDA backend is "
                       "skipped. To build it anyway: -DNS_CUDA=ON (every architecture, as for packages), "
                       "or -DCMAKE_CUDA_ARCHITECTURES=90 for one (make CMAKE_FLAGS=\"...\"; docs/install.md)")
      endif()
    endif()
  endif()
  if(archs STREQUAL "all")
    set(_list 70-real 75-real 80-real 86-real 89-real 90)
    if(nvcc_version MATCHES "release ([0-9]+)\\.")
      if(CMAKE_MATCH_1 GREATER_EQUAL 13)
        list(REMOVE_ITEM _list 70-real)
      endif()
    endif()
  elseif(NOT archs STREQUAL "native")
    set(_list ${archs})
  endif()
  set(${out_archs} "${_list}" PARENT_SCOPE)
  set(${out_skip} ${_skip} PARENT_SCOPE)
endfunction()
