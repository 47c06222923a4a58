# The Debian package (issue 34; docs/operations.md): `scripts/package` runs CPack on build/ and
# writes build/xmtp-backend_<version>_amd64.deb. These install rules exist for CPack's staging
# tree only: nothing here is meant for `cmake --install` onto a machine.
#
# Version: the CMake project version, the same that --version and xmtp_backend_info report.
# Debug symbols: CPack's dbgsym package (xmtp-backend-dbgsym_<version>_amd64.ddeb): the shipped
# binary is stripped and its symbols go to /usr/lib/debug/.build-id/NN/REST.debug, where gdb finds
# them by the binary's build id (the binary also gets a .gnu_debuglink naming that file). A Release build carries its symbol table only; a
# RelWithDebInfo build directory (scripts/package DIR) puts full DWARF there too.
# Dependencies: computed by dpkg-shlibdeps from the libraries the binary links.

install(TARGETS xmtp-backend RUNTIME DESTINATION bin)
install(FILES deploy/systemd/xmtp-backend.service DESTINATION /lib/systemd/system)
install(FILES deploy/etc/config.toml DESTINATION /etc/xmtp-backend)
# The unit's EnvironmentFile holds secrets once filled in: root only.
install(FILES deploy/etc/env DESTINATION /etc/xmtp-backend PERMISSIONS OWNER_READ OWNER_WRITE)
# Whatever deploy/grafana and deploy/prometheus hold when the package is made (globbed at
# packaging time, not at configure time): the dashboard and the alert rules.
install(DIRECTORY deploy/grafana deploy/prometheus DESTINATION share/xmtp-backend OPTIONAL)
# The configuration's JSON Schema, named by the first line of /etc/xmtp-backend/config.toml.
install(FILES docs/schema/config.schema.json DESTINATION share/xmtp-backend/schema)
install(FILES deploy/debian/copyright README.md docs/operations.md docs/configuration.md
              docs/config.example.toml docs/telemetry.md docs/cluster.md
        DESTINATION share/doc/xmtp-backend)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME xmtp-backend)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "xmtp-backend maintainers <xmtp-backend@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "self-hosted backend for XMTP messaging clients")
# One string (a CMake list would put its ';' separators into the control file), lines under 80.
set(CPACK_PACKAGE_DESCRIPTION "xmtp-backend serves the XMTP client API (native gRPC and gRPC-Web\n\
on one port) on the embedded SQLite engine or on PostgreSQL with a streaming\n\
replica, with Prometheus metrics, health checks and a systemd unit that drains\n\
on stop.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# Not CPACK_STRIP_FILES: stripping at install time would leave CPack's dbgsym split nothing to
# split. The split strips (objcopy --strip-unneeded) once the symbols are copied out.
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE amd64)
# adduser runs in postinst; the shared libraries are computed and appended by CPack.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_DEBUGINFO_PACKAGE ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${CMAKE_CURRENT_SOURCE_DIR}/deploy/debian/conffiles
    ${CMAKE_CURRENT_SOURCE_DIR}/deploy/debian/postinst
    ${CMAKE_CURRENT_SOURCE_DIR}/deploy/debian/prerm
    ${CMAKE_CURRENT_SOURCE_DIR}/deploy/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
