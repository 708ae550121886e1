# Calibration harness tests (calib/harness, docs/HARNESS.md), included from
# tests/CMakeLists.txt.
#
#   unit.rplan        replay planning and reporting: everywhere, no GPU
#   harness.formats   the measurement file and the nccl-tests text the
#                     harness writes, read back by calib's fitter readers
#   harness.cli       the CUDA harness's command line without a GPU: usage
#                     errors exit 2, a missing device exits 1 with a message
#                     (only where the harness is built)

# Until calib/CMakeLists.txt adds the harness itself, add it from here.
if(NOT TARGET ss_rplan)
  add_subdirectory(${PROJECT_SOURCE_DIR}/calib/harness ${PROJECT_BINARY_DIR}/calib/harness)
endif()

ss_unit_test(rplan ss_rplan)
target_compile_definitions(test_rplan PRIVATE SS_SOURCE_DIR="${PROJECT_SOURCE_DIR}")

if(TARGET ss_fit)
  add_executable(test_hx_formats ${PROJECT_SOURCE_DIR}/calib/harness/hx_formats_test.c)
  target_link_libraries(test_hx_formats PRIVATE ss_hxtext ss_fit PkgConfig::CMOCKA)
  target_compile_definitions(test_hx_formats PRIVATE SS_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  add_test(NAME harness.formats COMMAND test_hx_formats)
endif()

# Not named test_*: scripts/test.sh runs valgrind on those, and valgrind
# does not support the CUDA runtime (it reports the loader's reads when
# libcudart opens the driver). AddressSanitizer covers it instead.
if(TARGET ss_harness)
  add_executable(harness_cli ${PROJECT_SOURCE_DIR}/calib/harness/hx_cli_test.c)
  target_link_libraries(harness_cli PRIVATE ss_harness PkgConfig::CMOCKA)
  target_compile_definitions(harness_cli PRIVATE SS_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  add_test(NAME harness.cli COMMAND harness_cli)
endif()
