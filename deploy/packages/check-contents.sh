#!/usr/bin/env bash
# Checks the installed commap packages against the table of paths in
# docs/install.md ("What each package installs"): every path listed for a
# package is in its dpkg -L and on disk, and those marked "(conffile)" are
# its conffiles.  Then what the maintainer scripts made: the spool
# root-owned 0700, the system user commap and its /var/lib/commap.
#
#   deploy/packages/check-contents.sh docs/install.md
set -euo pipefail
doc=${1:?usage: check-contents.sh docs/install.md}
fail=0
bad() { echo "check-contents: $*" >&2; fail=1; }

multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null ||
	gcc -print-multiarch)
# Rows "| `PACKAGE` | `/PATH` | what |"; <multiarch> stands for the triplet.
rows=$(sed -n 's/^| `\(commap[a-z-]*\)` | `\(\/[^`]*\)` | \(.*\) |$/\1 \2 \3/p' "$doc" |
	sed "s/<multiarch>/$multiarch/")
[ "$(echo "$rows" | grep -c .)" -ge 10 ] ||
	bad "$doc lists fewer than 10 packaged paths: the table was not found"

while read -r pkg path what; do
	[ -n "$pkg" ] || continue
	dpkg -L "$pkg" 2>/dev/null | grep -qxF "$path" ||
		bad "$path: not in dpkg -L $pkg, as $doc says"
	[ -e "$path" ] || bad "$path: listed by $doc for $pkg, missing on disk"
	case $what in
	*'(conffile)'*)
		dpkg-query -W -f='${Conffiles}\n' "$pkg" | awk '{print $1}' |
			grep -qxF "$path" || bad "$path: not a conffile of $pkg" ;;
	esac
done <<<"$rows"
echo "check-contents: $(echo "$rows" | grep -c .) paths of $doc checked"

# What the docs say the packaged settings are.
grep -qE '^optional /usr/lib/.*/slurm-wlm/commap_spank\.so conf=/etc/commap/commap\.conf$' \
	/etc/slurm/plugstack.conf.d/commap.conf ||
	bad "plugstack.conf.d/commap.conf is not one optional line naming /etc/commap/commap.conf"
grep -qx 'default=off' /etc/commap/commap.conf || bad "commap.conf: not default=off"
grep -qx 'service=' /etc/commap/commap.conf || bad "commap.conf: a service is named"
grep -q '/usr/local' /etc/commap/commap.conf /etc/commap/service.conf \
	/etc/slurm/plugstack.conf.d/commap.conf &&
	bad "a packaged settings file names /usr/local"

# The maintainer scripts' work.
[ "$(stat -c '%U:%G %a' /var/spool/commap 2>/dev/null)" = "root:root 700" ] ||
	bad "/var/spool/commap is not root:root 0700: $(stat -c '%U:%G %a' /var/spool/commap 2>&1)"
getent passwd commap >/dev/null || bad "no system user commap"
uid=$(id -u commap 2>/dev/null || echo 0)
[ "$uid" -gt 0 ] && [ "$uid" -lt 1000 ] || bad "user commap is not a system user (uid $uid)"
[ "$(stat -c '%U:%G %a' /var/lib/commap 2>/dev/null)" = "commap:commap 750" ] ||
	bad "/var/lib/commap is not commap:commap 0750: $(stat -c '%U:%G %a' /var/lib/commap 2>&1)"
[ $fail -eq 0 ] || exit 1
echo "check-contents: ok"
