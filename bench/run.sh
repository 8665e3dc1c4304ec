#!/usr/bin/env bash
# rmq beside the official Java client, the Go client and the rocketmq-client-rust crate, on one
# local real broker, in one run. See bench/README.md.
#
# Usage: bench/run.sh [options]
#   --count N             messages preloaded and drained (default 200000)
#   --size BYTES          message body size (default 1024)
#   --queues Q            queues of every benchmark topic (default 8)
#   --reps R              repetitions of every measurement, interleaved between clients (default 3)
#   --clients LIST        comma-separated: all (default), rmq, java, go, rocketmq-rust, pop (the pop set: rmq-push,
#                         rmq-pop-push, rmq-simple, java-push, java-pop-push), grpc (every gRPC client), rmq-grpc
#                         (rmq's gRPC producer and consumers), java-grpc (the Java gRPC client's), or client names
#                         (rmq-push, rmq-pull, raw-pull, java-push, go-push, rocketmq-rust-push,
#                         rmq-producer, java-producer, rmq-grpc-simple, java-grpc-simple, java-grpc-push,
#                         rmq-producer-batching, java-producer-batching, rmq-push-fake, rmq-pull-fake)
#   --scenarios LIST      comma-separated: drain, latency, produce (sync + async), produce-tx (sync +
#                         transactional sends, in the same run; not in the default), grpc (through the RocketMQ
#                         5.x proxy: grpc-produce = sync + async sends, grpc-drain = SimpleConsumer and
#                         PushConsumer drains; rmq beside the official Java gRPC client rocketmq-client-java;
#                         not in the default), produce-batching (rmq's async producer without and with
#                         auto-batching, Java's without and with autoBatch), scale (push-consumer drains of 8, 64,
#                         512 queues over two brokers and of 100 topics, and rmq's memory per idle queue), ceiling
#                         (rmq's push and pull consumers draining the in-process fake broker, no real broker),
#                         floor (rmq-bench rtt-floor: what one request/response round trip costs a tokio client
#                         here, with no RocketMQ, in the latency scenario's and the sync producer's shape; no broker)
#                         (default: the first three; the last four are never in the default)
#   --latency-rate R      fixed producer rate of the latency runs, msg/s (default 5000)
#   --latency-rates LIST  comma-separated rates of the latency runs, e.g. 1000,5000,20000: every rate a scenario
#                         latency-<rate> (one rate: the scenario latency)
#   --latency-broker-warmup S  unmeasured seconds of latency-produce at the highest rate before the latency runs:
#                         the broker's warm-up (default 30; --quick 5; 0: none)
#   --latency-duration S  measured seconds of each latency run (default 30; plus --latency-warmup 2)
#   --producer-count N    messages per producer run (default: --count)
#   --producer-threads T  send threads (Java) / tasks (rmq) of the sync producer runs (default 64)
#   --grpc-count N        messages per run of the grpc scenario: sent by each producer run, preloaded and drained
#                         by each consumer (default: --count)
#   --java-producer official|own   java-producer sync: rocketmq-example's benchmark Producer (official,
#                         default) or rmqbench.Produce (own); async always uses rmqbench.Produce
#   --batch-linger-ms L   produce-batching: how long a batch waits for more sends (default 5)
#   --batch-messages M    produce-batching: most messages in a batch (default 32)
#   --batch-bytes B       produce-batching: most body bytes in a batch (default 262144); Java's autoBatch, which
#                         has no message bound, gets min(B, M x size) bytes
#   --scale-queues LIST   scale: queue counts of the single-topic cases, spread over the brokers (default 8,64,512)
#   --scale-topics T      scale: topics of the many-topics case (default 100; 0 leaves the case out)
#   --scale-topic-queues Q  scale: queues of each of those topics, spread over the brokers (default 4)
#   --scale-count N       scale: messages preloaded and drained per case (default: --count)
#   --idle-s S            scale: seconds an idle consumer holds its queues before its memory is read (default 5)
#   --ceiling-count N     ceiling: messages the fake broker holds, drained by each client (default 1000000)
#   --floor-seconds S     floor: seconds of each round-trip floor run (default 10)
#   --quick               small and fast (<= 3 minutes once built; results in bench/results/quick/): 20000 messages, 1 repetition,
#                         latency 2000 msg/s for 5 s (broker warm-up 5 s), 20000 messages per producer run, 5000 per grpc run;
#                         scale: 20000 messages per case, idle 3 s; ceiling: 200000 messages; floor: 2 s per run
#   --no-build            use the programs as they are (fails for a client whose program is missing)
#   --dev-build           rmq-bench from cargo's dev profile (target/debug), not release: for checking that the
#                         harness runs (CI's quick run reuses the test build's dependencies this way); its figures
#                         say nothing of rmq's speed (the results' config says "rmq_build": "dev")
#   --tls                 also rmq-push-tls, rmq-pull-tls (drain) and rmq-producer-tls (produce): rmq over TLS
#                         beside plaintext, against one broker started with RMQ_TLS=permissive (its own
#                         instance: RMQ_INSTANCE=bench-tls on RMQ_BENCH_NAMESRV_PORT / RMQ_BENCH_BROKER_PORT,
#                         default 19896 / 20951; broker TLS provider RMQ_TLS_PROVIDER, default openssl; with
#                         NAMESRV_ADDR set, RMQ_TLS_CA must name its CA)
#   --acl                 also rmq-push-signed (drain) and rmq-producer-signed (produce): every request signed
#                         (RMQ_ACCESS_KEY / RMQ_SECRET_KEY, default a bench key pair). A broker without ACL does
#                         not check signatures, so these figures are the client's signing cost
#   --metrics             also rmq-push-metrics (drain): rmq-push with a metrics recorder installed
#                         (metrics-exporter-prometheus, no HTTP listener), target >= 0.95x of rmq-push
#   --trace               also rmq-push-trace (drain): rmq-push with RocketMQ message trace on
#                         (SubBefore/SubAfter records written to RMQ_SYS_TRACE_TOPIC)
#   --current-thread      also rmq-push-ct, rmq-pull-ct (drain; rmq-push-ct also latency) and rmq-producer-ct
#                         (produce): the same rmq programs on a current-thread tokio runtime instead of the
#                         default multi-thread one
#   -h | --help
#
# Environment: NAMESRV_ADDR (unset: the local broker is started with scripts/rocketmq-local.sh and
# stopped at the end), RMQ_BROKER_ADDR (broker that gets the benchmark topics; default: the first
# master in the route of TBW102), RMQ_VERSION (Java client version, default: the running broker's,
# else 5.5.0), BENCH_JAVA_OPTS (extra JVM flags for the Java clients), RMQ_PROXY_ENDPOINT (the grpc scenario:
# gRPC address of the 5.x proxy; required with NAMESRV_ADDR, else the local broker is started with its proxy),
# RMQ_BROKER_B_ADDR (the scale scenario: the second broker; unset with NAMESRV_ADDR given, scale runs on one
# broker; without NAMESRV_ADDR the local script starts broker-b too). The ceiling and floor scenarios alone start no
# broker.
set -euo pipefail

