# make on a probed libc (workloads.sh, wl_libc): recipes forked, run by
# the shell and waited for, two at a time; the output is the last one's
OUT = out1 out2 out3 out4 out5 out6
all: $(OUT)
	@for f in $(OUT); do printf '%s %s\n' "$$f" "$$(cat $$f)"; done
	@printf 'shell: %s\n' '$(shell printf "%05d" 7)'
out%: $(IN)
	@head -n $$(( $* * 15000 )) $(IN) | sort | sha256sum | cut -c1-16 >$@
