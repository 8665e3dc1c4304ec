#!/usr/bin/env bash
# Run the workspace tests against a real Apache RocketMQ.
#
# Usage: scripts/test.sh [--rmq-versions "5 4.9"] [cargo test arguments...]
#
# - NAMESRV_ADDR set and answering: runs `cargo test --workspace ARGS` once against it.
# - Otherwise, for each version in RMQ_VERSIONS (default "5 4.9": the newest 5.x and 4.9.x that
#   resolve from Maven; exact versions like "5.5.0 4.9.7" work too) it (re)starts the local RocketMQ
#   with scripts/rocketmq-local.sh, exports NAMESRV_ADDR / RMQ_BROKER_ADDR / RMQ_VERSION and runs
#   `cargo test --workspace ARGS` for the first version, `cargo test --workspace --test '*' ARGS`
#   (integration tests only) for the others, then, as a step of its own, the tests that stop or
#   kill a local broker (`#[ignore]`d in the normal run so that they never race other tests:
#   client-core `broker_stop`, remoting `broker_restart`, tests-integration `broker_link`, which
#   kills and restarts the second local broker). Stops at the first failure.
# - The lifecycle step (tests-integration `lifecycle_leaks`, `#[ignore]`d in the normal run since it
#   samples its whole process): every client kind started and shut down RMQ_LIFECYCLE_ROUNDS times
#   (default 30; 1000 by hand), fds / threads / tasks / RSS flat after a warm-up, the broker's
#   consumer list empty after each shutdown; the simple (pop) and gRPC kinds on 5.x only.
# - RMQ_TEST_JOBS=N (N > 1) and no ARGS: those `cargo test` runs are carried out by test_pool (below):
#   the same test binaries (and the doc tests), built by cargo and run by this script N at a time.
#   The default, 1, runs `cargo test` itself (one binary after the other).
# - On 5.x it also starts the proxy (RMQ_PROXY=1) and exports RMQ_PROXY_ENDPOINT; the gRPC tests (rmq-grpc
#   `session`, tests-integration `grpc_producer`, `grpc_consumer`, `grpc_push`, `grpc_java` (the official Java
#   gRPC client beside rmq), `grpc_security` (a secured proxy of its own), `grpc_transaction`, `grpc_features`
#   (recall, priority, lite topics, topic types, Java-like ids), `grpc_restart`,
#   which restarts the local proxy, and the `grpc_` tests of `shutdown_drain`, `simple_cancel` and `msg_trace_batch`
#   (the send span of a gRPC batch); `#[ignore]`d in
#   the normal run since 4.9.x has no proxy) run as a step of their own on 5.x (with NAMESRV_ADDR given: when RMQ_PROXY_ENDPOINT is set too, `session`, `grpc_producer`,
#   `grpc_consumer`, `grpc_push`, `grpc_transaction`, `grpc_features` and `msg_trace_batch`; and the broker-fault step without `broker_link`, which
#   needs the local second broker).
# - The security tests (tests-integration/tests/security.rs, and trace_security.rs: message trace and
#   metrics of signed clients over TLS) start a second, secured local instance
#   (rmq-testkit's `secure`: RMQ_INSTANCE=secure, ACL + TLS + mTLS) of the same version on
#   RMQ_SECURE_NAMESRV_PORT / RMQ_SECURE_BROKER_PORT (defaults 19876 / 20911); it is stopped before
#   the next version and at exit.
# - The cluster step (RMQ_CLUSTER_STEP=1, the default; 0 skips it), after the other steps of each version:
#   a replicated cluster of its own (RMQ_INSTANCE=cluster on RMQ_CLUSTER_NAMESRV_PORT, RMQ_CLUSTER_BROKER_A_PORT,
#   RMQ_CLUSTER_BROKER_B_PORT, RMQ_CLUSTER_SLAVE_PORT, RMQ_CLUSTER_SLAVE2_PORT, RMQ_CLUSTER_CONTROLLER_PORT; defaults
#   19976 / 20011 / 20021 / 20031 / 20041 / 19978) per topology: master-slave (broker-a + slave + broker-b,
#   accessMessageInMemoryMaxRatio=0) on both lines and controller (2 replicas) on 5.x, each running the
#   tests-integration `cluster` tests of that topology (`#[ignore]`d in the normal run) and stopped after. It prints
#   the tests' `cluster-figures:` lines (failover times, lost, duplicates) and the RSS of the cluster's JVMs.
#   When another version follows the first, the master-slave steps of every version run in the background, one
#   after the other (one cluster instance at a time), beside the next versions' tests (the cluster has its own
#   ports and brokers); their output is printed once they are done, and their exit code counts. The controller
#   topology does not run beside other tests: it runs after the last version's tests and the background steps.
# - At exit it stops the local RocketMQ, unless one was already running when it began.
# Exit code: cargo's (first failing run), or 1 when RocketMQ could not be started.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RMQ="$ROOT/scripts/rocketmq-local.sh"
cd "$ROOT"

