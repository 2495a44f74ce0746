#!/bin/sh
# readme_section.sh NAME: replaces the lines between <!-- NAME:begin --> and
# <!-- NAME:end --> in README.md with standard input. README.md is replaced
# atomically (temp file, then rename); it is left untouched on any error.
# Used by accuracy_report.sh and bench.sh.
set -eu
name=$1
root=$(cd "$(dirname "$0")/.." && pwd)
readme=$root/README.md
begin="<!-- $name:begin -->"
end="<!-- $name:end -->"

die() {
	echo "readme_section.sh: $*" >&2
	exit 1
}

[ -f "$readme" ] || die "$readme not found"
nb=$(grep -c -x -F "$begin" "$readme" || true)
ne=$(grep -c -x -F "$end" "$readme" || true)
if [ "$nb" != 1 ] || [ "$ne" != 1 ]; then
	die "README.md needs exactly one '$begin' line and one '$end' line (found $nb and $ne)"
fi
lb=$(grep -n -x -F "$begin" "$readme" | cut -d: -f1)
le=$(grep -n -x -F "$end" "$readme" | cut -d: -f1)
[ "$lb" -lt "$le" ] || die "'$end' comes before '$begin' in README.md"

section=$(mktemp "$root/.section.XXXXXX")
tmp=$(mktemp "$root/.README.md.XXXXXX")
trap 'rm -f "$section" "$tmp"' EXIT
trap 'exit 1' HUP INT TERM
cat >"$section"
[ -s "$section" ] || die "empty section for '$name'"
awk -v b="$begin" -v e="$end" -v f="$section" '
	$0 == b { print; while ((getline line < f) > 0) print line; skip = 1; next }
	$0 == e { skip = 0 }
	!skip { print }
' "$readme" >"$tmp"
mv "$tmp" "$readme"
echo "readme_section.sh: updated the $name section of $readme" >&2
