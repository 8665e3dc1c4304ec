#!/usr/bin/env bash
# cargo semver-checks for the publishable library crates whose files changed since their baseline:
# the git revision BASELINE when given (e.g. the merge base with main on a branch), else each
# crate's last release tag `<crate>-v<version>` (release-plz makes them). A crate without a
# release tag, or that did not exist at BASELINE, has nothing to compare and is skipped.
# Usage: scripts/semver-check.sh [BASELINE]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
given=${1:-}
cargo semver-checks --version >/dev/null 2>&1 \
  || { echo "semver-check: cargo-semver-checks missing: cargo install cargo-semver-checks --locked" >&2; exit 1; }

cargo metadata --format-version 1 --no-deps --locked | python3 -c '
import json, os, sys
m = json.load(sys.stdin)
root = m["workspace_root"]
for p in m["packages"]:
    if p["id"] in m["workspace_members"] and p.get("publish") != [] and any(t["kind"] == ["lib"] or "lib" in t["kind"] for t in p["targets"]):
        print(p["name"], os.path.relpath(os.path.dirname(p["manifest_path"]), root))
' | while read -r name dir; do
  base=$given
  if [[ -z "$base" ]]; then
    base=$(git tag --list "$name-v*" --sort=-v:refname | head -n 1)
    if [[ -z "$base" ]]; then
      echo "semver-check: $name has no release tag ($name-v*), nothing to compare" >&2
      continue
    fi
  fi
  if ! git cat-file -e "$base:$dir/Cargo.toml" 2>/dev/null; then
    echo "semver-check: $name is new since $base, nothing to compare" >&2
    continue
  fi
  if git diff --quiet "$base" -- "$dir/src" "$dir/Cargo.toml"; then
    echo "semver-check: $name unchanged since $base" >&2
    continue
  fi
  echo "semver-check: $name changed since $base" >&2
  cargo semver-checks check-release -p "$name" --baseline-rev "$base"
done
