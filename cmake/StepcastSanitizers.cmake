# -DSTEPCAST_SANITIZE=ON: AddressSanitizer + UndefinedBehaviorSanitizer over everything we compile (the CI
# sanitizer job, .ci/run). float-cast-overflow is named because GCC leaves it out of `undefined`; every
# report aborts (no recovery), so a test that trips one fails.
# -DSTEPCAST_FUZZ=ON (clang only): the same, plus libFuzzer's coverage instrumentation; fuzz/ then links
# each target with libFuzzer instead of the replay main (docs/reliability.md).
option(STEPCAST_SANITIZE "Build with AddressSanitizer + UndefinedBehaviorSanitizer" OFF)
option(STEPCAST_FUZZ "Build the fuzz targets with libFuzzer (clang; implies STEPCAST_SANITIZE)" OFF)

if(STEPCAST_FUZZ AND NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "STEPCAST_FUZZ needs clang (libFuzzer): -DCMAKE_CXX_COMPILER=clang++-14")
endif()
if(STEPCAST_SANITIZE OR STEPCAST_FUZZ)
  set(stepcast_sanitizers address,undefined,float-cast-overflow)
  add_compile_options(-fsanitize=${stepcast_sanitizers} -fno-sanitize-recover=all -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${stepcast_sanitizers})
  if(STEPCAST_FUZZ)
    add_compile_options(-fsanitize=fuzzer-no-link)
  endif()
endif()
add_feature_info(sanitize STEPCAST_SANITIZE "ASan + UBSan build (the CI sanitizer job)")
add_feature_info(fuzz STEPCAST_FUZZ "libFuzzer fuzz targets (clang)")
