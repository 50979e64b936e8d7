#!/usr/bin/env bash
# Fails when the committed files under proto/ are not what scripts/generate.sh
# produces: a changed, deleted or new (untracked) file under proto/ after
# regenerating. Prints what differs.
set -euo pipefail

cd "$(dirname "$0")/.."

scripts/generate.sh

status="$(git status --porcelain --untracked-files=all -- proto/)"
if [[ -n "$status" ]]; then
	echo "check-generated: proto/ differs from what scripts/generate.sh produces:" >&2
	echo "$status" >&2
	git --no-pager diff -- proto/ >&2
	git ls-files --others --exclude-standard -- proto/ | while read -r f; do
		echo "--- untracked: $f" >&2
		head -n 40 "$f" >&2
	done
	echo "check-generated: run scripts/generate.sh and commit the result" >&2
	exit 1
fi
echo "check-generated: proto/ is up to date" >&2
