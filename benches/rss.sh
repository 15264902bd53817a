#!/bin/sh
# Peak RSS and time of lpa parse, summarize, explain and explain --follow
# on adversarial inputs this script generates, at each size given:
#
#   benches/rss.sh            # 100M
#   benches/rss.sh 100M 1G    # both, to check memory stays flat
#
# Shapes: empty (empty lines), clients (a distinct client per line), dests
# (100k destinations x 100 endpoints), long (100 KB lines), zeros (one line
# of zero bytes), shapes (2 KB lines, each of its own shape: the shape
# caches full of masked text). SHAPES="clients shapes" runs only those.
# Needs GNU time (/usr/bin/time -v) and a release build (cargo build
# --release); LPA=path picks another binary. Inputs are written to
# ${TMPDIR:-/tmp}/lpa-rss and removed at the end.
set -eu

LPA=${LPA:-$(dirname "$0")/../target/release/lpa}
[ -x "$LPA" ] || { echo "no lpa at $LPA: cargo build --release" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "needs GNU time at /usr/bin/time" >&2; exit 2; }
DIR=${TMPDIR:-/tmp}/lpa-rss
mkdir -p "$DIR"
trap 'rm -rf "$DIR"' EXIT
[ $# -gt 0 ] || set -- 100M

bytes() {
	case $1 in
	*G) echo $((${1%G} << 30)) ;;
	*M) echo $((${1%M} << 20)) ;;
	*K) echo $((${1%K} << 10)) ;;
	*) echo "$1" ;;
	esac
}

# gen SHAPE BYTES > file: endless lines of the shape, cut at BYTES.
gen() {
	case $1 in
	empty) head -c "$2" /dev/zero | tr '\0' '\n' ;;
	zeros) head -c "$2" /dev/zero ;;
	clients) awk 'BEGIN { for (i = 0; ; i++) printf "[%10d.000000s]  WARN ThreadId(01) inbound:accept{client.addr=10.%d.%d.%d:%d}: linkerd_app_core::serve: Connection closed error=connection reset by peer\n", i / 1000, (i / 16777216) % 256, (i / 65536) % 256, (i / 256) % 256, 1024 + i % 60000 }' | head -c "$2" ;;
	dests) awk 'BEGIN { for (i = 0; ; i++) { d = i % 100000; e = int(i / 100000) % 100; printf "[%10d.000000s]  WARN ThreadId(01) outbound:proxy{addr=10.96.%d.%d:80}:service{ns=ns%d name=svc%d port=80}:endpoint{addr=10.%d.%d.%d:8080}: linkerd_reconnect: Failed to connect error=connect timed out after 1s\n", i / 1000, d / 256 % 256, d % 256, d % 50, d, d / 256 % 256, d % 256, e } }' | head -c "$2" ;;
	shapes) awk 'BEGIN { split("a b c d e f g h i j", l, " "); for (i = 0; ; i++) { s = sprintf("%d", i); w = ""; for (k = 1; k <= length(s); k++) w = w l[substr(s, k, 1) + 1]; t = w "x"; while (length(t) < 1900) t = t t; printf "[%10d.000000s]  INFO ThreadId(01) linkerd_app: %s\n", i / 1000, substr(t, 1, 1900) } }' | head -c "$2" ;;
	long) awk 'BEGIN { s = "x"; while (length(s) < 100000) s = s s; s = substr(s, 1, 100000); for (i = 0; ; i++) printf "[%10d.000000s]  WARN ThreadId(01) linkerd_app: %s\n", i, s }' | head -c "$2" ;;
	esac
}

# run LABEL CMD... < input: prints one table row.
run() {
	label=$1
	shift
	/usr/bin/time -v "$@" >/dev/null 2>"$DIR/time" || true
	kib=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$DIR/time")
	secs=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$DIR/time")
	printf '%-8s %6s  %-16s %10s %8s\n' "$shape" "$size" "$label" "$secs" "$((kib / 1024))"
}

printf '%-8s %6s  %-16s %10s %8s\n' shape size command "time" "peak MiB"
for size in "$@"; do
	n=$(bytes "$size")
	for shape in ${SHAPES:-empty clients dests long zeros shapes}; do
		f="$DIR/$shape.log"
		gen "$shape" "$n" >"$f"
		run parse "$LPA" parse "$f"
		run summarize "$LPA" summarize "$f"
		run explain "$LPA" explain "$f"
		run "explain --follow" sh -c '"$0" explain --follow --no-pager < "$1"' "$LPA" "$f"
		rm -f "$f"
	done
done
