#!/usr/bin/env bash
# Checks the crate layering (ARCHITECTURE.md): every normal dependency of a workspace crate on
# another workspace crate must be allowed by the table below; arrows point down only. Reads
# `cargo metadata`; fails naming each offending edge. testkit may depend on protocol only, unless
# the dependency is optional (a feature asks for it).
#
# Usage: scripts/check-layers.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

cargo metadata --format-version 1 --no-deps | python3 -c '
import json, sys

L0 = {"rmq-protocol"}
L1 = L0 | {"rmq-remoting"}
L2 = L1 | {"rmq-client-core", "rmq-grpc"}
L3 = L2 | {"rmq-offset-store", "rmq-rebalance"}
L4 = L3 | {"rmq-error"}
L5 = L4 | {"rmq-consumer-base"}
L6 = L5 | {"rmq-producer", "rmq-consumer-push", "rmq-consumer-pull"}
L7 = L6 | {"rmq"}
ALLOWED = {
    # L0 wire types, no I/O
    "rmq-protocol": set(),
    # L1 transport
    "rmq-remoting": L0,
    # L2 client stacks: remoting (client-core) and the 5.x proxy (grpc)
    "rmq-client-core": L1,
    "rmq-grpc": L1,  # rmq-remoting only for its TlsConfig (feature tls)
    # L3
    "rmq-offset-store": L2,
    "rmq-rebalance": L2,
    # L4 the one error type of the user-facing calls
    "rmq-error": L3,
    # L5 what every consumer shares
    "rmq-consumer-base": L4,
    # L6 producer and consumers
    "rmq-producer": L4,
    "rmq-consumer-push": L5,
    "rmq-consumer-pull": L5,
    # L7 the facade and the command line
    "rmq": L6,
    "rmq-cli": L7,
    # beside the layers: the in-process fake broker (published), dev and test crates
    "rmq-fake": L1,
    "rmq-testkit": L7,
    "rmq-tests-integration": L7 | {"rmq-testkit", "rmq-fake"},
    "rmq-examples": L7 | {"rmq-testkit", "rmq-tests-integration", "rmq-fake"},
    "rmq-bench": L7 | {"rmq-fake"},  # the ceiling scenario drains an in-process fake broker
}
TESTKIT_REQUIRED = {"rmq-protocol"}

meta = json.load(sys.stdin)
members = {p["name"] for p in meta["packages"]}
bad = []
for pkg in sorted(meta["packages"], key=lambda p: p["name"]):
    name = pkg["name"]
    if name not in ALLOWED:
        bad.append(f"{name}: not in the layer table of scripts/check-layers.sh; add it with its allowed dependencies")
        continue
    for dep in pkg["dependencies"]:
        if dep["kind"] is not None or dep["name"] not in members:
            continue  # dev/build dependency, or not a workspace crate
        target = dep["name"]
        edge = f"{name} -> {target}"
        if target not in ALLOWED[name]:
            bad.append(f"{edge}: not allowed (see ARCHITECTURE.md for the layers)")
        elif name == "rmq-testkit" and not dep["optional"] and target not in TESTKIT_REQUIRED:
            bad.append(f"{edge}: testkit depends on rmq-protocol only; put {target} behind a feature")
if bad:
    for b in bad:
        print(f"check-layers: {b}", file=sys.stderr)
    sys.exit(1)
print(f"check-layers: {len(members)} crates, every dependency points down")
'
