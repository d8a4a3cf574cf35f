# cmake/library.cmake — libmeshplan as an installable library (included by CMakeLists.txt):
#   libmeshplan.so.0.1.0 (soname libmeshplan.so.0; the major version is the ABI: bump it when a
#   public struct or function signature changes), libmeshplan.so -> .so.0, libmeshplan.a,
#   include/meshplan/*.h, lib/pkgconfig/meshplan.pc, share/man/man1/meshplan.1 (generated from
#   `meshplan help` at build time), the bash completion and bin/meshplan.
#   cmake --install build --prefix /usr/local
include(GNUInstallDirs)

# The shared library is a second target over meshplan_lib's own sources, compiled again as
# position-independent code (the static archive the CLI, tests and benches link stays as it
# was), with meshplan_lib's include directories, definitions and dependencies read from it: a
# source or dependency added to meshplan_lib in CMakeLists.txt comes here by itself.
set(MESHPLAN_SOVERSION 0)
get_target_property(MESHPLAN_SO_SOURCES meshplan_lib SOURCES)
get_target_property(MESHPLAN_SO_DEPS meshplan_lib LINK_LIBRARIES)
add_library(meshplan_shared SHARED ${MESHPLAN_SO_SOURCES})
foreach(prop INCLUDE_DIRECTORIES COMPILE_DEFINITIONS COMPILE_OPTIONS)
  get_target_property(v meshplan_lib ${prop})
  if(v)
    set_property(TARGET meshplan_shared PROPERTY ${prop} ${v})
  endif()
endforeach()
target_include_directories(meshplan_shared INTERFACE ${CMAKE_SOURCE_DIR}/include)
target_link_libraries(meshplan_shared PRIVATE ${MESHPLAN_SO_DEPS})
set_target_properties(meshplan_shared PROPERTIES OUTPUT_NAME meshplan VERSION ${PROJECT_VERSION}
                      SOVERSION ${MESHPLAN_SOVERSION} POSITION_INDEPENDENT_CODE ON)
# The generated sources (embedded data) are made once, by meshplan_lib, before this compiles:
# two targets running one custom command at the same time would race on its output.
add_dependencies(meshplan_shared meshplan_lib)

# meshplan.pc: the shared library by default; `pkg-config --static` adds what the archive needs,
# derived from the same dependency list (PkgConfig::X -> its module, m -> -lm, OpenMP -> its
# flag, C++ sources -> -lstdc++).
set(MESHPLAN_PC_REQUIRES "")
set(MESHPLAN_PC_LIBS_PRIVATE "")
foreach(dep ${MESHPLAN_SO_DEPS})
  if(dep MATCHES "^PkgConfig::(.+)$")
    list(APPEND MESHPLAN_PC_REQUIRES ${${CMAKE_MATCH_1}_MODULE_NAME})
  elseif(dep STREQUAL "m")
    string(APPEND MESHPLAN_PC_LIBS_PRIVATE " -lm")
  elseif(dep STREQUAL "OpenMP::OpenMP_C")
    string(APPEND MESHPLAN_PC_LIBS_PRIVATE " ${OpenMP_C_FLAGS}")
  endif()
endforeach()
foreach(src ${MESHPLAN_SO_SOURCES})
  if(src MATCHES "\\.(cpp|cc|cxx)$" AND NOT MESHPLAN_PC_LIBS_PRIVATE MATCHES "stdc")
    string(APPEND MESHPLAN_PC_LIBS_PRIVATE " -lstdc++")
  endif()
