# mptcp collector: test tools, unit tests, fuzz target and integration tests.
# Included from tests/CMakeLists.txt (one line), so the tools land in
# ${CMAKE_BINARY_DIR}/tests/ next to the other test binaries.

# MPTCP client/server (IPPROTO_MPTCP) and the event recorder.
add_executable(mptcp_peer ${CMAKE_CURRENT_SOURCE_DIR}/tools/mptcp_peer.c)
add_executable(mptcp_capture ${CMAKE_CURRENT_SOURCE_DIR}/tools/mptcp_capture.c)
target_link_libraries(mptcp_capture PRIVATE sysobs_core)

sysobs_unit_test(mptcp_decode)
sysobs_unit_test(mptcp_state)
sysobs_unit_test(mptcp_diag)
sysobs_unit_test(mptcp_table)
sysobs_unit_test(mptcp_mib)
sysobs_unit_test(mptcp_subflow_info)
sysobs_unit_test(mptcp_rec)
# the event path through the recording sink: raw genetlink datagrams (no root)
sysobs_unit_test(collector_mptcp ${CMAKE_CURRENT_SOURCE_DIR}/unit/recording_sink.c)
sysobs_fuzz_target(mptcp)
sysobs_fuzz_target(mptcp_rec)

# Integration tests (root + kernel MPTCP; SKIP otherwise). They need the tools.
sysobs_integration_test(mptcp)
sysobs_integration_test(mptcp_burst)
sysobs_integration_test(mptcp_ipv6)
sysobs_integration_test(mptcp_truth)
sysobs_integration_test(mptcp_ids)
sysobs_integration_test(mptcp_subflow)
sysobs_integration_test(mptcp_side)
sysobs_integration_test(mptcp_recreate)
sysobs_integration_test(mptcp_replay)