BENCH="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$BENCH/.." && pwd)"

count=200000
size=1024
queues=8
reps=3
clients=all
scenarios=drain,latency,produce
latency_rates=5000
latency_broker_warmup=30
latency_duration=30
latency_warmup=2
producer_count=""
grpc_count=""
producer_threads=64
java_producer=official
build=1
rmq_profile=release
mode_name=full
tls=0
acl=0
metrics=0
current_thread=0
trace=0
batch_linger_ms=5
batch_messages=32
batch_bytes=262144
scale_queues=8,64,512
scale_topics=100
scale_topic_queues=4
scale_count=""
idle_s=5
ceiling_count=1000000
floor_seconds=10

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
die() { printf 'bench/run.sh: error: %s\n' "$*" >&2; exit 1; }
log() { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    --count) count="$2"; shift 2 ;;
    --size) size="$2"; shift 2 ;;
    --queues) queues="$2"; shift 2 ;;
    --reps) reps="$2"; shift 2 ;;
    --clients) clients="$2"; shift 2 ;;
    --scenarios) scenarios="$2"; shift 2 ;;
    --latency-rate|--latency-rates) latency_rates="$2"; shift 2 ;;
    --latency-broker-warmup) latency_broker_warmup="$2"; shift 2 ;;
    --latency-duration) latency_duration="$2"; shift 2 ;;
    --latency-warmup) latency_warmup="$2"; shift 2 ;;
    --producer-count) producer_count="$2"; shift 2 ;;
    --producer-threads) producer_threads="$2"; shift 2 ;;
    --grpc-count) grpc_count="$2"; shift 2 ;;
    --java-producer) java_producer="$2"; shift 2 ;;
    --batch-linger-ms) batch_linger_ms="$2"; shift 2 ;;
    --batch-messages) batch_messages="$2"; shift 2 ;;
    --batch-bytes) batch_bytes="$2"; shift 2 ;;
    --scale-queues) scale_queues="$2"; shift 2 ;;
    --scale-topics) scale_topics="$2"; shift 2 ;;
    --scale-topic-queues) scale_topic_queues="$2"; shift 2 ;;
    --scale-count) scale_count="$2"; shift 2 ;;
    --idle-s) idle_s="$2"; shift 2 ;;
    --ceiling-count) ceiling_count="$2"; shift 2 ;;
    --floor-seconds) floor_seconds="$2"; shift 2 ;;
    --quick)
      count=20000; reps=1; latency_rates=2000; latency_duration=5; latency_warmup=1; latency_broker_warmup=5
      producer_count=20000; grpc_count=5000; idle_s=3; ceiling_count=200000; floor_seconds=2; mode_name=quick; shift ;;
    --no-build) build=0; shift ;;
    --dev-build) rmq_profile=dev; shift ;;
    --tls) tls=1; shift ;;
    --acl) acl=1; shift ;;
    --metrics) metrics=1; shift ;;
    --trace) trace=1; shift ;;
    --current-thread) current_thread=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done

