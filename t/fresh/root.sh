# A fresh Debian 12 root for t/fresh/check-fresh.sh (sourced): made by
# debootstrap, cached as a tarball, unpacked anew for each run, entered with
# chroot with /proc, /sys and /dev in place, and left with nothing mounted.
# Needs: R (the root), W (the work directory), SUITE, VARIANT, MIRROR, SECURITY.

# the mount points at or under DIR, in the order they were mounted
mounts_under() {
    awk -v r="$1" '$2 == r || index($2, r "/") == 1 { print $2 }' /proc/self/mounts
}

# kill_inside DIR: kill each process whose root directory is DIR (only
# ours: started inside it), by its id; prints their commands
kill_inside() {
    for p in /proc/[0-9]*; do
        case $(readlink "$p/root" 2>/dev/null) in
            "$1"|"$1"/*)
                c=$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null)
                kill -KILL "${p#/proc/}" 2>/dev/null && echo "${p#/proc/} $c" ;;
        esac
    done
}

# unmount everything under DIR, the last mounted first (a lazy unmount if
# a plain one fails); fails if anything stays mounted
unmount_under() { # DIR
    for pass in 1 2 3; do
        [ -n "$(mounts_under "$1")" ] || return 0
        mounts_under "$1" | tac | while read -r m; do
            umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
        done
    done
    [ -z "$(mounts_under "$1")" ]
}

# remove DIR, a root we unpacked, never across a mount (a bound /dev left
# there would take the machine's device nodes with it)
remove_root() { # DIR
    [ -e "$1" ] || return 0
    unmount_under "$1" || { echo "# $1: cannot unmount $(mounts_under "$1" | tr '\n' ' ')"; return 1; }
    rm -rf --one-file-system "$1"
}

# base_stamp: what the cached base was made from; a different one, or a
# base older than KP_FRESH_MAX_DAYS days (7), is made again
base_stamp() {
    echo "$SUITE $VARIANT $MIRROR $(dpkg-query -W -f='${Version}' debootstrap 2>/dev/null)"
}

# fresh_base: $W/base.tar, a debootstrap root (cached); prints how it came
fresh_base() {
    tarball=$W/base.tar
    if [ -f "$tarball" ] && [ "$(cat "$W/base.stamp" 2>/dev/null)" = "$(base_stamp)" ] &&
       [ -z "$(find "$tarball" -mtime +"${KP_FRESH_MAX_DAYS:-7}")" ] && [ "${KP_FRESH_REFRESH:-0}" != 1 ]; then
        echo "cached, made $(( ($(date +%s) - $(stat -c %Y "$tarball")) / 3600 )) h ago"
        return 0
    fi
    new=$W/base.new
    remove_root "$new" || return 1
    t0=$(date +%s)
    debootstrap --variant="$VARIANT" "$SUITE" "$new" "$MIRROR" >"$W/debootstrap.log" 2>&1
    rc=$?
    unmount_under "$new"
    if [ $rc -ne 0 ]; then
        tail -n 5 "$W/debootstrap.log" | sed 's/^/# /'
        return 1
    fi
    tar -C "$new" --numeric-owner --xattrs -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball" &&
        base_stamp >"$W/base.stamp" || return 1
    remove_root "$new"
    echo "made in $(( $(date +%s) - t0 )) s"
}

# fresh_root: $R unpacked from the base, with the sources a Debian 12
# installer writes (the release, its updates, security); daemons a package
# installs are not started (policy-rc.d, as in any chroot: nothing would
# stop them)
fresh_root() {
    remove_root "$R" || return 1
    mkdir -p "$R" && tar -C "$R" --numeric-owner --xattrs -xf "$W/base.tar" || return 1
    rm -f "$R/etc/apt/sources.list"
    cat >"$R/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $MIRROR
Suites: $SUITE $SUITE-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $SECURITY
Suites: $SUITE-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    printf '#!/bin/sh\n# no daemon starts in this chroot\nexit 101\n' >"$R/usr/sbin/policy-rc.d"
    chmod 755 "$R/usr/sbin/policy-rc.d"
    cp /etc/resolv.conf "$R/etc/resolv.conf" 2>/dev/null
    # as on any Debian machine: a clone in /root lies under a directory
    # other users cannot enter
    chmod 700 "$R/root"
}

# bind_root: a new /proc, the machine's /sys and /dev (with what is mounted
# under them: /dev/pts, /dev/shm), kept from passing unmounts back
bind_root() {
    mount -t proc proc "$R/proc" &&
    mount --rbind /sys "$R/sys" && mount --make-rslave "$R/sys" &&
    mount --rbind /dev "$R/dev" && mount --make-rslave "$R/dev"
}

# in_root CMD...: CMD as root in the root, with the environment of a root
# login there and nothing of ours (no make variables, no KP_ knobs but
# those given as NAME=VALUE before CMD: env's own syntax)
in_root() {
    chroot "$R" /usr/bin/env -i HOME=/root USER=root LOGNAME=root SHELL=/bin/sh \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
}
