# Warnings on, per target (never globally, so third-party headers keep their own flags).
function(stepcast_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor)
endfunction()