# The gRPC scenario (grpc = grpc-produce + grpc-drain) needs the 5.x proxy; scale a second broker; ceiling
# and floor alone no broker at all (they run inside rmq-bench).
grpc=0
scale=0
broker_needed=0
IFS=, read -ra _scenarios <<<"$scenarios"
for s in "${_scenarios[@]}"; do
  case "$s" in grpc|grpc-produce|grpc-drain) grpc=1 ;; esac
  [[ "$s" == scale ]] && scale=1
  [[ "$s" != ceiling && "$s" != floor ]] && broker_needed=1
done
[[ $grpc == 1 && $tls == 1 ]] && die "--tls and the grpc scenario need different brokers: run them separately"

command -v python3 >/dev/null 2>&1 || die "python3 not found (the runner uses only its standard library)"
command -v cargo >/dev/null 2>&1 || die "cargo not found"

wants() { # wants CLIENT: whether --clients selects it
  local c="$1" IFS=,
  for w in $clients; do
    case "$w" in
      all) return 0 ;;
      rmq) [[ "$c" == rmq-* || "$c" == raw-pull ]] && return 0 ;;
      java) [[ "$c" == java-* ]] && return 0 ;;
      go) [[ "$c" == go-* ]] && return 0 ;;
      rocketmq-rust) [[ "$c" == rocketmq-rust-* ]] && return 0 ;;
      pop) [[ " rmq-push rmq-pop-push rmq-simple java-push java-pop-push " == *" $c "* ]] && return 0 ;;
      grpc) [[ "$c" == *-grpc || "$c" == *-grpc-* ]] && return 0 ;;
      rmq-grpc|java-grpc) [[ "$c" == "$w" || "$c" == "$w"-* ]] && return 0 ;;
      "$c") return 0 ;;
    esac
  done
  return 1
}

# ---- broker ---------------------------------------------------------------------------------------
started_broker=0
started_proxy=0
if [[ $grpc == 1 && -n "${NAMESRV_ADDR:-}" && -z "${RMQ_PROXY_ENDPOINT:-}" ]]; then
  die "the grpc scenario needs the RocketMQ 5.x proxy of the broker at NAMESRV_ADDR=$NAMESRV_ADDR: set RMQ_PROXY_ENDPOINT (its gRPC host:port; RMQ_PROXY=1 scripts/rocketmq-local.sh start prints it)"