endforeach()
list(JOIN MESHPLAN_PC_REQUIRES ", " MESHPLAN_PC_REQUIRES)
string(STRIP "${MESHPLAN_PC_LIBS_PRIVATE}" MESHPLAN_PC_LIBS_PRIVATE)
file(RELATIVE_PATH MESHPLAN_PC_UP /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
string(REGEX REPLACE "/$" "" MESHPLAN_PC_UP "${MESHPLAN_PC_UP}")
configure_file(${CMAKE_SOURCE_DIR}/meshplan.pc.in ${CMAKE_BINARY_DIR}/meshplan.pc @ONLY)

# The man page, from the CLI's own help so that it cannot drift from it.
add_custom_command(
  OUTPUT ${CMAKE_BINARY_DIR}/meshplan.1
  COMMAND ${CMAKE_COMMAND} -DMESHPLAN=$<TARGET_FILE:meshplan> -DOUT=${CMAKE_BINARY_DIR}/meshplan.1
          -DVERSION=${PROJECT_VERSION} -P ${CMAKE_SOURCE_DIR}/cmake/manpage.cmake
  DEPENDS meshplan ${CMAKE_SOURCE_DIR}/cmake/manpage.cmake
  COMMENT "Writing the man page from meshplan help")
add_custom_target(meshplan_man ALL DEPENDS ${CMAKE_BINARY_DIR}/meshplan.1)

install(TARGETS meshplan RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS meshplan_shared meshplan_lib
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
# With MESHPLAN_LTO the archive's objects are fat (CMakeLists.txt): installed as they are, a plain
# link against libmeshplan.a would run LTO over this GCC's IR (which another GCC version cannot
# read). The installed copy keeps their regular code only.
if(MESHPLAN_LTO_ACTIVE)
  install(CODE "execute_process(COMMAND \"${CMAKE_OBJCOPY}\" -R .gnu.lto_* -R .gnu.debuglto_*
    \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}/$<TARGET_FILE_NAME:meshplan_lib>\"
    RESULT_VARIABLE rc)
  if(rc)
    message(FATAL_ERROR \"meshplan: stripping the LTO sections from the installed archive failed\")
  endif()")
endif()
install(DIRECTORY ${CMAKE_SOURCE_DIR}/include/meshplan DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")
install(FILES ${CMAKE_BINARY_DIR}/meshplan.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
install(FILES ${CMAKE_BINARY_DIR}/meshplan.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${CMAKE_SOURCE_DIR}/completion/meshplan.bash
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME meshplan)

# The C examples, built with the tree (the install test builds examples/predict.c again against
# the installed library through pkg-config).
foreach(ex predict search trace)
  add_executable(example_${ex} ${CMAKE_SOURCE_DIR}/examples/${ex}.c)
  target_link_libraries(example_${ex} PRIVATE meshplan_lib)
endforeach()

if(BUILD_TESTING)
  # Each example runs and prints its answer.
  add_test(NAME example_predict COMMAND example_predict)
  set_tests_properties(example_predict PROPERTIES PASS_REGULAR_EXPRESSION
                       "tokens/s [0-9]+, MFU 0\\.[0-9]+, step [0-9.]+ s")
  add_test(NAME example_search COMMAND example_search llama3-8b h100-sxm5-80gb 8 64)
  set_tests_properties(example_search PROPERTIES PASS_REGULAR_EXPRESSION "1\\. +[0-9]+ tokens/s")
  add_test(NAME example_trace COMMAND example_trace ${CMAKE_BINARY_DIR}/example_step.json)
  set_tests_properties(example_trace PROPERTIES PASS_REGULAR_EXPRESSION "simulated [0-9.]+ s")
  # cmake --install to a temporary prefix, then the layout, soname, pkg-config build of
  # examples/predict.c (shared and static), the man page and the bash completion.
  # Under the sanitizers the program must be built with them too (their runtime comes first).
  set(MESHPLAN_EXAMPLE_CFLAGS "")
  if(MESHPLAN_SANITIZE)
    set(MESHPLAN_EXAMPLE_CFLAGS "-fsanitize=address,undefined,float-cast-overflow")
  endif()
  add_test(NAME install_prefix COMMAND ${CMAKE_SOURCE_DIR}/tests/install_test.sh ${CMAKE_BINARY_DIR}
           ${CMAKE_SOURCE_DIR})
  set_tests_properties(install_prefix PROPERTIES ENVIRONMENT
                       "CC=${CMAKE_C_COMPILER};EXAMPLE_CFLAGS=${MESHPLAN_EXAMPLE_CFLAGS}")

  # The Python package (python/): its pytest suite against the built library and CLI, and the
  # offline venv install with the README one-liner. Under the sanitizers Python loads the
  # instrumented library with their runtimes preloaded.
  set(MESHPLAN_PY_ENV "")
  if(MESHPLAN_SANITIZE)
    execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libasan.so
                    OUTPUT_VARIABLE asan OUTPUT_STRIP_TRAILING_WHITESPACE)
    execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libubsan.so
                    OUTPUT_VARIABLE ubsan OUTPUT_STRIP_TRAILING_WHITESPACE)
    set(MESHPLAN_PY_ENV "SANITIZER_PRELOAD=${asan}:${ubsan}")
  endif()
  foreach(t python_api python_install)
    add_test(NAME ${t} COMMAND ${CMAKE_SOURCE_DIR}/tests/${t}.sh ${CMAKE_BINARY_DIR} ${CMAKE_SOURCE_DIR})
    set_tests_properties(${t} PROPERTIES ENVIRONMENT "${MESHPLAN_PY_ENV}")
  endforeach()
endif()

if(BUILD_TESTING)
  # Every command line of README.md runs (tests/readme_commands.sh states the rule), and its
  # measured figures and sample outputs are what the tool prints now (scripts/readme_figures.py).
  add_test(NAME readme_commands COMMAND ${CMAKE_SOURCE_DIR}/tests/readme_commands.sh ${CMAKE_SOURCE_DIR}
           ${CMAKE_BINARY_DIR})
  add_test(NAME readme_figures COMMAND python3 ${CMAKE_SOURCE_DIR}/scripts/readme_figures.py
           --root ${CMAKE_SOURCE_DIR} --build ${CMAKE_BINARY_DIR})
  if(MESHPLAN_SANITIZE)
    set(MESHPLAN_README_ENV "${MESHPLAN_PY_ENV};README_TIMEOUT_S=300")
  else()
    set(MESHPLAN_README_ENV "README_TIMEOUT_S=240")
  endif()
  set_tests_properties(readme_commands PROPERTIES TIMEOUT 900 ENVIRONMENT "${MESHPLAN_README_ENV}")
  # Both run `cmake --install` on this build (which rewrites its install_manifest.txt).
  set_tests_properties(readme_commands install_prefix PROPERTIES RESOURCE_LOCK meshplan_install)
endif()
