#!/bin/sh
# Generates the manual pages from the binary's own --help texts, so that they
# cannot drift from the options:
#   sh man/mkman.sh CALLTRACE OUTDIR
# writes OUTDIR/calltrace.1 and OUTDIR/calltrace-COMMAND.1 for every command
# 'calltrace --help' lists, each with help2man from 'calltrace COMMAND --help'
# plus the hand-written sections (EXIT STATUS, EXAMPLES, ...) in
# man/calltrace-COMMAND.h2m.  The SEE ALSO sections are generated from the
# same command list.
set -eu
ct=$1
out=$2
here=$(cd "$(dirname "$0")" && pwd)

version=$("$ct" --version | awk '{print $2}')
[ -n "$version" ] || { echo "mkman: '$ct --version' printed no version" >&2; exit 1; }
# The "commands:" block of 'calltrace --help': "  NAME   one-line description".
commands=$("$ct" --help | awk '/^commands:/ {on = 1; next} on && NF == 0 {exit} on {print $1}')
[ -n "$commands" ] || { echo "mkman: no commands found in '$ct --help'" >&2; exit 1; }
describe() {
	"$ct" --help | awk -v c="$1" '/^commands:/ {on = 1; next} on && NF == 0 {exit}
		on && $1 == c {sub(/^ *[^ ]+ +/, ""); print}' | sed 's/-/\\-/g'
}

mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for c in $commands; do
	[ -f "$here/calltrace-$c.h2m" ] || {
		echo "mkman: command '$c' has no man/calltrace-$c.h2m (write its EXIT STATUS and EXAMPLES there)" >&2
		exit 1
	}
done

# SEE ALSO: the main page lists every command's page; each command's page
# lists calltrace(1) and the other commands' pages.
see_also() {
	printf '[SEE ALSO]\n'
	first=1
	for p in "$@"; do
		[ $first = 1 ] || printf ',\n'
		printf '.BR \\%%%s (1)' "$p"
		first=0
	done
	printf '\n'
}

# help2man runs "$ct $help_option" through the shell: quote the path.
qct="'$(printf '%s' "$ct" | sed "s/'/'\\\\''/g")'"

see_also $(for c in $commands; do echo "calltrace-$c"; done) > "$tmp/calltrace.see"
help2man --no-info --no-discard-stderr --section=1 --manual="calltrace manual" \
	--version-string="calltrace $version" \
	--include="$here/calltrace.h2m" --include="$tmp/calltrace.see" \
	--output="$tmp/calltrace.1" "$qct"
mv "$tmp/calltrace.1" "$out/calltrace.1"

for c in $commands; do
	see_also calltrace $(for o in $commands; do [ "$o" = "$c" ] || echo "calltrace-$o"; done) > "$tmp/$c.see"
	help2man --no-info --no-discard-stderr --section=1 --manual="calltrace manual" \
		--version-string="calltrace-$c (calltrace) $version" \
		--help-option="$c --help" --name="$(describe "$c")" \
		--include="$here/calltrace-$c.h2m" --include="$tmp/$c.see" \
		--output="$tmp/calltrace-$c.1" "$qct"
	mv "$tmp/calltrace-$c.1" "$out/calltrace-$c.1"
done
