#!/usr/bin/env bash
# The static checks, in order, stopping at the first failure:
#   0. scripts/check-import-cycles.py --max 3 (no import circle inside a library crate spans more
#      than 3 source files; reads the sources, compiles nothing)
#   1. cargo clippy --workspace --all-targets -- -D warnings
#   2. cargo lint-libs (the alias in .cargo/config.toml: no unwrap / expect / panic / unchecked
#      indexing in library code)
#   3. cargo doc --workspace --no-deps --all-features with RUSTDOCFLAGS="-D warnings" (no broken
#      doc links)
#   4. scripts/check-publish.sh --skip-package (metadata, MSRV, each crate alone with each feature)
# `.ci/run` runs it in the background beside the tests, with a target folder of its own
# (CARGO_TARGET_DIR), since cargo locks a target folder while it builds.
# Usage: scripts/static-checks.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

check() { # DESCRIPTION CMD...
  local what="$1" t0=$SECONDS
  shift
  printf '\nstatic-checks: %s\n' "$what" >&2
  "$@"
  printf 'static-checks: %s: passed in %d s\n' "$what" $(( SECONDS - t0 )) >&2
}

check "scripts/check-import-cycles.py --max 3 (import circles inside library crates)" \
  python3 scripts/check-import-cycles.py --max 3
check "cargo clippy --workspace --all-targets -- -D warnings" \
  cargo clippy --workspace --all-targets --locked -- -D warnings
check "cargo lint-libs (no unwrap / expect / panic / unchecked indexing in library code)" \
  cargo lint-libs
check "cargo doc --workspace --no-deps --all-features, RUSTDOCFLAGS=-D warnings (no broken doc links)" \
  env RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --all-features --locked
check "scripts/check-publish.sh --skip-package (metadata, MSRV, each crate alone with each feature)" \
  bash scripts/check-publish.sh --skip-package
