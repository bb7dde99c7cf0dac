#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Load for the unwind cache part of the bench: runs, over and over until
# SECS have passed, each of a fixed list of ordinary programs on a data
# file, so that a recording made meanwhile has samples in many distinct
# executables and in the libraries they pull in (libz, libbz2, liblzma,
# libzstd, libcrypto, libpcre2, libperl, libpython...).  Each does real work
# on the file (hashing, compressing, sorting, matching) rather than print
# its --version, so that samples land in its own code and not only in the
# dynamic loader.  Only programs that read a file and write stdout are
# listed: nothing here changes the system.  Programs not installed are left
# out.  Prints "programs N" (distinct programs run) and "runs N".
#
#   many-binaries.sh DATAFILE SECS
set -u
export D=$1
secs=$2
# One shell command per line, run by bash -c with the data file in $D.
cmds=$(cat <<'LIST'
cat "$D"
tac "$D"
sort "$D"
sort -n "$D"
uniq "$D"
wc "$D"
cksum "$D"
sum "$D"
md5sum "$D"
sha1sum "$D"
sha224sum "$D"
sha256sum "$D"
sha384sum "$D"
sha512sum "$D"
b2sum "$D"
base64 "$D"
base32 "$D"
basenc --base16 "$D"
od -x "$D"
hexdump -C "$D"
xxd "$D"
nl "$D"
fold -w 20 "$D"
fmt "$D"
pr "$D"
expand "$D"
unexpand -a "$D"
cut -c1-8 "$D"
paste "$D" "$D"
head -c 1000000 "$D"
tail -n 1000 "$D"
rev "$D"
tr a-z A-Z < "$D"
shuf "$D"
grep -c 7 "$D"
sed s/a/b/g "$D"
mawk '{ n += length($0) } END { print n }' "$D"
gawk '{ n += length($0) } END { print n }' "$D"
perl -ne '$n += length; END { print $n }' "$D"
python3 -c 'import sys; print(sum(map(len, open(sys.argv[1]))))' "$D"
gzip -c "$D"
bzip2 -c "$D"
xz -T1 -c "$D"
zstd -c "$D"
lz4 -c "$D"
strings "$D"
cmp "$D" "$D"
diff "$D" "$D"
comm "$D" "$D"
join "$D" "$D"
split -n 1/4 "$D"
file "$D"
openssl dgst -sha256 "$D"
openssl enc -aes-128-cbc -pbkdf2 -pass pass:x -in "$D"
iconv -f latin1 -t utf-8 "$D"
numfmt --invalid=ignore --field=1 --to=si < "$D"
factor 1234567890123 9876543210987
seq 1 200000
tsort "$D"
ptx "$D"
readelf -a /usr/bin/ls
objdump -d /usr/bin/true
nm -D /usr/lib/x86_64-linux-gnu/libc.so.6
size /usr/bin/ls
gpg --print-md SHA256 "$D"
jq -R length "$D"
sqlite3 :memory: 'select 1'
bc -l <<< 's(1) * c(1)'
dc -e 100k2vp
LIST
)
end=$(($(date +%s) + secs))
declare -A seen=()
runs=0
while [ "$(date +%s)" -lt "$end" ]; do
	while IFS= read -r line; do
		[ "$(date +%s)" -lt "$end" ] || break
		prog=${line%% *}
		command -v "$prog" >/dev/null 2>&1 || continue
		timeout 5 bash -c "$line" < /dev/null >/dev/null 2>&1
		seen[$prog]=1
		runs=$((runs + 1))
	done <<< "$cmds"
done
echo "programs ${#seen[@]}"
echo "runs $runs"
