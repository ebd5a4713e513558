#!/bin/sh
# make demo: build the bundled Go example, record it, show its call tree.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
out="$top/build/demo"
mkdir -p "$out"
export GOCACHE="$top/build/gocache" GOPATH="$top/build/gopath" GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local
(cd "$top/examples/demo" && go build -o "$out/demo" .)
run() { echo "\$ $*"; "$@"; }
if [ "$(id -u)" != 0 ]; then
	echo "calltrace: the demo records with BPF uprobes and needs root: run 'sudo make demo'" >&2
	exit 1
fi
run "$top/build/calltrace" record -o "$out/calltrace.data" -- "$out/demo"
echo
run "$top/build/calltrace" replay "$out/calltrace.data"
echo
echo "More: $top/build/calltrace replay --format=json $out/calltrace.data"
echo "      $top/build/calltrace graph $out/calltrace.data      (the calls merged by path)"
echo "      $top/build/calltrace replay --sched $out/calltrace.data   (where threads were off CPU)"
echo "      $top/build/calltrace record --parks -o $out/parks.data -- $out/demo   (where goroutines waited: main.main's wg.Wait)"
echo "      $top/build/calltrace list $out/demo -v"