fi
if [[ $tls == 1 && -z "${NAMESRV_ADDR:-}" ]]; then
  # A broker that accepts TLS and plaintext, beside (not instead of) the usual local one.
  # The broker's TLS provider: netty-tcnative (OpenSSL) by default, as TLS deployments run it; with the
  # JDK's (RMQ_TLS_PROVIDER=jdk) the broker's encryption, not the client, bounds the TLS drain.
  export RMQ_INSTANCE=bench-tls RMQ_TLS=permissive RMQ_TLS_PROVIDER="${RMQ_TLS_PROVIDER:-openssl}"
  export RMQ_NAMESRV_PORT="${RMQ_BENCH_NAMESRV_PORT:-19896}" RMQ_BROKER_A_PORT="${RMQ_BENCH_BROKER_PORT:-20951}"
  unset RMQ_AUTH RMQ_TLS_CLIENT_AUTH
fi
if [[ $broker_needed == 0 ]]; then
  log "the ceiling and floor scenarios alone: no broker (rmq-bench runs the fake broker or the floor's server in process)"
  NAMESRV_ADDR="${NAMESRV_ADDR:-}"
elif [[ -z "${NAMESRV_ADDR:-}" ]]; then
  # A broker whose store disk is 75 % full starts deleting and at 85 % refuses or stalls writes:
  # the drains would then hang or stop short. Refuse to measure on such a disk.
  store_fs="${RMQ_TMPDIR:-${TMPDIR:-/tmp}}"
  used_pct=$(df -P "$store_fs" 2>/dev/null | awk 'NR==2 {gsub("%", "", $5); print $5}')
  if [[ -n "$used_pct" && "$used_pct" -ge 70 ]]; then
    die "the disk of $store_fs (the local broker's store) is ${used_pct}% full; the broker starts reclaiming space at 75% and the runs would stall: free space (e.g. old target/ directories) and run again"
  fi
  # The scale scenario spreads its queues over two brokers: the local script starts broker-b too.
  [[ $scale == 1 ]] && export RMQ_SECOND_BROKER=1
  if "$ROOT/scripts/rocketmq-local.sh" status >/dev/null 2>&1; then
    log "using the running local broker"
    if [[ $grpc == 1 ]] && ! "$ROOT/scripts/rocketmq-local.sh" env 2>/dev/null | grep -q RMQ_PROXY_ENDPOINT; then
      log "starting its proxy (the grpc scenario)"
      started_proxy=1
    fi
  else
    if [[ $grpc == 1 ]]; then
      log "starting the local broker and its proxy (RMQ_PROXY=1 scripts/rocketmq-local.sh start)"
    else
      log "starting the local broker (scripts/rocketmq-local.sh start)"
    fi
    started_broker=1
  fi
  if [[ $grpc == 1 ]]; then
    eval "$(RMQ_PROXY=1 "$ROOT/scripts/rocketmq-local.sh" start)"
    [[ -n "${RMQ_PROXY_ENDPOINT:-}" ]] || die "the grpc scenario needs the proxy, which RocketMQ ${RMQ_VERSION:-?} does not have (5.x only)"
  else
    eval "$("$ROOT/scripts/rocketmq-local.sh" start)"
  fi
fi
if [[ $tls == 1 && -z "${RMQ_TLS_CA:-}" ]]; then
  die "--tls: RMQ_TLS_CA is not set (the CA of the broker at NAMESRV_ADDR=$NAMESRV_ADDR)"
fi
cleanup() {
  if [[ $started_broker == 1 ]]; then
    log "stopping the local broker"
    "$ROOT/scripts/rocketmq-local.sh" stop >/dev/null 2>&1 || true
  elif [[ $started_proxy == 1 ]]; then
    log "stopping the proxy it started"
    "$ROOT/scripts/rocketmq-local.sh" stop-proxy >/dev/null 2>&1 || true
  fi
}
trap cleanup EXIT
export NAMESRV_ADDR
rmq_version="${RMQ_VERSION:-5.5.0}"
[[ $broker_needed == 1 ]] && log "name server $NAMESRV_ADDR, RocketMQ $rmq_version${RMQ_PROXY_ENDPOINT:+, proxy $RMQ_PROXY_ENDPOINT}"
if [[ $scale == 1 && -z "${RMQ_BROKER_B_ADDR:-}" ]]; then
  log "scale: RMQ_BROKER_B_ADDR is not set: every scale topic goes to one broker"
fi

