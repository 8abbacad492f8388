# kprewrite_bake()'s POST_BUILD step (kprewriteConfig.cmake): runs
# kprewrite on the image just linked, in place. Exit 0 (all jump-optimized)
# and 2 (some int3) are successes; 3 (some refused) and 1 (an error) fail.
set(args --probe-file "${KPRW_PROBES}")
if(DEFINED KPRW_PROBE_FILE)
    list(APPEND args --probe-file "${KPRW_PROBE_FILE}")
endif()
execute_process(COMMAND "${KPRW_EXE}" ${args} "${KPRW_IMAGE}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 AND NOT rc EQUAL 2)
    message(FATAL_ERROR "kprewrite ${args} ${KPRW_IMAGE}: exit ${rc} (3: a probe was refused; its line above says why)")
endif()
