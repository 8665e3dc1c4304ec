#!/usr/bin/env bash
# Where does the send-to-store delay of the latency scenario come from? Runs RUNS latency runs in a row
# against the running local broker (scripts/rocketmq-local.sh, the instance of RMQ_INSTANCE), each on a
# fresh topic: rmq-bench drain-push (store delay = store timestamp - born timestamp) and latency-produce at
# RATE msg/s for SECONDS (send-to-answer times, achieved rate). Beside each run: the broker process's CPU
# seconds per stored message (/proc/<pid>/stat) and the deepest send queue of its thread pool with the
# oldest request's wait ([WATERMARK] lines of watermark.log, one a second), and the load average.
#
# Usage: bench/scripts/store-delay-probe.sh RATE SECONDS RUNS   (rmq-bench from $RMQ_BENCH, default the
# release build under CARGO_TARGET_DIR or target/)
set -euo pipefail
rate="${1:-5000}" secs="${2:-15}" runs="${3:-3}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
B="${RMQ_BENCH:-${CARGO_TARGET_DIR:-$ROOT/target}/release/rmq-bench}"
inst="$ROOT/.cache/rocketmq/current${RMQ_INSTANCE:+-$RMQ_INSTANCE}"
[[ -d "$inst" ]] || { echo "no running instance at $inst" >&2; exit 1; }
eval "$("$ROOT/scripts/rocketmq-local.sh" env)"
pid="$(cat "$inst/broker-a/pid")"
wm="$inst/broker-a/home/logs/rocketmqlogs/watermark.log"
cpu() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
tck="$(getconf CLK_TCK)"
tag="probe$(date +%H%M%S)"
printf 'run | load avg | producer msg/s (acked) | send-to-answer p50/p99/max ms | store delay p50/p99/max ms | e2e p50/p99 ms | broker CPU us/msg | send queue max (oldest ms)\n'
for i in $(seq 1 "$runs"); do
  topic="${tag}_$i"
  "$B" create-topic --topic "$topic" --queues 8 --namesrv "$NAMESRV_ADDR" >/dev/null
  out="$(mktemp)"
  "$B" drain-push --topic "$topic" --group "${topic}_g" --expect $((rate * secs)) --latency-skip 0 \
    --timeout-s $((secs + 20)) --namesrv "$NAMESRV_ADDR" >"$out" 2>/dev/null &
  cons=$!
  until grep -q READY "$out"; do sleep 0.2; done
  sleep 3
  wm_from="$(wc -l <"$wm")"
  c0="$(cpu)"
  load="$(cut -d' ' -f1 /proc/loadavg)"
  prod="$("$B" latency-produce --topic "$topic" --rate "$rate" --duration-s "$secs" --warmup-s 0 \
    --namesrv "$NAMESRV_ADDR" 2>/dev/null | grep '^RESULT ' | cut -c8-)"
  wait "$cons" || true
  c1="$(cpu)"
  cres="$(grep '^RESULT ' "$out" | cut -c8-)"
  rm -f "$out"
  queue="$(tail -n +"$((wm_from + 1))" "$wm" | awk '/Send Queue Size/ {
      if ($8 + 0 > m) { m = $8 + 0; o = $10 } } END { printf "%d (%d)", m, o }')"
  python3 - "$prod" "$cres" "$c0" "$c1" "$tck" "$i" "$load" "$queue" <<'PY'
import json, sys
p, c = json.loads(sys.argv[1]), json.loads(sys.argv[2] or "{}")
c0, c1, tck = float(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
n = c.get("count") or 1
print(f"{sys.argv[6]} | {sys.argv[7]} | {p['msgs_per_s']:.0f} ({p['acked_msgs_per_s']:.0f}), {p['failed']} failed | "
      f"{p['ack_p50_ms']:.1f} / {p['ack_p99_ms']:.1f} / {p['ack_max_ms']:.1f} | "
      f"{c.get('store_delay_p50_ms', 0):.0f} / {c.get('store_delay_p99_ms', 0):.0f} / {c.get('store_delay_max_ms', 0):.0f} | "
      f"{c.get('p50_ms', 0):.1f} / {c.get('p99_ms', 0):.1f} | {(c1 - c0) / tck / n * 1e6:.0f} | {sys.argv[8]}")
PY
done
