#!/usr/bin/env bash
# The crates are ready to publish one by one. For every publishable workspace member (found with
# `cargo metadata`: those without `publish = false`):
#   1. metadata: own version, description, license, repository, documentation, readme, keywords,
#      categories, README.md, CHANGELOG.md and LICENSE in the crate's folder;
#   2. MSRV: no locked normal dependency declares a rust-version above the crate's own;
#   3. features: `cargo check` of the crate alone with no default features, with each feature on
#      its own, and with the defaults (`--skip-features` to leave this out);
#   4. MSRV: `cargo +<rust-version> check --all-features` of the crates with that rust-version,
#      the toolchain installed with rustup (minimal profile) when missing (`--skip-msrv`);
#   5. `cargo package --workspace` with the unpublished members excluded, verify on: each crate's
#      .crate is unpacked and built alone; sibling crates not on crates.io come from the packages
#      just made (cargo's local overlay), so the crates verify before any is published
#      (`--skip-package` to leave this out).
# Usage: scripts/check-publish.sh [--skip-features] [--skip-msrv] [--skip-package]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

skip_features=0 skip_msrv=0 skip_package=0
for a in "$@"; do
  case "$a" in
    --skip-features) skip_features=1 ;;
    --skip-msrv) skip_msrv=1 ;;
    --skip-package) skip_package=1 ;;
    *) echo "usage: $0 [--skip-features] [--skip-msrv] [--skip-package]" >&2; exit 2 ;;
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
    if not p.get("rust_version"):
        problems.append(f"{name}: `rust-version` is missing (clippy's incompatible_msrv lint needs it)")
    # Let chains (`if let .. && let ..`) are stable from Rust 1.88 only, and neither rustc nor
    # clippy's incompatible_msrv lint (std items only) flags them against rust-version.
    if ver(p.get("rust_version")) < (1, 88, 0):
        for root, _, files in os.walk(d):
            if "/target" in root:
                continue
            for f in files:
                if f.endswith(".rs"):
                    path = os.path.join(root, f)
                    for i, line in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
                        if re.search(r"&&\s*let\s", line) and not line.lstrip().startswith("//"):
                            problems.append(f"{name}: {path}:{i}: a let chain needs Rust 1.88, above rust-version {p.get('rust_version')}")
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
    print("msrv", p.get("rust_version"), name)
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

if (( ! skip_msrv )); then
  for v in $(awk '$1 == "msrv" {print $2}' <<<"$plan" | sort -u); do
    pkgs=()
    for n in $(awk -v v="$v" '$1 == "msrv" && $2 == v {print $3}' <<<"$plan"); do pkgs+=(-p "$n"); done
    if ! rustup run "$v" rustc --version >/dev/null 2>&1; then
      echo "installing Rust $v (rustup, minimal profile) for the MSRV check" >&2
      if ! rustup toolchain install "$v" --profile minimal >&2; then
        # No toolchain server reachable: the declared MSRV is then held by what ran above (the
        # locked-dependency and let-chain guards) and by clippy's incompatible_msrv lint in the
        # workspace clippy; said loudly, not skipped silently.
        echo "check-publish: WARNING: Rust $v could not be installed (rustup failed); the" \
          "cargo +$v check of ${pkgs[*]} did not run: the MSRV rests on clippy's incompatible_msrv" \
          "and the guards above" >&2
        continue
      fi
    fi
    echo "MSRV: cargo +$v check --all-features ${pkgs[*]}" >&2
    cargo "+$v" check --quiet --locked --all-features "${pkgs[@]}"
  done
fi

if (( ! skip_package )); then
  # cargo unpacks the packages of its local overlay into $CARGO_HOME/registry/src/<registry>/NAME-VERSION
  # and reuses a folder that is already there: one left by an earlier run of the same version would
  # be verified instead of the package just made. Drop those folders first.
  cargo_home="${CARGO_HOME:-$HOME/.cargo}"
  for nv in $(python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))
members = set(m["workspace_members"])
for p in m["packages"]:
    if p["id"] in members and p.get("publish") != []:
        print(p["name"] + "-" + p["version"])
' "$meta"); do
    for d in "$cargo_home"/registry/src/*/"$nv"; do
      if [[ -d "$d" ]]; then rm -rf "$d"; fi
    done
  done
  # cargo builds those packages in the workspace's target like registry crates, whose sources it
  # takes as never changing: a build of the same version left by an earlier run would be linked
  # instead of the package just made. Drop those builds too (their dep-info files name the
  # unpacked sources).
  target_dir=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["target_directory"])' "$meta")
  for dfile in $(grep -l -E '/registry/src/[^/]+/rmq(-[a-z]+)*-[0-9]+\.[0-9]+\.[0-9]+' "$target_dir"/debug/deps/*.d 2>/dev/null || true); do
    base=$(basename "$dfile" .d)
    hash=${base##*-}
    rm -rf "$target_dir"/debug/.fingerprint/*-"$hash" "$target_dir"/debug/deps/*-"$hash".* "$target_dir"/debug/deps/*-"$hash"
  done
  excludes=()
  for n in $(awk '$1 == "unpublished" {print $2}' <<<"$plan"); do excludes+=(--exclude "$n"); done
  cargo package --workspace --locked "${excludes[@]}"
fi