versions="${RMQ_VERSIONS:-5 4.9}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rmq-versions=*) versions="${1#*=}"; shift ;;
    --rmq-versions) [[ $# -ge 2 ]] || { echo "test.sh: --rmq-versions needs a value" >&2; exit 64; }
                    versions="$2"; shift 2 ;;
    *) break ;;
  esac
done

# Every line carries the time since the start ([+seconds]): the steps' wall times can be read off.
say() { printf 'test.sh: [+%ds] %s\n' "$SECONDS" "$*" >&2; }

reachable() { # host:port
  local host="${1%:*}" port="${1##*:}"
  [[ -n "$host" && "$port" =~ ^[0-9]+$ ]] || return 1
  (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null
}

# Settings of a secured instance or signing credentials in the caller's shell would change what the
# tests talk to and how: the tests set them where they need them.
unset RMQ_INSTANCE RMQ_AUTH RMQ_TLS RMQ_TLS_CLIENT_AUTH RMQ_ACCESS_KEY RMQ_SECRET_KEY RMQ_SECURITY_TOKEN

# The secured instance of the security tests (started by the tests themselves).
secure() { RMQ_INSTANCE=secure bash "$RMQ" "$@"; }
secure_was_running=0
if secure env >/dev/null 2>&1; then secure_was_running=1; fi
stop_secure() {
  if [[ "$secure_was_running" == 0 ]] && secure env >/dev/null 2>&1; then secure stop || true; fi
}

# The test binaries that stop, kill or restart a broker of the local instance in the normal run
# (testkit `local_rocketmq` kills and restarts broker-a, producer `failover` kills broker-b): in
# test_pool they run alone, before the others.
alone_bins=" local_rocketmq failover "
# workspace_test_bins SCOPE: the test binaries of the workspace build (`cargo test --workspace
# --no-run`, nothing new is built), one line each: "alone" or "pool" (alone_bins), name, path,
# package folder, tab-separated. SCOPE integration: the integration tests (tests/) only; all: unit
# tests too. Those in alone_bins first, then the longest of earlier runs, then cargo's order.
workspace_test_bins() {
  local json
  json="$(cargo test --workspace --no-run --message-format=json 2>/dev/null)" \
    || { say "cargo test --workspace --no-run --message-format=json failed"; return 1; }
  python3 -c '
import json, os, sys
scope, alone = sys.argv[1], sys.argv[2].split()
slow = ["cli", "batching", "lite", "msg_trace_java", "smoke", "push_stream", "tx_basic",
        "differential", "tx_java", "tx_crash", "pop", "send", "orderly_lost_lock", "msg_trace",
        "trace_security", "msg_trace_batch",
        "consumer_status"]
bins = []
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        continue
    t = m.get("target") or {}
    if m.get("reason") != "compiler-artifact" or not m.get("executable"):
        continue
    if not (m.get("profile") or {}).get("test"):
        continue
    if scope == "integration" and "test" not in t.get("kind", []):
        continue
    bins.append((t["name"], m["executable"], os.path.dirname(m["manifest_path"])))
rank = lambda b: (0 if b[0] in alone else 1, slow.index(b[0]) if b[0] in slow else len(slow))
for name, exe, d in sorted(bins, key=rank):
    print("alone" if name in alone else "pool", name, exe, d, sep="\t")
' "$1" "$alone_bins" <<<"$json"
}

# The steps after the main run run its test binaries themselves: `cargo test -p X --test Y` (or even
# `--workspace --test Y`) resolves other features than `cargo test --workspace` and rebuilds crates
# for every step. test_bins records the integration test binaries of the workspace build by name.
declare -A test_bin=() test_dir=()
test_bins() {
  local lines kind name exe dir
  lines="$(workspace_test_bins integration)" || return 1
  while IFS=$'\t' read -r kind name exe dir; do
    [[ -n "$name" ]] || continue
    test_bin[$name]="$exe"; test_dir[$name]="$dir"
  done <<<"$lines"
  [[ ${#test_bin[@]} -gt 0 ]] || { say "no integration test binary found in the workspace build"; return 1; }
}
# run_tests NAME... -- ARGS...: the integration test binaries NAME with ARGS, each from its package's
# folder (as cargo runs them); stops at the first failing one and returns its exit code.
run_tests() {
  local names=() n rc=0
  while [[ $# -gt 0 && "$1" != -- ]]; do names+=("$1"); shift; done
  [[ $# -gt 0 ]] && shift
  [[ ${#test_bin[@]} -gt 0 ]] || test_bins || return 1
  for n in "${names[@]}"; do
    [[ -n "${test_bin[$n]:-}" ]] || { say "no test binary '$n' in the workspace build"; return 1; }
    say "running: $n $*"
    (cd "${test_dir[$n]}" && "${test_bin[$n]}" "$@") || { rc=$?; break; }
  done
  return "$rc"
}

# test_pool SCOPE: `cargo test --workspace` (SCOPE all: unit, integration and doc tests) or
# `cargo test --workspace --test '*'` (SCOPE integration), with the test binaries run by this script,
# RMQ_TEST_JOBS at a time instead of one after the other: most of a binary's time is
# spent waiting on the broker. Each binary's output is printed whole when it ends; the longest
# binaries start first. Stops starting binaries at the first failure and returns its exit code.
test_pool() {
  local scope="$1" jobs="${RMQ_TEST_JOBS:-1}" lines kind name exe dir logdir i n rc=0 jrc pid alone_running=""
  local -a kinds=() names=() exes=() dirs=()
  local -A running=() started=()
  [[ "$jobs" =~ ^[1-9][0-9]*$ ]] || { say "RMQ_TEST_JOBS=$jobs is not a positive number"; return 64; }
  cargo test --workspace --no-run || return $?
  lines="$(workspace_test_bins "$scope")" || return 1
  while IFS=$'\t' read -r kind name exe dir; do
    [[ -n "$name" ]] || continue
    kinds+=("$kind") names+=("$name") exes+=("$exe") dirs+=("$dir")
  done <<<"$lines"
  if [[ "$scope" == all ]]; then
    # The doc tests (about 20 s, mostly compiling them) right after the binaries that run alone,
    # beside the longest ones, rather than last and alone.
    local first_pool=0
    while (( first_pool < ${#kinds[@]} )) && [[ "${kinds[first_pool]}" == alone ]]; do
      first_pool=$(( first_pool + 1 ))
    done
    kinds=("${kinds[@]:0:first_pool}" pool "${kinds[@]:first_pool}")
    names=("${names[@]:0:first_pool}" doctests "${names[@]:first_pool}")
    exes=("${exes[@]:0:first_pool}" @doctests "${exes[@]:first_pool}")
    dirs=("${dirs[@]:0:first_pool}" "$ROOT" "${dirs[@]:first_pool}")
  fi
  n=${#exes[@]}
  [[ "$n" -gt 0 ]] || { say "no test binary found in the workspace build"; return 1; }
  say "$n test binaries ($scope), $jobs at a time;$alone_bins(if built) first and alone"
  logdir="$(mktemp -d)"
  i=0
  while (( i < n || ${#running[@]} > 0 )); do
    # Start what may start: nothing after a failure; an `alone` binary only when none runs, and
    # nothing beside it.
    while (( rc == 0 && i < n && ${#running[@]} < jobs )); do
      if [[ -n "$alone_running" || ( "${kinds[i]}" == alone && ${#running[@]} -gt 0 ) ]]; then break; fi
      if [[ "${exes[i]}" == @doctests ]]; then
        (cd "${dirs[i]}" && exec cargo test --workspace --doc) >"$logdir/$i.log" 2>&1 &
      else
        (cd "${dirs[i]}" && exec "${exes[i]}") >"$logdir/$i.log" 2>&1 &
      fi
      running[$!]=$i started[$i]=$SECONDS
      if [[ "${kinds[i]}" == alone ]]; then alone_running=1; fi
      i=$(( i + 1 ))
    done
    (( ${#running[@]} > 0 )) || break
    jrc=0 pid=""
    wait -n -p pid "${!running[@]}" || jrc=$?
    [[ -n "$pid" && -n "${running[$pid]:-}" ]] || continue
    local j="${running[$pid]}"
    unset "running[$pid]"
    alone_running=""
    say "----- ${names[j]} (${dirs[j]#"$ROOT"/}): exit $jrc after $(( SECONDS - started[$j] )) s -----"
    cat "$logdir/$j.log"
    if [[ "$jrc" != 0 && "$rc" == 0 ]]; then
      rc="$jrc"
      say "${names[j]} failed (exit $jrc): no more test binaries are started"
    fi
  done
  rm -rf "$logdir"
  return "$rc"
}

if [[ -n "${NAMESRV_ADDR:-}" ]]; then
  if reachable "$NAMESRV_ADDR"; then
    say "using the RocketMQ at NAMESRV_ADDR=$NAMESRV_ADDR (RMQ_VERSIONS not used)"
    rc=0
    cargo test --workspace "$@" || rc=$?
    if [[ "$rc" == 0 ]]; then
      run_tests broker_stop broker_restart -- --ignored || rc=$?
    fi
    if [[ "$rc" == 0 && -n "${RMQ_PROXY_ENDPOINT:-}" ]]; then
      run_tests session grpc_producer grpc_consumer grpc_push grpc_transaction grpc_features msg_trace_batch -- --ignored || rc=$?
    fi
    stop_secure
    exit "$rc"
  fi
  say "NAMESRV_ADDR=$NAMESRV_ADDR does not answer; using a local RocketMQ instead"
  unset NAMESRV_ADDR
fi
unset RMQ_BROKER_ADDR RMQ_BROKER_B_ADDR

was_running=0
if bash "$RMQ" env >/dev/null 2>&1; then was_running=1; fi
started=0
cleanup() {
  if [[ "$started" == 1 && "$was_running" == 0 ]]; then
    bash "$RMQ" stop || true
  fi
  stop_secure
  if [[ -n "${cluster_pid:-}" ]]; then kill_tree "$cluster_pid"; fi
  stop_cluster
  rm -f "${cluster_summary:-}" "${cluster_log:-}"
}
# kill_tree PID: PID and its descendants (a cluster step in the background: its cargo and tests).
kill_tree() {
  local c
  for c in $(pgrep -P "$1" 2>/dev/null); do kill_tree "$c"; done
  kill "$1" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Resolve the specs ("5", "4.9", "5.5.0") to exact versions, dropping duplicates.
exact=()
for spec in $versions; do
  v="$(RMQ_VERSION="$spec" bash "$RMQ" resolve)" || { say "cannot resolve RocketMQ '$spec'"; exit 1; }
  [[ " ${exact[*]-} " == *" $v "* ]] || exact+=("$v")
done
[[ ${#exact[@]} -gt 0 ]] || { say "RMQ_VERSIONS is empty"; exit 64; }
say "RocketMQ versions: ${exact[*]}"

# cluster_env CMD...: CMD with the cluster instance's settings (not the default instance's).
cluster_env() {
  # `env`: CMD may start with VAR=value words of its own.
  ( cluster_exports; env "$@" )
}
stop_cluster() { cluster_env bash "$RMQ" stop >/dev/null 2>&1 || true; }
# cluster_exports: the cluster instance's settings exported in this shell (for the tests it runs).
cluster_exports() {
  export RMQ_INSTANCE=cluster \
    RMQ_NAMESRV_PORT="${RMQ_CLUSTER_NAMESRV_PORT:-19976}" \
    RMQ_BROKER_A_PORT="${RMQ_CLUSTER_BROKER_A_PORT:-20011}" \
    RMQ_BROKER_B_PORT="${RMQ_CLUSTER_BROKER_B_PORT:-20021}" \
    RMQ_BROKER_A_SLAVE_PORT="${RMQ_CLUSTER_SLAVE_PORT:-20031}" \
    RMQ_BROKER_A_SLAVE2_PORT="${RMQ_CLUSTER_SLAVE2_PORT:-20041}" \
    RMQ_CONTROLLER_PORT="${RMQ_CLUSTER_CONTROLLER_PORT:-19978}"
}

# cluster_rss: the resident memory of the cluster instance's JVMs, "name=MiB ... total=MiB".
cluster_rss() {
  local dir="$ROOT/.cache/rocketmq/current-cluster" f pid kb total=0 out=""
  for f in "$dir"/*/pid; do
    [[ -f "$f" ]] || continue
    pid="$(cat "$f")"
    kb="$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || true)"
    [[ "$kb" =~ ^[0-9]+$ ]] || continue
    total=$(( total + kb ))
    out+="$(basename "$(dirname "$f")")=$(( kb / 1024 ))MiB "
  done
  echo "${out}total=$(( total / 1024 ))MiB"
}

# cluster_step VERSION TOPOLOGY: start the cluster, run its tests, stop it. Returns cargo's exit code.
cluster_step() {
  local v="$1" topo="$2" lines rc=0 t0 log rss
  t0=$(date +%s)
  stop_cluster
  local second=0; [[ "$topo" == master-slave ]] && second=1
  if ! lines="$(cluster_env RMQ_VERSION="$v" RMQ_TOPOLOGY="$topo" RMQ_SECOND_BROKER="$second" RMQ_START_TIMEOUT="${RMQ_START_TIMEOUT:-300}" \
                 RMQ_BROKER_EXTRA_CONF="accessMessageInMemoryMaxRatio=0" bash "$RMQ" start)"; then
    say "could not start the $topo cluster of RocketMQ $v"
    stop_cluster
    return 1
  fi
  say "$topo cluster of RocketMQ $v up after $(( $(date +%s) - t0 )) s"
  log="$(mktemp)"
  (
    unset NAMESRV_ADDR RMQ_BROKER_ADDR RMQ_BROKER_B_ADDR RMQ_PROXY_ENDPOINT
    eval "$lines"
    export NAMESRV_ADDR RMQ_BROKER_ADDR RMQ_VERSION RMQ_TOPOLOGY RMQ_BROKER_A_SLAVE_ADDR
    [[ -n "${RMQ_BROKER_B_ADDR:-}" ]] && export RMQ_BROKER_B_ADDR
    [[ -n "${RMQ_BROKER_A_SLAVE2_ADDR:-}" ]] && export RMQ_BROKER_A_SLAVE2_ADDR
    [[ -n "${RMQ_CONTROLLER_ADDR:-}" ]] && export RMQ_CONTROLLER_ADDR
    export RMQ_INSTANCE=cluster
    filter=(); [[ "$topo" == master-slave ]] && filter=(--skip controller_)
    [[ "$topo" == controller ]] && filter=(controller_)
    cluster_exports
    run_tests cluster -- --ignored --test-threads=1 --nocapture "${filter[@]}"
  ) 2>&1 | tee "$log"
  rc="${PIPESTATUS[0]}"
  rss="$(cluster_rss)"
  grep -h '^cluster-figures:' "$log" | sed "s/\$/ topology=$topo/" >&2 || true
  say "cluster-figures: RocketMQ $v $topo JVM RSS after the tests: $rss"
  rm -f "$log"
  stop_cluster
  say "$topo cluster step of RocketMQ $v: $(( $(date +%s) - t0 )) s, exit $rc"
  return "$rc"
}

# cluster_steps "VERSION TOPOLOGY"...: those cluster steps, in order, stopping at the first failure;
# their summary lines go to $cluster_summary. Returns the first failing exit code.
cluster_summary="$(mktemp)"
cluster_steps() {
  local pair v topo rc=0
  : >"$cluster_summary"
  for pair in "$@"; do
    v="${pair% *}" topo="${pair#* }"
    say "cluster step: RocketMQ $v $topo"
    cluster_step "$v" "$topo" || rc=$?
    echo "RocketMQ $v: cluster step ($topo) -> exit $rc" >>"$cluster_summary"
    [[ "$rc" == 0 ]] || break
  done
  return "$rc"
}

# join_cluster: waits for a cluster step running in the background, prints its output and adds its
# summary. Returns its exit code (0 when none ran).
cluster_pid="" cluster_log=""
join_cluster() {
  [[ -n "$cluster_pid" ]] || return 0
  local crc=0
  wait "$cluster_pid" || crc=$?
  cluster_pid=""
  say "----- output of the cluster step (ran in the background) -----"
  cat "$cluster_log" >&2
  rm -f "$cluster_log"
  mapfile -t -O "${#summary[@]}" summary <"$cluster_summary"
  return "$crc"
}

summary=()
# "VERSION TOPOLOGY" cluster steps left for after the last version's (see below).
deferred=()
first=1
for v in "${exact[@]}"; do
  running="$(bash "$RMQ" env 2>/dev/null | sed -n 's/^export RMQ_VERSION=//p' || true)"
  if [[ -n "$running" && "$running" != "$v" ]]; then
    say "stopping the local RocketMQ $running to test $v"
    bash "$RMQ" stop
  fi
  secure_running="$(secure env 2>/dev/null | sed -n 's/^export RMQ_VERSION=//p' || true)"
  if [[ -n "$secure_running" && "$secure_running" != "$v" ]]; then
    say "stopping the secured local RocketMQ $secure_running to test $v"
    secure stop
  fi
  t0=$(date +%s)
  # The proxy (5.x only) for the gRPC tests; on 4.9.x they are ignored with their reason.
  unset RMQ_PROXY_ENDPOINT
  if ! env_lines="$(RMQ_PROXY=1 RMQ_VERSION="$v" bash "$RMQ" start)"; then
    say "could not start RocketMQ $v"
    exit 1
  fi
  started=1
  eval "$env_lines"
  export NAMESRV_ADDR RMQ_BROKER_ADDR RMQ_VERSION
  if [[ -n "${RMQ_PROXY_ENDPOINT:-}" ]]; then export RMQ_PROXY_ENDPOINT; fi
  say "RocketMQ $v at NAMESRV_ADDR=$NAMESRV_ADDR (ready after $(( $(date +%s) - t0 )) s)"
  if [[ "$first" == 1 ]]; then
    cmd=(cargo test --workspace "$@") scope=all
  else
    cmd=(cargo test --workspace --test '*' "$@") scope=integration
  fi
  rc=0
  if [[ $# -eq 0 && "${RMQ_TEST_JOBS:-1}" != 1 ]]; then
    # No cargo arguments: the same tests as cmd, several binaries at a time (test_pool).
    say "running: ${cmd[*]} (test binaries $RMQ_TEST_JOBS at a time)"
    test_pool "$scope" || rc=$?
  else
    say "running: ${cmd[*]}"
    "${cmd[@]}" || rc=$?
  fi
  summary+=("RocketMQ $v: ${cmd[*]} -> exit $rc")
  if [[ "$rc" == 0 ]]; then
    # Broker faults last and alone: these tests stop and restart local brokers.
    faults=(run_tests broker_stop broker_restart broker_link -- --ignored)
    say "running: ${faults[*]}"
    "${faults[@]}" || rc=$?
    summary+=("RocketMQ $v: broker-fault step -> exit $rc")
    # Pop consumption: the 5.x behaviour on 5.x, the typed refusal on 4.x (see the tests' reasons).
    # On 5.x also the pop kinds of the shutdown drains and the cancel safety of the pop receive.
    pop_more=()
    if [[ "$rc" == 0 && "$v" == 5.* ]]; then
      pop=(run_tests simple -- --ignored --skip four_x_broker --skip child_holds)
      push_pop=(run_tests push_pop -- --ignored --skip pop_mode_on_a_4x)
      pop_more=("run_tests shutdown_drain -- --ignored pop_" "run_tests simple_cancel -- --ignored remoting_")
    else
      pop=(run_tests simple -- four_x_broker_refuses --ignored)
      push_pop=(run_tests push_pop -- pop_mode_on_a_4x --ignored)
    fi
    if [[ "$rc" == 0 ]]; then
      say "running: ${pop[*]}"
      "${pop[@]}" || rc=$?
      if [[ "$rc" == 0 ]]; then
        say "running: ${push_pop[*]}"
        "${push_pop[@]}" || rc=$?
      fi
      for more in "${pop_more[@]}"; do
        [[ "$rc" == 0 ]] || break
        say "running: $more"
        $more || rc=$?
      done
      summary+=("RocketMQ $v: pop step -> exit $rc")
    fi
    # The gRPC tests need the proxy, which only 5.x has (ignored in the normal run, with that reason).
    if [[ "$rc" == 0 && "$v" == 5.* ]]; then
      grpc=(run_tests session grpc_producer grpc_consumer grpc_push grpc_java grpc_security grpc_transaction grpc_features grpc_restart -- --ignored)
      say "running: ${grpc[*]}"
      "${grpc[@]}" || rc=$?
      # The gRPC kinds of the shutdown drains and the cancel safety of the gRPC receive.
      for more in "run_tests shutdown_drain -- --ignored grpc_" "run_tests simple_cancel -- --ignored grpc_" \
                  "run_tests msg_trace_batch -- --ignored grpc_"; do
        [[ "$rc" == 0 ]] || break
        say "running: $more"
        $more || rc=$?
      done
      summary+=("RocketMQ $v: gRPC (proxy) step -> exit $rc")
    fi
    # Lifecycles without leaks: alone in their process (they sample its fds, threads, tasks and
    # RSS), one test at a time; the pop and gRPC kinds on 5.x only (see the tests' reasons).
    if [[ "$rc" == 0 ]]; then
      if [[ "$v" == 5.* ]]; then
        lifecycle=(run_tests lifecycle_leaks -- --ignored --test-threads=1 --nocapture)
      else
        lifecycle=(run_tests lifecycle_leaks -- --ignored --test-threads=1 --nocapture --skip simple_consumer --skip grpc_client)
      fi
      say "running: ${lifecycle[*]}"
      "${lifecycle[@]}" || rc=$?
      summary+=("RocketMQ $v: lifecycle step -> exit $rc")
    fi
    # The auto-created-topic route is asserted on 5.x only (see the test's reason).
    if [[ "$rc" == 0 && "$v" == 5.* ]]; then
      auto=(run_tests broker_roundtrip -- route_query_for_an_auto_created_topic --ignored)
      say "running: ${auto[*]}"
      "${auto[@]}" || rc=$?
      summary+=("RocketMQ $v: auto-created topic route -> exit $rc")
    fi
  fi
  if [[ "$rc" == 0 && "${RMQ_CLUSTER_STEP:-1}" == 1 ]]; then
    last="${exact[${#exact[@]}-1]}"
    if [[ "$first" == 1 && "$v" != "$last" ]]; then
      # The cluster has ports and brokers of its own: the master-slave step of every version runs
      # in the background, one after the other, beside the next versions' tests. The controller
      # topology (automatic master election, 5.x only) waits for the end and runs alone: its election
      # needs a slave in the sync state set, and a slave slowed by other tests' load can fall behind
      # and leave it.
      background=()
      for w in "${exact[@]}"; do
        background+=("$w master-slave")
        if [[ "$w" == 5.* ]]; then deferred+=("$w controller"); fi
      done
      cluster_log="$(mktemp)"
      say "cluster step: master-slave of RocketMQ ${exact[*]} in turn, beside the next versions (its output follows at the end)"
      ( trap - EXIT INT TERM; cluster_steps "${background[@]}" ) >"$cluster_log" 2>&1 &
      cluster_pid=$!
    elif [[ "$v" == "$last" ]]; then
      # One cluster at a time: they share the cluster instance's ports.
      join_cluster || rc=$?
      if [[ "$rc" == 0 && "$first" == 1 ]]; then
        # A single version: its steps run here.
        deferred=("$v master-slave")
        if [[ "$v" == 5.* ]]; then deferred+=("$v controller"); fi
      fi
      if [[ "$rc" == 0 && ${#deferred[@]} -gt 0 ]]; then
        cluster_steps "${deferred[@]}" || rc=$?
        mapfile -t -O "${#summary[@]}" summary <"$cluster_summary"
      fi
    fi
  fi
  if [[ "$rc" != 0 ]]; then
    join_cluster || true
    printf 'test.sh: %s\n' "${summary[@]}" >&2
    exit "$rc"
  fi
  first=0
done
join_cluster || rc=$?
printf 'test.sh: %s\n' "${summary[@]}" >&2
exit "$rc"
