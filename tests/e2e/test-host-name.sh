#!/usr/bin/env bash
# A host name is any UTS namespace's root's to choose (issue 28 item 12):
# "a/../../x" must not put a file beside the output directory, and "$(...)"
# must reach neither the file names nor the on-rotate hook's PERFREC_HOST.
# perfrecd records in a UTS namespace whose host name is such a name, with a
# directory "perfrecd-a" in the output directory, which the name would climb
# out of; the file must be in the output directory, named with only
# [A-Za-z0-9._-] in its host part, and the hook must see that same name.
# The hook, run by root without user=, also dumps what it got of the daemon
# (item 13): no AWS_SECRET_ACCESS_KEY, fds 0-2 only, no capabilities.
. "$(dirname "$0")/lib.sh"
require_events
command -v unshare >/dev/null || skip "unshare (util-linux) is not installed"
unshare --uts true 2>/dev/null || skip "cannot make a UTS namespace here"

name='a/../../x$(touch pwned)'
mkdir -p "$T/a/out/perfrecd-a"
cat >"$T/hook.sh" <<'HOOK'
#!/bin/sh
d=$(dirname "$0")
printf '%s\n' "$PERFREC_HOST" >"$d/hook.host.tmp"
env >"$d/hook.env"
ls /proc/self/fd >"$d/hook.fds"
grep -e '^Cap' -e '^NoNewPrivs' /proc/self/status >"$d/hook.status"
mv "$d/hook.host.tmp" "$d/hook.host"
HOOK
chmod 0755 "$T/hook.sh"
printf '[output]\non-rotate=%s\n' "$T/hook.sh" >"$T/conf"
# A descriptor the daemon inherits and does not mark close-on-exec: the hook must not get it.
(cd "$T" && AWS_SECRET_ACCESS_KEY=s3cr3t unshare --uts sh -c \
	'printf %s "$1" >/proc/sys/kernel/hostname && exec "$2" -c "$3" -o "$4" -e cpu-clock -F 99 -d 2 --socket "" 7<"$3"' \
	_ "$name" "$PERFRECD" "$T/conf" "$T/a/out" >"$T/log" 2>&1) || { cat "$T/log"; fail "perfrecd failed"; }
[ "$(cat /proc/sys/kernel/hostname)" != "$name" ] || fail "the host name leaked out of the namespace"

f=$(only_file "$T/a/out") || exit 1
stray=$(find "$T" -name '*.data*' ! -path "$T/a/out/*" | head -3)
[ -z "$stray" ] || fail "a file outside the output directory: $stray"
[ ! -e "$T/pwned" ] && [ ! -e "$T/a/out/pwned" ] || fail "the host name's \$(...) was run"
host=$(basename "$f" | sed -n 's/^perfrecd-\(.*\)-[0-9]\{8\}T[0-9]\{6\}\.[0-9]\{3\}Z-[0-9]*\.data$/\1/p')
[ -n "$host" ] || fail "$(basename "$f") is not PREFIX-HOST-TIME-SEQ.data"
[[ "$host" =~ ^[A-Za-z0-9_][A-Za-z0-9._-]*$ ]] || fail "host part '$host' of $(basename "$f") has unsafe characters"
note "host name '$name' is '$host' in $(basename "$f")"
grep -q "host name has characters" "$T/log" || { cat "$T/log"; fail "perfrecd does not say it changed the host name"; }
"$PERFRECCTL" verify "$f" >/dev/null || fail "perfrecctl verify rejected $f"

hooked() { [ -e "$T/hook.host" ]; }
wait_for 30 hooked || { cat "$T/log"; fail "the on-rotate hook did not run"; }
[ "$(cat "$T/hook.host")" = "$host" ] || fail "PERFREC_HOST is '$(cat "$T/hook.host")', not the file's '$host'"

# Item 13: what the hook got of a root daemon without user=.
grep -q AWS_SECRET_ACCESS_KEY "$T/hook.env" && fail "the hook got the daemon's AWS_SECRET_ACCESS_KEY"
[ "$(tr '\n' ' ' <"$T/hook.fds")" = "0 1 2 3 " ] || fail "the hook had fds $(tr '\n' ' ' <"$T/hook.fds")(3: ls's own)"
for k in CapInh CapPrm CapEff CapAmb; do
	grep -qx "$k:[[:space:]]*0000000000000000" "$T/hook.status" || { cat "$T/hook.status"; fail "the hook has capabilities ($k)"; }
done
grep -qx "NoNewPrivs:[[:space:]]*1" "$T/hook.status" || { cat "$T/hook.status"; fail "the hook may gain privileges (no_new_privs unset)"; }
exit 0
