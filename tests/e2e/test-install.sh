#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# `make install` into a DESTDIR ships exactly the expected files with the
# configured paths baked in, the installed library is usable through its
# pkg-config file (a program compiles against the installed headers, links
# against the installed .so and runs), an edited configuration survives a
# reinstall and an uninstall, and `make uninstall` removes everything else.
. "$(dirname "$0")/lib.sh"
cd "$TOP" || exit 1

command -v pkg-config >/dev/null || skip "pkg-config is not installed"
command -v "${CC:-cc}" >/dev/null || skip "no C compiler"

D=$T/dest
mkdir -p "$D"
VERSION=$(sed -n 's/^VERSION := *//p' Makefile)
SOVERSION=$(sed -n 's/^SOVERSION := *//p' Makefile)
[ -n "$VERSION" ] && [ -n "$SOVERSION" ] || fail "cannot read VERSION/SOVERSION from the Makefile"

make -s install DESTDIR="$D" PREFIX=/usr >"$T/install.log" 2>&1 || { cat "$T/install.log"; fail "make install failed"; }

# --- every file, and nothing else ---------------------------------------
expected=(
	usr/sbin/perfrecd
	usr/bin/perfrecctl
	usr/lib/libperfrec.a
	"usr/lib/libperfrec.so.$VERSION"
	"usr/lib/libperfrec.so.$SOVERSION"
	usr/lib/libperfrec.so
	usr/lib/pkgconfig/libperfrec.pc
	usr/lib/systemd/system/perfrecd.service
	usr/lib/systemd/system/perfrecd.socket
	usr/lib/sysusers.d/perfrecd.conf
	usr/lib/tmpfiles.d/perfrecd.conf
	etc/perfrecd/perfrecd.conf
	usr/share/man/man1/perfrecctl.1
	usr/share/man/man3/libperfrec.3
	usr/share/man/man5/perfrecd.conf.5
	usr/share/man/man8/perfrecd.8
)
for h in lib/include/perfrec/*.h; do
	expected+=("usr/include/perfrec/$(basename "$h")")
done
for f in "${expected[@]}"; do
	[ -e "$D/$f" ] || { (cd "$D" && find . ! -type d | sort); fail "make install did not install /$f"; }
done
(cd "$D" && find . ! -type d | sed 's|^\./||' | sort) >"$T/installed"
printf '%s\n' "${expected[@]}" | sort >"$T/expected"
if ! cmp -s "$T/expected" "$T/installed"; then
	diff -u "$T/expected" "$T/installed"
	fail "make install wrote files that are not expected (+) or missed some (-)"
fi
note "installed ${#expected[@]} files"

for f in usr/sbin/perfrecd usr/bin/perfrecctl; do
	[ -x "$D/$f" ] || fail "/$f is not executable"
done
for l in "libperfrec.so.$SOVERSION" libperfrec.so; do
	[ -L "$D/usr/lib/$l" ] || fail "/usr/lib/$l is not a symlink"
	[ "$(readlink "$D/usr/lib/$l")" = "libperfrec.so.$VERSION" ] ||
		fail "/usr/lib/$l points to $(readlink "$D/usr/lib/$l"), not libperfrec.so.$VERSION"
done
soname=$(objdump -p "$D/usr/lib/libperfrec.so.$VERSION" 2>/dev/null | awk '$1 == "SONAME" {print $2}')
[ -z "$soname" ] || [ "$soname" = "libperfrec.so.$SOVERSION" ] || fail "SONAME is $soname"
"$D/usr/sbin/perfrecd" --version >/dev/null || fail "installed perfrecd --version failed"
cmp -s conf/perfrecd.conf "$D/etc/perfrecd/perfrecd.conf" || fail "installed perfrecd.conf differs from conf/perfrecd.conf"

# The paths were filled in for PREFIX=/usr, and no template marker is left.
if grep -rl '@[A-Z_]*@' "$D" --exclude='*.a' --exclude='*.so*' --exclude=perfrecd --exclude=perfrecctl; then
	fail "installed files still contain @PLACEHOLDER@ markers"
fi
grep -qx 'ExecStart=/usr/sbin/perfrecd -c /etc/perfrecd/perfrecd.conf' "$D/usr/lib/systemd/system/perfrecd.service" ||
	{ grep -n Exec "$D/usr/lib/systemd/system/perfrecd.service"; fail "perfrecd.service's ExecStart does not use SBINDIR=/usr/sbin"; }
grep -qx 'prefix=/usr' "$D/usr/lib/pkgconfig/libperfrec.pc" ||
	{ cat "$D/usr/lib/pkgconfig/libperfrec.pc"; fail "libperfrec.pc does not say prefix=/usr"; }

# --- the library through pkg-config ------------------------------------
# PKG_CONFIG_SYSROOT_DIR maps the .pc file's /usr paths into the DESTDIR.
export PKG_CONFIG_PATH=$D/usr/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$D PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1
pc_cflags=$(pkg-config --cflags libperfrec) || fail "pkg-config --cflags libperfrec failed"
pc_libs=$(pkg-config --libs libperfrec) || fail "pkg-config --libs libperfrec failed"
[ "$(pkg-config --modversion libperfrec)" = "$VERSION" ] || fail "pkg-config --modversion is not $VERSION"
note "cflags: $pc_cflags  libs: $pc_libs"
case " $pc_libs " in *" -L$D/usr/lib "*) ;; *) fail "pkg-config --libs does not point into the DESTDIR: $pc_libs" ;; esac

cat >"$T/prog.c" <<'EOF'
/* Uses the umbrella header, so every installed header must compile. */
#include <stdio.h>
#include <perfrec/perfrec.h>

