# Fuzz targets: tests/fuzz/fuzz_<name>.c defines LLVMFuzzerTestOneInput; its
# seed corpus is tests/fuzz/corpus/<name>/ (plus tests/data/<name>/ where
# recorded inputs already lived: mptcp, drops_record, ifs_sysfs). Crashing
# inputs found by libFuzzer are fixed and kept in the corpus.
#
# Normal build: each target links tests/fuzz/replay_main.c and replays its
# corpus once as the ordinary test fuzz.<name>.
# -DSYSOBS_FUZZ=ON (clang): each links libFuzzer instead; `cmake --build
# <dir> --target fuzz_targets` builds them all, scripts/fuzz.sh runs them.
if(SYSOBS_FUZZ)
	add_custom_target(fuzz_targets)
endif()

function(sysobs_fuzz_target name)
	set(src ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_${name}.c)
	set(corpus)
	foreach(d ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus/${name} ${CMAKE_CURRENT_SOURCE_DIR}/data/${name})
		if(IS_DIRECTORY ${d})
			list(APPEND corpus ${d})
		endif()
	endforeach()
	if(SYSOBS_FUZZ)
		add_executable(fuzz_${name} ${src})
		target_link_libraries(fuzz_${name} PRIVATE sysobs_core)
		target_link_options(fuzz_${name} PRIVATE -fsanitize=fuzzer)
		add_dependencies(fuzz_targets fuzz_${name})
		return()
	endif()
	add_executable(fuzz_${name} ${src} ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/replay_main.c)
	target_link_libraries(fuzz_${name} PRIVATE sysobs_core)
	add_test(NAME fuzz.${name} COMMAND fuzz_${name} ${corpus})
	set_tests_properties(fuzz.${name} PROPERTIES TIMEOUT 300)
endfunction()

# Targets of the API and agent parsers (the collectors' own are declared
# next to their tests).
sysobs_fuzz_target(query)
sysobs_fuzz_target(timeutil)
sysobs_fuzz_target(cursor)
sysobs_fuzz_target(config)
sysobs_fuzz_target(pbjson)
sysobs_fuzz_target(http_header)
sysobs_fuzz_target(negotiate)
sysobs_fuzz_target(webconfig)
# What receivers answer the exporters and the IFS alert push (issue 31)
sysobs_fuzz_target(clickhouse_verdict)
sysobs_fuzz_target(otlp_response)
sysobs_fuzz_target(alert_reply)
# What names a drop (kallsyms, cgroup paths, containerd's sandbox info), and
# the MPTCP collector's sock_diag resync
sysobs_fuzz_target(kallsyms)
sysobs_fuzz_target(cgroup_names)
sysobs_fuzz_target(mptcp_diag)
if(SYSOBS_BPF)
	# drop reasons from BTF; the encoders over every table (drops' is built
	# with BPF)
	sysobs_fuzz_target(btf_reasons)
	sysobs_fuzz_target(export_encode)
endif()
