# test_sonata changes copies of the SONATA example with libhdf5 itself (bad
# input); without HDF5 it checks the refusal and skips.
if(NS_HAVE_HDF5)
  target_link_libraries(test_sonata PRIVATE hdf5::hdf5)
  target_compile_definitions(test_sonata PRIVATE NS_HAVE_HDF5=1)
endif()
