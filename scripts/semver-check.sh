#!/usr/bin/env bash
# cargo semver-checks for the publishable crates whose files changed since BASELINE (a git
# revision: the merge base with main in CI, the crate's last release tag `<crate>-v<version>`
# before a release). Crates that did not exist at BASELINE are skipped.
# Usage: scripts/semver-check.sh BASELINE
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
base=${1:?usage: scripts/semver-check.sh BASELINE (a git revision)}
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
