# Third-party dependencies, all from Debian packages (scripts/setup.sh installs
# them). Each missing one stops the configure step with the package to install.
find_package(PkgConfig REQUIRED)

function(hs_require_pkg var module debian)
  pkg_check_modules(${var} IMPORTED_TARGET ${module})
  if(NOT ${var}_FOUND)
    message(FATAL_ERROR "hetsim needs ${module}: install the Debian package '${debian}' "
                        "(or run scripts/setup.sh)")
  endif()
endfunction()

hs_require_pkg(CJSON libcjson libcjson-dev)
hs_require_pkg(IGRAPH igraph libigraph-dev)
hs_require_pkg(GSL gsl libgsl-dev)

# GLPK ships no pkg-config file on Debian.
find_path(GLPK_INCLUDE_DIR glpk.h)
find_library(GLPK_LIBRARY glpk)
if(NOT GLPK_INCLUDE_DIR OR NOT GLPK_LIBRARY)
  message(FATAL_ERROR "hetsim needs GLPK: install the Debian package 'libglpk-dev' (or run scripts/setup.sh)")
endif()
add_library(hs_glpk INTERFACE)
target_include_directories(hs_glpk INTERFACE ${GLPK_INCLUDE_DIR})
target_link_libraries(hs_glpk INTERFACE ${GLPK_LIBRARY})

find_library(HS_LIBM m)
find_package(Threads REQUIRED)
