# Warnings for gpucost's own targets only (never forced on embedding projects).
function(gpucost_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wno-unused-parameter -Wno-missing-field-initializers)
  if(GPUCOST_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
