#!/bin/sh
# A student's server in a mount namespace of its own (hub/jupyterhub_config.py, LimitedSpawner):
# the hub (root) runs
#     unshare --mount --propagation private -- sh private-tmp.sh USER KEEP TMP SHM -- SERVER...
# and this, still root inside the new namespace, puts a fresh tmpfs of TMP bytes on /tmp and on
# /var/tmp, one of SHM bytes on /dev/shm and a small one on /run/lock (the machine's
# world-writable folders), then becomes USER and runs the server (exec: the hub's pid is the
# server's). A write past a cap fails with ENOSPC; no other user sees these folders, and they go
# with the server's last process. KEEP (the hub's state folder: the homes, the exchange, the
# configuration) is bound back in where a new tmpfs would hide it (the tests keep it in /tmp).
# Any failure stops here, before the server starts: a student's server never runs unbounded
# by accident, nor as root.
set -eu
user=$1 keep=$2 tmp_size=$3 shm_size=$4
shift 4
[ "$1" = "--" ] && shift

private() {  # private FOLDER SIZE: a new tmpfs over FOLDER, made at /mnt and moved into place
    [ -d "$1" ] || return 0
    mount -t tmpfs -o "size=$2,mode=1777,nosuid,nodev" llmmath-private /mnt
    case "$keep/" in
        "$1"/*)
            inside="/mnt${keep#"$1"}"
            mkdir -p "$inside"
            mount --rbind "$keep" "$inside"
            ;;
    esac
    mount --move /mnt "$1"
}

private /tmp "$tmp_size"
private /var/tmp "$tmp_size"
private /dev/shm "$shm_size"
private /run/lock 1M
cd "$HOME"
exec setpriv --reuid="$user" --regid="$(id -g "$user")" --init-groups -- "$@"
