#!/usr/bin/env bash
# Chaos suite: bounded, self-stopping fault runs against a real RocketMQ instance of its own.
#
# Usage: scripts/chaos.sh [--quick] [--scenario NAME]... [--messages N] [--seed N]
#
# Starts the chaos instance (RMQ_INSTANCE=chaos: a name server and broker-a, plus broker-b for
# the producer scenario) on ports that collide with nothing the tests or the bench use, builds
# and runs the `chaos` binary of tests-integration (scenarios: clustering, orderly, restart, producer,
# lite, pop; pop needs RocketMQ 5 and is skipped, with the reason printed, on 4.9.x; see
# tests-integration/src/bin/chaos.rs), then stops the instance. One summary line per scenario;
# the figures as JSON in chaos/results/ (full runs: <mode>-<unix time>.json, committed; quick
# runs: chaos/results/quick/, git-ignored). Exit status 1 when a scenario found a violation.
#
# Environment:
#   RMQ_VERSION                 broker line or version (default 5), as scripts/rocketmq-local.sh
#   RMQ_CHAOS_NAMESRV_PORT      name server port (default 19976)
#   RMQ_CHAOS_BROKER_A_PORT     broker-a port (default 21011; the broker also uses port-2, port+1)
#   RMQ_CHAOS_BROKER_B_PORT     broker-b port (default 21021)
#   RMQ_CHAOS_KEEP=1            leave the chaos instance running afterwards
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

quick=0
for a in "$@"; do [[ "$a" == --quick ]] && quick=1; done

export RMQ_INSTANCE=chaos
export RMQ_NAMESRV_PORT="${RMQ_CHAOS_NAMESRV_PORT:-19976}"
export RMQ_BROKER_A_PORT="${RMQ_CHAOS_BROKER_A_PORT:-21011}"
export RMQ_BROKER_B_PORT="${RMQ_CHAOS_BROKER_B_PORT:-21021}"
export RMQ_VERSION="${RMQ_VERSION:-5}"

cargo build -q -p rmq-tests-integration --bin chaos --bin push-child --bin lite-child

started=0
stop() {
  if [[ "$started" == 1 && "${RMQ_CHAOS_KEEP:-0}" != 1 ]]; then
    scripts/rocketmq-local.sh stop >&2 || true
  fi
}
trap stop EXIT
if ! scripts/rocketmq-local.sh status >/dev/null 2>&1; then started=1; fi
# Not `eval "$(…)"` alone: eval's status would hide a failed start (and the chaos binary would
# then start an instance without broker-b itself).
instance_env="$(RMQ_SECOND_BROKER=1 scripts/rocketmq-local.sh start)"
eval "$instance_env"

out=chaos/results
[[ "$quick" == 1 ]] && out=chaos/results/quick
target="${CARGO_TARGET_DIR:-target}"
"$target/debug/chaos" --out "$out" "$@"