# ---- programs -------------------------------------------------------------------------------------
unavailable=()
java_cp=""
java_grpc_cp=""
go_peer="$BENCH/peers/go/gopeer"
rust_peer="$BENCH/peers/rocketmq-rust/target/release/rocketmq-rust-peer"
if [[ "$rmq_profile" == dev ]]; then
  rmq_bench="${CARGO_TARGET_DIR:-$ROOT/target}/debug/rmq-bench"
  build_cmd=(cargo build -q --locked -p rmq-bench)
else
  rmq_bench="${CARGO_TARGET_DIR:-$ROOT/target}/release/rmq-bench"
  build_cmd=(cargo build --release -q --locked -p rmq-bench)
fi

if [[ $build == 1 ]]; then
  log "building rmq-bench (${build_cmd[*]})"
  (cd "$ROOT" && "${build_cmd[@]}") || die "rmq-bench does not build"
fi
[[ -x "$rmq_bench" ]] || die "$rmq_bench missing (run without --no-build)"

if wants java-push || wants java-producer || wants java-pop-push || wants java-producer-batching; then
  java_dir="$BENCH/peers/java"
  if [[ $build == 1 ]]; then
    log "building the Java peer (Maven, rocketmq-client $rmq_version)"
    mvn_package() { # mvn_package [extra flags]: offline first (warm ~/.m2), else online
      (cd "$java_dir" && { mvn -B -q -o -Drocketmq.version="$rmq_version" "$@" package >/dev/null 2>&1 \
          || mvn -B -q -Drocketmq.version="$rmq_version" "$@" package; })
    }
    if ! mvn_package; then
      # Maven Central has rocketmq-example (the official benchmark Producer) for 5.x only.
      log "no rocketmq-example $rmq_version: building without it; java-producer uses rmqbench.Produce"
      if mvn_package -Dno.example=true; then
        java_producer=own
      else
        unavailable+=("java-push=Maven build of bench/peers/java failed" "java-producer=Maven build of bench/peers/java failed" "java-pop-push=Maven build of bench/peers/java failed" "java-producer-batching=Maven build of bench/peers/java failed")
      fi
    fi
  fi
  if [[ -d "$java_dir/target/classes/rmqbench" && -d "$java_dir/target/lib-$rmq_version" ]]; then
    java_cp="$java_dir/target/classes:$java_dir/target/lib-$rmq_version/*"
    compgen -G "$java_dir/target/lib-$rmq_version/rocketmq-example-*.jar" >/dev/null || java_producer=own
  elif [[ " ${unavailable[*]} " != *" java-push="* ]]; then
    unavailable+=("java-push=bench/peers/java is not built" "java-producer=bench/peers/java is not built" "java-pop-push=bench/peers/java is not built" "java-producer-batching=bench/peers/java is not built")
  fi
fi

# The Java gRPC peer: rmqgrpc.GrpcBench on rocketmq-client-java (its version is in the pom). Built into
# peers/java-grpc/target (classes + classpath.txt, the jars in ~/.m2), again only when a source changed.
if [[ $grpc == 1 ]] && { wants java-grpc || wants java-grpc-simple || wants java-grpc-push; }; then
  jg_dir="$BENCH/peers/java-grpc"
  jg_target="$jg_dir/target"
  jg_cpfile="$jg_target/classpath.txt"
  jg_why=""
  jg_built() { # a complete build: the class, the class path file, every jar it names
    [[ -s "$jg_cpfile" && -f "$jg_target/classes/rmqgrpc/GrpcBench.class" ]] || return 1
    local jar IFS=:
    for jar in $(cat "$jg_cpfile"); do [[ -f "$jar" ]] || return 1; done
  }
  if [[ $build == 1 ]]; then
    if jg_built && [[ -z "$(find "$jg_dir/pom.xml" "$jg_dir/src" -newer "$jg_cpfile" -print -quit)" ]]; then
      log "the Java gRPC peer is up to date ($jg_target)"
    else
      log "building the Java gRPC peer (Maven, rocketmq-client-java)"
      rm -f "$jg_cpfile"
      jg_mvn() { # jg_mvn [-o]: compile + the runtime class path file
        (cd "$jg_dir" && mvn -B -q "$@" compile dependency:build-classpath -Dmdep.includeScope=runtime \
          -Dmdep.outputFile="$jg_cpfile")
      }
      jg_mvn -o >/dev/null 2>&1 || jg_mvn || jg_why="Maven build of bench/peers/java-grpc failed"
    fi
  fi
  if [[ -z "$jg_why" ]]; then
    if jg_built; then
      java_grpc_cp="$jg_target/classes:$(cat "$jg_cpfile")"
    else
      jg_why="bench/peers/java-grpc is not built"
    fi
  fi
  if [[ -n "$jg_why" ]]; then
    unavailable+=("java-grpc=$jg_why" "java-grpc-simple=$jg_why" "java-grpc-push=$jg_why")
  fi
