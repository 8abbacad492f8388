# bash on a probed libc (workloads.sh, wl_libc): traps on EXIT, USR1 and
# ERR, signals sent to itself, subshells with traps of their own,
# background jobs waited for, pipelines, command substitutions
f=$1
usr1=0
trap 'echo "exit trap: usr1 $usr1"' EXIT
trap 'usr1=$((usr1 + 1))' USR1
for i in 1 2 3 4 5; do kill -USR1 $$; done
echo "usr1 $usr1"
printf '%s words, %d lines\n' "$(head -n 100 "$f" | wc -w)" "$(wc -l <"$f")"
( trap 'echo "subshell exit trap"' EXIT; printf 'in a subshell %05d\n' 42 )
for j in 1 2 3 4; do
    (head -n "$((j * 20000))" "$f" | sha256sum | cut -c1-16 >"job$j") &
done
wait
for j in 1 2 3 4; do printf 'job %d %s\n' "$j" "$(cat "job$j")"; done
x=$(trap 'printf "substitution exit\n"' EXIT; printf '%x' 48879)
echo "x $x"
set -E
trap 'echo "err trap"' ERR
false || echo "false handled"
( false )
trap - ERR
n=$(awk 'NR % 3 == 0' "$f" | sort | uniq -c | sort -rn | head -n 3 | awk '{ s += $1 } END { print s }')
echo "awk sort uniq $n"
trap 'echo "TERM trapped"' TERM
kill -TERM $$
sleep 0.2 &
wait $!
echo "slept, status $?"
