# SPDX-License-Identifier: MIT
# BandInstall.cmake - what an install notes for `make uninstall` and the uninstall target.
#
#   band_install_record_dirs()
#       Call before the first install() rule. At install time, before any file is
#       copied, the script <build>/band_install_dirs.cmake (from BandInstallDirs.cmake.in)
#       notes which of the directories band installs into do not exist yet under
#       $DESTDIR<prefix>: the prefix itself, include, include/band, <libdir>,
#       <libdir>/pkgconfig, <libdir>/cmake, <libdir>/cmake/band, share, share/doc,
#       share/doc/band, share/man and its man3 and man7. It writes them to
#       <build>/install_dirs.txt beside CMake's install_manifest.txt, and $DESTDIR<prefix>
#       to <build>/install_root.txt.
#   band_add_uninstall_target()
#       Adds the target `uninstall` (`band_uninstall` when band is a subproject), which
#       runs cmake/BandUninstall.cmake on this build tree.
#
# Uninstalling removes every file of install_manifest.txt (the last install from this
# tree), then every directory that is now empty and was either noted in install_dirs.txt
# or lies at or under a directory named "band" below the prefix (include/band,
# <libdir>/cmake/band, share/doc/band). Directories that existed before band was
# installed, and any directory that is not empty, are left alone.

include_guard(GLOBAL)
include(GNUInstallDirs)

function(band_install_record_dirs)
    set(_rel
        "${CMAKE_INSTALL_INCLUDEDIR}"
        "${CMAKE_INSTALL_INCLUDEDIR}/band"
        "${CMAKE_INSTALL_LIBDIR}"
        "${CMAKE_INSTALL_LIBDIR}/pkgconfig"
        "${CMAKE_INSTALL_LIBDIR}/cmake"
        "${CMAKE_INSTALL_LIBDIR}/cmake/band"
        "${CMAKE_INSTALL_DATAROOTDIR}"
        "${CMAKE_INSTALL_DATAROOTDIR}/doc"
        "${CMAKE_INSTALL_DOCDIR}"
        "${CMAKE_INSTALL_MANDIR}"
        "${CMAKE_INSTALL_MANDIR}/man3"
        "${CMAKE_INSTALL_MANDIR}/man7")
    list(REMOVE_DUPLICATES _rel)
    set(BAND_INSTALL_REL_DIRS "")
    foreach(_d IN LISTS _rel)
        string(APPEND BAND_INSTALL_REL_DIRS " \"${_d}\"")
    endforeach()
    set(BAND_INSTALL_RECORD_DIR "${PROJECT_BINARY_DIR}")
    configure_file("${PROJECT_SOURCE_DIR}/cmake/BandInstallDirs.cmake.in"
        "${PROJECT_BINARY_DIR}/band_install_dirs.cmake" @ONLY)
    install(SCRIPT "${PROJECT_BINARY_DIR}/band_install_dirs.cmake")
endfunction()

function(band_add_uninstall_target)
    if(PROJECT_IS_TOP_LEVEL AND NOT TARGET uninstall)
        set(_name uninstall)
    else()
        set(_name band_uninstall)
    endif()
    add_custom_target(${_name}
        COMMAND "${CMAKE_COMMAND}" "-DBAND_BUILD_DIR=${PROJECT_BINARY_DIR}"
            -P "${PROJECT_SOURCE_DIR}/cmake/BandUninstall.cmake"
        COMMENT "Removing what the last install from ${PROJECT_BINARY_DIR} installed"
        VERBATIM)
endfunction()
