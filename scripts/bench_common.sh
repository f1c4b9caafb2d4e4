# Sourced by the bench scripts (bench_fits.sh, bench_private.sh,
# bench_stream.sh): the prologue they share, and docs_table
# (scripts/docs_table.sh).
#
#   . scripts/bench_common.sh
#   bench_docs_flag "${1:-}"; shift "$docs"   # docs=1 after a leading --docs
#   ... read the script's own arguments ...
#   bench_begin "ARGS"   # cmdline, tmp (removed on exit), commit
. scripts/docs_table.sh

# bench_docs_flag ARG sets docs to 1 when ARG is --docs, else to 0; the
# caller shifts its arguments by $docs.
bench_docs_flag() {
	docs=0
	if [[ $1 == --docs ]]; then docs=1; fi
}

# bench_begin ARGS sets cmdline (ARGS, after --docs when docs is 1: the
# command line the docs table names), tmp (a temporary directory removed
# when the script exits) and commit (the short commit, +changes when
# tracked files differ from it).
bench_begin() {
	cmdline=$1
	if ((docs)); then cmdline="--docs $cmdline"; fi
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
	if [[ -n $(git status --porcelain --untracked-files=no 2>/dev/null) ]]; then commit="$commit+changes"; fi
}

# load: the machine's 1-minute load average.
load() { cut -d' ' -f1 /proc/loadavg; }

# load_range A B: "min–max" of two load averages.
load_range() {
	printf '%s–%s' "$(printf '%s\n%s\n' "$1" "$2" | sort -g | head -1)" "$(printf '%s\n%s\n' "$1" "$2" | sort -g | tail -1)"
}
