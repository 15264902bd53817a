#!/usr/bin/env bash
# Throughput comparison of `lpa` against `wc -l` on a large generated gateway log.
#
# Usage (from the project root):
#   benches/compare.sh [SIZE] [RUNS]          # defaults: 1G 5
#
# What it does:
#   1. cargo build --release --example gen --bin lpa      (skipped when SKIP_BUILD=1)
#   2. generates $BENCH_DIR/gateway-SIZE.log with `gen --size SIZE --seed 1` unless it already exists
#   3. warms the page cache (cat FILE > /dev/null)
#   4. runs `wc -l FILE`, `lpa parse FILE`, `lpa summarize FILE`, `lpa explain FILE` (stdout to /dev/null)
#      RUNS times each; reports the median wall time, the ratio to `wc -l`, MB/s (1 MB = 10^6 bytes) and
#      the peak RSS (max over the runs, from /usr/bin/time -f %M).
#
# Environment overrides:
#   LPA=path        lpa binary (default target/release/lpa), e.g. LPA=/bin/cat to test the script itself
#   GEN=path        generator binary (default target/release/examples/gen)
#   BENCH_DIR=dir   where the generated log lives (default target/bench)
#   SKIP_BUILD=1    do not run cargo build
#
# Needs bash, python3 and GNU time (/usr/bin/time; `apt-get install time`) for the RSS column.

set -euo pipefail
export LC_ALL=C

SIZE="${1:-1G}"
RUNS="${2:-5}"
LPA="${LPA:-target/release/lpa}"
GEN="${GEN:-target/release/examples/gen}"
BENCH_DIR="${BENCH_DIR:-target/bench}"
TIME_BIN="${TIME_BIN:-/usr/bin/time}"

die() {
    echo "compare.sh: $*" >&2
    exit 1
}