int main(void)
{
	printf("%s %s\n", perfrec_event__type_name(PERF_RECORD_SAMPLE),
	       perfrec_event__type_name(PERF_RECORD_MMAP2));
	return 0;
}
EOF
# shellcheck disable=SC2086
${CC:-cc} -std=gnu11 -Wall -Werror -o "$T/prog" "$T/prog.c" $pc_cflags $pc_libs -Wl,-rpath,"$D/usr/lib" \
	2>"$T/cc.log" || { cat "$T/cc.log"; fail "a program using the installed headers and library does not build"; }
out=$("$T/prog") || fail "the program linked against the installed library failed to run"
[ "$out" = "SAMPLE MMAP2" ] || fail "the installed library answered '$out', expected 'SAMPLE MMAP2'"
ldd "$T/prog" | grep -q "$D/usr/lib/libperfrec.so.$SOVERSION" ||
	{ ldd "$T/prog"; fail "the program did not load the installed libperfrec.so.$SOVERSION"; }

# --- an edited configuration is never overwritten or deleted -----------
echo "# local edit" >>"$D/etc/perfrecd/perfrecd.conf"
make -s install DESTDIR="$D" PREFIX=/usr >"$T/install2.log" 2>&1 || { cat "$T/install2.log"; fail "second make install failed"; }
tail -1 "$D/etc/perfrecd/perfrecd.conf" | grep -qx '# local edit' || fail "make install overwrote an edited perfrecd.conf"

# --- uninstall -----------------------------------------------------------
make -s uninstall DESTDIR="$D" PREFIX=/usr >"$T/uninstall.log" 2>&1 || { cat "$T/uninstall.log"; fail "make uninstall failed"; }
left=$(cd "$D" && find . ! -type d | sed 's|^\./||' | sort)
[ "$left" = "etc/perfrecd/perfrecd.conf" ] ||
	{ echo "$left"; fail "make uninstall left files other than the edited perfrecd.conf behind"; }
rm -f "$D/etc/perfrecd/perfrecd.conf"

# An unedited install uninstalls to nothing at all.
make -s install DESTDIR="$D" PREFIX=/usr >"$T/install3.log" 2>&1 || { cat "$T/install3.log"; fail "third make install failed"; }
make -s uninstall DESTDIR="$D" PREFIX=/usr >"$T/uninstall2.log" 2>&1 || { cat "$T/uninstall2.log"; fail "make uninstall failed"; }
left=$(cd "$D" && find . ! -type d)
[ -z "$left" ] || { echo "$left"; fail "make uninstall left files behind"; }
note "uninstall removed everything"
exit 0
