# Sourced by the bench scripts: docs_table NAME FILE replaces what stands
# between the lines <!-- NAME:begin --> and <!-- NAME:end --> of
# docs/performance.md with the contents of FILE.
docs_table() {
	local name=$1 table=$2 f=docs/performance.md
	grep -q "^<!-- $name:begin -->\$" "$f" && grep -q "^<!-- $name:end -->\$" "$f" || {
		echo "$name: $f lacks the lines <!-- $name:begin --> and <!-- $name:end -->" >&2
		return 1
	}
	awk -v table="$table" -v begin="<!-- $name:begin -->" -v end="<!-- $name:end -->" '
		$0 == begin { print; while ((getline line < table) > 0) print line; skip = 1; next }
		$0 == end { skip = 0 }
		!skip { print }' "$f" >"$table.page" && cat "$table.page" >"$f" && rm -f "$table.page"
	echo "# wrote the table into $f"
}