[[ -f Cargo.toml ]] || die "run this from the project root (no Cargo.toml in $PWD)"
[[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || die "RUNS must be a positive integer, got '$RUNS'"
[[ "$SIZE" =~ ^[0-9]+([KkMmGgTt](i?[Bb])?)?$ ]] || die "SIZE must look like 64M, 1G, 512K or a byte count, got '$SIZE'"
command -v python3 > /dev/null || die "python3 is required"

if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
    echo "building: cargo build --release --example gen --bin lpa" >&2
    cargo build --release --example gen --bin lpa
fi
if [[ "$LPA" != */* ]]; then
    LPA="$(command -v "$LPA" || true)"
fi
[[ -n "$LPA" && -x "$LPA" ]] || die "lpa binary not found or not executable: ${LPA:-<empty>} (build it, or set LPA=...)"

FILE="$BENCH_DIR/gateway-$SIZE.log"
if [[ ! -s "$FILE" ]]; then
    [[ -x "$GEN" ]] || die "generator not found: $GEN (build it with cargo build --release --example gen, or set GEN=...)"
    mkdir -p "$BENCH_DIR"
    echo "generating $FILE (gen --size $SIZE --seed 1 --scenario gateway) ..." >&2
    if ! "$GEN" --size "$SIZE" --seed 1 --scenario gateway > "$FILE.tmp"; then
        rm -f "$FILE.tmp"
        die "generation failed"
    fi
    mv "$FILE.tmp" "$FILE"
else
    echo "reusing $FILE (delete it to regenerate)" >&2
fi

have_time=1
if [[ ! -x "$TIME_BIN" ]]; then
    have_time=0
    echo "compare.sh: warning: $TIME_BIN not found, peak RSS will be n/a (install it: apt-get install time)" >&2
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

echo "warming the page cache ..." >&2
cat "$FILE" > /dev/null

FILE_BYTES="$(wc -c < "$FILE")"
LINES="$(wc -l < "$FILE")"
FILE_BYTES="${FILE_BYTES//[[:space:]]/}"
LINES="${LINES//[[:space:]]/}"
CPU="$(grep -m1 -E '^(model name|Hardware|Processor|cpu model)[[:space:]]*:' /proc/cpuinfo 2> /dev/null | cut -d: -f2- | sed 's/^ *//' || true)"
CPU="${CPU:-unknown}"
NPROC="$(nproc 2> /dev/null || echo '?')"
COMMIT="$(git rev-parse --short HEAD 2> /dev/null || echo 'n/a')"

# Wall clock with µs resolution: bash 5's $EPOCHREALTIME (no fork), else GNU date.
if [[ -n "${EPOCHREALTIME:-}" ]]; then
    clock() { CLOCK="$EPOCHREALTIME"; }
else
    clock() { CLOCK="$(date +%s.%N)"; }
fi

# results file: label \t exit-codes \t times \t rss-kb   (comma-separated lists)
results="$tmp/results.tsv"
: > "$results"

bench() {
    local label="$1"
    shift
    local times="" rsss="" rcs="" i t0 t1 rc rss
    for ((i = 1; i <= RUNS; i++)); do
        rc=0
        clock
        t0="$CLOCK"
        if ((have_time)); then
            "$TIME_BIN" -f %M -o "$tmp/rss" "$@" > /dev/null 2> "$tmp/err" || rc=$?
        else
            "$@" > /dev/null 2> "$tmp/err" || rc=$?
        fi
        clock
        t1="$CLOCK"
        if ((have_time)); then
            # GNU time prepends "Command exited with non-zero status N" on failure: %M is the last line.
            rss="$(tail -n 1 "$tmp/rss" 2> /dev/null || true)"
            [[ "$rss" =~ ^[0-9]+$ ]] || rss=""
        else
            rss=""
        fi
        times+="${times:+,}$(python3 -c "print(f'{$t1 - $t0:.6f}')")"
        rsss+="${rsss:+,}${rss}"
        rcs+="${rcs:+,}${rc}"
        if ((rc != 0)) && ((i == 1)); then
            echo "compare.sh: warning: '$label' exited with status $rc; stderr:" >&2
            head -n 5 "$tmp/err" | sed 's/^/    /' >&2
        fi
        printf '  %-14s run %d/%d: %ss\n' "$label" "$i" "$RUNS" "${times##*,}" >&2
    done
    printf '%s\t%s\t%s\t%s\n' "$label" "$rcs" "$times" "$rsss" >> "$results"
}

echo "benchmarking ($RUNS runs each) ..." >&2
bench "wc -l" wc -l "$FILE"
bench "lpa parse" "$LPA" parse "$FILE"
bench "lpa summarize" "$LPA" summarize "$FILE"
bench "lpa explain" "$LPA" explain "$FILE"

python3 - "$results" "$FILE" "$FILE_BYTES" "$LINES" "$NPROC" "$CPU" "$RUNS" "$LPA" "$COMMIT" << 'PY'
import statistics, sys

results, path, size, lines, nproc, cpu, runs, lpa, commit = sys.argv[1:]
size, lines = int(size), int(lines)

def human(n):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{n} B"
        n /= 1024

print(f"# nproc={nproc}  cpu={cpu}")
print(f"# file={path}  size={size} bytes ({human(size)})  lines={lines}")
print(f"# runs={runs}  lpa={lpa}  commit={commit}")
rows = []
for row in open(results):
    label, rcs, times, rsss = row.rstrip("\n").split("\t")
    ts = [float(t) for t in times.split(",")]
    rss = [int(r) for r in rsss.split(",") if r]
    bad = sorted({int(c) for c in rcs.split(",") if c != "0"})
    rows.append((label, statistics.median(ts), max(rss) if rss else None, bad))

base = rows[0][1]
hdr = ("command", "median s", "x wc -l", "MB/s", "peak RSS MiB")
fmt = "{:<15} {:>10} {:>8} {:>9} {:>13}  {}"
print(fmt.format(*hdr, "").rstrip())
print(fmt.format(*("-" * len(h) for h in hdr), "").rstrip())
for label, med, rss, bad in rows:
    ratio = f"{med / base:.2f}" if base > 0 else "n/a"
    mbps = f"{size / 1e6 / med:.1f}" if med > 0 else "inf"
    rss_s = f"{rss / 1024:.1f}" if rss is not None else "n/a"
    note = f"(FAILED: exit {','.join(map(str, bad))})" if bad else ""
    print(fmt.format(label, f"{med:.3f}", ratio, mbps, rss_s, note).rstrip())
PY
