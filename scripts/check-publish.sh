#!/usr/bin/env bash
# The crates are ready to publish one by one. For every publishable workspace member (found with
# `cargo metadata`: those without `publish = false`):
#   1. metadata: own version, description, license, repository, documentation, readme, keywords,
#      categories, README.md, CHANGELOG.md and LICENSE in the crate's folder;
#   2. MSRV: no locked normal dependency declares a rust-version above the crate's own;
#   3. features: `cargo check` of the crate alone with no default features, with each feature on
#      its own, and with the defaults (`--skip-features` to leave this out);
#   4. `cargo package --workspace` with the unpublished members excluded, verify on: each crate's
#      .crate is unpacked and built alone; sibling crates not on crates.io come from the packages
#      just made (cargo's local overlay), so the crates verify before any is published
#      (`--skip-package` to leave this out).
# Usage: scripts/check-publish.sh [--skip-features] [--skip-package]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

skip_features=0 skip_package=0
for a in "$@"; do
  case "$a" in
    --skip-features) skip_features=1 ;;
    --skip-package) skip_package=1 ;;
    *) echo "usage: $0 [--skip-features] [--skip-package]" >&2; exit 2 ;;
  esac
done

meta=$(mktemp)
trap 'rm -f "$meta"' EXIT
cargo metadata --format-version 1 --locked >"$meta"

# name, features (comma-separated, without "default") and the unpublished members, one line each.
plan=$(python3 - "$meta" <<'PY'
import json, os, re, sys
m = json.load(open(sys.argv[1]))
members = set(m["workspace_members"])
pkgs = {p["id"]: p for p in m["packages"]}
by_name = {p["name"]: p for p in m["packages"]}
problems = []
def ver(s):
    return (tuple(int(x) for x in re.findall(r"\d+", s or "0")) + (0, 0, 0))[:3]
for pid in sorted(members, key=lambda i: pkgs[i]["name"]):
    p = pkgs[pid]
    name, d = p["name"], os.path.dirname(p["manifest_path"])
    if p.get("publish") == []:
        print("unpublished", name)
        continue
    manifest = open(p["manifest_path"]).read()
    if re.search(r"^version\.workspace\s*=\s*true", manifest, re.M):
        problems.append(f"{name}: declare its own `version` (each crate is released on its own), not version.workspace")
    for field in ("description", "license", "repository", "documentation", "readme"):
        if not p.get(field):
            problems.append(f"{name}: `{field}` is missing in {p['manifest_path']}")
    for field in ("keywords", "categories"):
        if not p.get(field):
            problems.append(f"{name}: `{field}` is empty in {p['manifest_path']}")
    if "example.invalid" in (p.get("repository") or ""):
        problems.append(f"{name}: `repository` is a placeholder")
    for f in ("README.md", "CHANGELOG.md", "LICENSE"):
        if not os.path.isfile(os.path.join(d, f)):
            problems.append(f"{name}: {f} is missing in {d} (LICENSE: a link to ../LICENSE)")
    # MSRV of the locked normal dependencies, transitively (what a user of the crate builds).
    msrv = ver(p.get("rust_version"))
    node_by_id = {n["id"]: n for n in m["resolve"]["nodes"]}
    seen, todo = set(), [pid]
    while todo:
        n = node_by_id[todo.pop()]
        for dep in n["deps"]:
            if any(k["kind"] is None for k in dep["dep_kinds"]) and dep["pkg"] not in seen:
                seen.add(dep["pkg"]); todo.append(dep["pkg"])
    for dep in sorted(seen):
        q = pkgs[dep]
        if q.get("rust_version") and ver(q["rust_version"]) > msrv:
            problems.append(f"{name}: dependency {q['name']} {q['version']} needs Rust {q['rust_version']}, above the declared rust-version {p.get('rust_version')}")
    feats = sorted(f for f in p["features"] if f != "default")
    print("publish", name, ",".join(feats) or "-", "default" in p["features"])
if problems:
    print("\n".join("problem " + x for x in problems))
PY
)

if grep -q '^problem ' <<<"$plan"; then
  grep '^problem ' <<<"$plan" | sed 's/^problem /check-publish: /' >&2
  echo "check-publish: fix the above, or mark a crate that is not ready \`publish = false\`" >&2
  exit 1
fi
published=$(awk '$1 == "publish" {print $2}' <<<"$plan")
echo "publishable crates: $(tr '\n' ' ' <<<"$published")" >&2

if (( ! skip_features )); then
  while read -r kind name feats has_default; do
    [[ "$kind" == publish ]] || continue
    run=(cargo check --quiet --locked -p "$name")
    if [[ "$feats" == - ]]; then
      echo "check $name alone (no features)" >&2
      "${run[@]}"
      continue
    fi
    echo "check $name alone: no default features, each of $feats${has_default/False/}" | sed 's/True$/, the defaults/' >&2
    "${run[@]}" --no-default-features
    if true; then
      IFS=, read -ra list <<<"$feats"
      for f in "${list[@]}"; do "${run[@]}" --no-default-features --features "$f"; done
    fi
    if [[ "$has_default" == True ]]; then "${run[@]}"; fi
  done <<<"$plan"
fi

if (( ! skip_package )); then
  excludes=()
  for n in $(awk '$1 == "unpublished" {print $2}' <<<"$plan"); do excludes+=(--exclude "$n"); done
  cargo package --workspace --locked "${excludes[@]}"
fi