fi

if wants go-push; then
  if [[ $build == 1 ]]; then
    if command -v go >/dev/null 2>&1; then
      log "building the Go peer (rocketmq-client-go/v2)"
      (cd "$BENCH/peers/go" && go build -o gopeer .) || unavailable+=("go-push=go build of bench/peers/go failed")
    else
      unavailable+=("go-push=go not found")
    fi
  fi
  [[ -x "$go_peer" ]] || [[ " ${unavailable[*]} " == *" go-push="* ]] || unavailable+=("go-push=bench/peers/go is not built")
fi

if wants rocketmq-rust-push; then
  if [[ $build == 1 ]]; then
    log "building the rocketmq-client-rust peer (its own Cargo project; the first build takes ~15 min on 2 cores)"
    (cd "$BENCH/peers/rocketmq-rust" && cargo build --release -q) \
      || unavailable+=("rocketmq-rust-push=cargo build of bench/peers/rocketmq-rust failed")
  fi
  [[ -x "$rust_peer" ]] || [[ " ${unavailable[*]} " == *" rocketmq-rust-push="* ]] \
    || unavailable+=("rocketmq-rust-push=bench/peers/rocketmq-rust is not built")
fi

# ---- run ------------------------------------------------------------------------------------------
args=(
  --namesrv "$NAMESRV_ADDR" --count "$count" --size "$size" --queues "$queues" --reps "$reps"
  --clients "$clients" --scenarios "$scenarios"
  --latency-rates "$latency_rates" --latency-broker-warmup "$latency_broker_warmup" --latency-duration "$latency_duration" --latency-warmup "$latency_warmup"
  --producer-threads "$producer_threads" --java-producer "$java_producer"
  --rmq-bench "$rmq_bench" --rmq-build "$rmq_profile" --java-cp "$java_cp" --go-peer "$go_peer" --rust-peer "$rust_peer"
  --java-grpc-cp "$java_grpc_cp" --proxy-endpoint "${RMQ_PROXY_ENDPOINT:-}"
  --rocketmq-version "$rmq_version" --mode-name "$mode_name"
  --batch-linger-ms "$batch_linger_ms" --batch-messages "$batch_messages" --batch-bytes "$batch_bytes"
  --scale-queues "$scale_queues" --scale-topics "$scale_topics" --scale-topic-queues "$scale_topic_queues"
  --idle-s "$idle_s" --ceiling-count "$ceiling_count" --floor-seconds "$floor_seconds"
  --broker-addrs "${RMQ_BROKER_ADDR:-}${RMQ_BROKER_B_ADDR:+,${RMQ_BROKER_B_ADDR}}"
)
# Quick runs (CI's, a smoke check) go to bench/results/quick/ (git-ignored); full runs beside it.
[[ "$mode_name" == quick ]] && args+=(--results-dir "$BENCH/results/quick")
[[ -n "$scale_count" ]] && args+=(--scale-count "$scale_count")
[[ -n "$producer_count" ]] && args+=(--producer-count "$producer_count")
[[ -n "$grpc_count" ]] && args+=(--grpc-count "$grpc_count")
[[ $tls == 1 ]] && args+=(--tls-ca "$RMQ_TLS_CA")
[[ $metrics == 1 ]] && args+=(--metrics)
[[ $trace == 1 ]] && args+=(--trace)
[[ $current_thread == 1 ]] && args+=(--current-thread)
[[ $acl == 1 ]] && args+=(--access-key "${RMQ_ACCESS_KEY:-rmq-bench-ak}" --secret-key "${RMQ_SECRET_KEY:-rmq-bench-secret-key}")
for u in "${unavailable[@]}"; do args+=(--unavailable "$u"); done
python3 "$BENCH/runner.py" "${args[@]}"
