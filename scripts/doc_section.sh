#!/bin/sh
# doc_section.sh FILE NAME: replaces the lines between <!-- NAME:begin -->
# and <!-- NAME:end --> in FILE (README.md or docs/*.md, relative to the
# checkout) with standard input. FILE is replaced atomically (temp file,
# then rename); it is left untouched on any error. Used by the report
# scripts (accuracy_report.sh, train_default.sh, fusion_report.sh,
# whatif_study.sh, scale_study.sh, bench.sh).
set -eu
[ $# -eq 2 ] || { echo "usage: doc_section.sh FILE NAME" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
target=$root/$1
name=$2
doc=$1
begin="<!-- $name:begin -->"
end="<!-- $name:end -->"

die() {
	echo "doc_section.sh: $*" >&2
	exit 1
}

[ -f "$target" ] || die "$target not found"
nb=$(grep -c -x -F "$begin" "$target" || true)
ne=$(grep -c -x -F "$end" "$target" || true)
if [ "$nb" != 1 ] || [ "$ne" != 1 ]; then
	die "$doc needs exactly one '$begin' line and one '$end' line (found $nb and $ne)"
fi
lb=$(grep -n -x -F "$begin" "$target" | cut -d: -f1)
le=$(grep -n -x -F "$end" "$target" | cut -d: -f1)
[ "$lb" -lt "$le" ] || die "'$end' comes before '$begin' in $doc"

section=$(mktemp "$root/.section.XXXXXX")
tmp=$(mktemp "$(dirname "$target")/.doc.XXXXXX")
trap 'rm -f "$section" "$tmp"' EXIT
trap 'exit 1' HUP INT TERM
cat >"$section"
[ -s "$section" ] || die "empty section for '$name'"
awk -v b="$begin" -v e="$end" -v f="$section" '
	$0 == b { print; while ((getline line < f) > 0) print line; skip = 1; next }
	$0 == e { skip = 0 }
	!skip { print }
' "$target" >"$tmp"
mv "$tmp" "$target"
echo "doc_section.sh: updated the $name section of $doc" >&2
