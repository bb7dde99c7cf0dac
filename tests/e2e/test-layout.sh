#!/bin/bash
# The source layout README.md describes, held to the tree and the built
# objects: lib/ holds libperfrec's sources and only its installed headers
# (lib/include/perfrec/), private headers live in internal/, and internal/
# defines no perfrec_* name (libperfrec.map exports those); the folders call
# one way (nm: no object of lib/ or internal/ refers to a symbol an object
# of daemon/, views/ or tools/ defines, none of views/ to one of tools/ or
# daemon/, none of daemon/ to one of views/ or tools/); libperfrec.so
# exports perfrec_* names only; and the views library holds views/ alone.
. "$(dirname "$0")/lib.sh"
cd "$TOP" || exit 1
command -v nm >/dev/null || fail "nm (binutils) is not installed"
stray=$(find lib -name '*.h' ! -path 'lib/include/perfrec/*' ! -path 'lib/bpf/*' | LC_ALL=C sort)
[ -z "$stray" ] || fail "headers in lib/ that are not installed (internal/ is their place): $(echo $stray)"
for d in lib internal daemon views tools; do
	compgen -G "$d/*.o" >/dev/null || fail "no objects in $d/ (make all first)"
done
leak=$(nm -g --defined-only internal/*.o | awk '$3 ~ /^perfrec_/ {print $3}')
[ -z "$leak" ] || fail "internal/ defines public names: $(echo $leak)"

# defined DIR...: the global symbols the objects of DIRs define.
defined() { for d; do nm -g --defined-only "$d"/*.o; done | awk 'NF == 3 {print $3}' | LC_ALL=C sort -u; }
# calls FROM TO...: the symbols objects of FROM take from objects of TOs, as "FROM/x.o: sym".
calls() {
	local from=$1 o; shift
	defined "$@" >"$T/to"
	for o in "$from"/*.o; do
		nm -u "$o" | awk '{print $NF}' | LC_ALL=C sort -u | LC_ALL=C comm -12 - "$T/to" | sed "s|^|$o: |"
	done
}
for rule in "lib daemon views tools" "internal daemon views tools" "views tools daemon" "daemon views tools"; do
	set -- $rule
	bad=$(calls "$@")
	[ -z "$bad" ] || { echo "$bad"; fail "$1/ calls into $(shift; echo "$*" | sed 's/ /\/, /g')/ (above)"; }
done
note "lib/, internal/, daemon/, views/, tools/: the calls run one way"

so=$(ls lib/libperfrec.so.*.*.* 2>/dev/null | head -1)
[ -n "$so" ] || fail "no lib/libperfrec.so.X.Y.Z (make all first)"
other=$(nm -D --defined-only "$so" | awk '$2 != "A" && $3 !~ /^perfrec_/ {print $3}')
[ -z "$other" ] || fail "$so exports other names than perfrec_*: $(echo $other)"
note "$so exports $(nm -D --defined-only "$so" | awk '$2 != "A"' | wc -l) perfrec_* names"

[ -e build/libperfrec-views.a ] || fail "no build/libperfrec-views.a (make all first)"
members=$(ar t build/libperfrec-views.a | grep -v '\.pb-c\.o$' | LC_ALL=C sort)
want=$(cd views && ls *.c | sed 's/\.c$/.o/' | LC_ALL=C sort)
[ "$members" = "$want" ] || fail "libperfrec-views.a holds $(echo $members), views/ has $(echo $want)"
echo "OK"
