#!/usr/bin/env python3
"""Benchmark runner of bench/run.sh (python3 standard library only).

Runs every measurement as a separate client process, interleaved between clients and
repeated; reads each program's `RESULT {json}` line; measures the process's CPU seconds
(user + sys) and peak RSS with wait4(2); prints a Markdown table; writes
bench/results/<timestamp>.json ({"config", "results"}, the schema bench/README.md describes),
<timestamp>.runs.json (every single run, failures included) and <timestamp>.svg (rmq-bench chart).

Normally started by bench/run.sh, which starts the broker and builds the programs.
"""

import argparse
import datetime as _dt
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

DRAIN_CLIENTS = ["rmq-push", "rmq-pull", "raw-pull", "java-push", "go-push", "rocketmq-rust-push",
                 "rmq-pop-push", "rmq-simple", "java-pop-push"]
# Pop consumption (RocketMQ 5 only): skipped against a 4.x broker.
POP_CLIENTS = {"rmq-pop-push", "rmq-simple", "java-pop-push"}
LATENCY_CLIENTS = ["rmq-push", "java-push", "go-push", "rocketmq-rust-push"]
PRODUCER_CLIENTS = ["rmq-producer", "java-producer"]
# rmq beside itself with TLS (--tls) or signing (--acl): variant -> (base client, kind)
VARIANTS = {
    "rmq-push-tls": ("rmq-push", "tls"),
    "rmq-pull-tls": ("rmq-pull", "tls"),
    "rmq-push-signed": ("rmq-push", "acl"),
    "rmq-push-metrics": ("rmq-push", "metrics"),
    "rmq-push-trace": ("rmq-push", "trace"),
    "rmq-producer-tls": ("rmq-producer", "tls"),
    "rmq-producer-signed": ("rmq-producer", "acl"),
    # rmq on a current-thread tokio runtime (`--runtime current-thread`) instead of the default
    # multi-thread one: what the scheduler's cross-thread wake-ups cost (drain, latency, produce).
    "rmq-push-ct": ("rmq-push", "current-thread"),
    "rmq-pull-ct": ("rmq-pull", "current-thread"),
    "rmq-producer-ct": ("rmq-producer", "current-thread"),
}
# The gRPC scenario (--scenarios grpc): rmq and the official Java gRPC client
# (rocketmq-client-java) through the RocketMQ 5.x proxy.
GRPC_PRODUCER_CLIENTS = ["rmq-grpc", "java-grpc"]
GRPC_DRAIN_CLIENTS = ["rmq-grpc-simple", "rmq-grpc-push", "java-grpc-simple", "java-grpc-push"]
GRPC_CLIENTS = GRPC_PRODUCER_CLIENTS + GRPC_DRAIN_CLIENTS
# Clients of the gRPC scenario whose program is not there yet: client -> why.
GRPC_PENDING = {}
GRPC_SCENARIOS = {"grpc": ["grpc-produce", "grpc-drain"], "grpc-produce": ["grpc-produce"],
                  "grpc-drain": ["grpc-drain"]}
# (rmq client, Java client, scenario) compared by the gRPC targets.
GRPC_PAIRS = [("rmq-grpc", "java-grpc", "grpc-produce-sync"), ("rmq-grpc", "java-grpc", "grpc-produce-async"),
              ("rmq-grpc-simple", "java-grpc-simple", "grpc-drain"), ("rmq-grpc-push", "java-grpc-push", "grpc-drain")]
# The 5.x message type a topic served by the proxy needs.
GRPC_TOPIC_ATTRIBUTES = "+message.type=NORMAL"
# --scenarios produce-batching: rmq's async producer beside itself with auto-batching
# (ProducerBuilder::batching), the Java client's async sends with and without its autoBatch, and
# raw-send: the broker's intake of the same batches from a client that does nothing per message (one
# encoded SEND_BATCH_MESSAGE sent again and again), the ceiling of any batching producer here.
BATCHING_CLIENTS = ["rmq-producer", "rmq-producer-batching", "java-producer", "java-producer-batching",
                    "raw-send"]
# produce-batching: the broker's warm-up before the repetitions, in runs of --producer-count batched messages.
BATCHING_WARMUP_RUNS = 10
# --scenarios scale: push-consumer drains of 8 / 64 / 512 queues over the brokers and of 100
# topics (scenario names scale-<Q>q, scale-<T>t); rmq's idle memory per queue.
SCALE_CLIENTS = ["rmq-push", "java-push"]
# --scenarios ceiling: rmq's consumers draining the in-process fake broker (rmq-bench fake-drain).
CEILING_CLIENTS = ["rmq-push-fake", "rmq-pull-fake"]
# --scenarios floor: what one request/response round trip costs a tokio client on this machine, with no
# RocketMQ in it (rmq-bench rtt-floor against a loopback server on plain threads): one task doing the reads
# and writes (single), the task layout of a multiplexing client (tasks: reader, a task per queue, writer,
# consumer), the same with each queue task writing its own requests (direct), a task per outstanding request
# awaiting its answer beside one connection task (callers: a synchronous producer's least); single, tasks
# and callers also on the current-thread runtime (-ct); in the shape of the latency scenario and of the sync
# and async producers (their rates, their requests in flight).
FLOOR_CLIENTS = ["floor-single", "floor-tasks", "floor-direct", "floor-callers", "floor-single-ct",
                 "floor-tasks-ct", "floor-callers-ct"]
# Clients that exist only in their scenario.
SCENARIO_CLIENTS = {"produce-batching": ["rmq-producer-batching", "java-producer-batching", "raw-send"],
                    "ceiling": CEILING_CLIENTS, "floor": FLOOR_CLIENTS}
EXTRA_SCENARIOS = ("produce-batching", "scale", "ceiling", "floor")
ALIASES = {
    "rmq": ["rmq-push", "rmq-pull", "raw-pull", "rmq-producer", "rmq-grpc", "rmq-grpc-simple", "rmq-grpc-push",
            "rmq-producer-batching", "raw-send", "rmq-push-fake", "rmq-pull-fake", *FLOOR_CLIENTS],
    "java": ["java-push", "java-producer", "java-grpc", "java-grpc-simple", "java-grpc-push", "java-producer-batching"],
    "pop": ["rmq-push", "rmq-pop-push", "rmq-simple", "java-push", "java-pop-push"],
    "go": ["go-push"],
    "rocketmq-rust": ["rocketmq-rust-push"],
    "grpc": GRPC_CLIENTS,
    # As --clients, rmq-grpc and java-grpc name the client's producer and its consumers.
    "rmq-grpc": ["rmq-grpc", "rmq-grpc-simple", "rmq-grpc-push"],
    "java-grpc": ["java-grpc", "java-grpc-simple", "java-grpc-push"],
    "all": DRAIN_CLIENTS + PRODUCER_CLIENTS + GRPC_CLIENTS + ["rmq-producer-batching", "java-producer-batching", "raw-send"]
    + CEILING_CLIENTS + FLOOR_CLIENTS,
}
ALL_CLIENTS = list(dict.fromkeys(ALIASES["all"]))


def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class Run:
    """One client process: its RESULT json, exit status, CPU seconds and peak RSS."""

    # Whether the process must print a RESULT line to count as a success (helper commands do not).
    needs_result = True

    def __init__(self, name, argv, timeout, env=None):
        self.name = name
        self.argv = argv
        self.timeout = timeout
        self.env = env
        self.result = None
        self.ready = threading.Event()
        self.lines = []
        self.stderr_tail = []
        self.proc = None
        self.status = None
        self.cpu_s = None
        self.peak_rss_bytes = None
        self.hwm_bytes = None
        self.peak_threads = None
        self.wall_s = None
        self.killed = False

    def start(self):
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(
            self.argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            env=self.env,
            text=True,
            start_new_session=True,
        )
        threading.Thread(target=self._read_out, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()
        threading.Thread(target=self._poll_hwm, daemon=True).start()
        self._watchdog = threading.Timer(self.timeout, self._kill)
        self._watchdog.daemon = True
        self._watchdog.start()
        return self

    def _read_out(self):
        for line in self.proc.stdout:
            line = line.rstrip("\n")
            self.lines.append(line)
            if line.strip() == "READY":
                self.ready.set()
            elif line.startswith("RESULT "):
                try:
                    self.result = json.loads(line[len("RESULT "):])
                except ValueError:
                    pass
            elif line.startswith("[Complete]"):  # Java benchmark Producer
                self.result = {"complete_line": line}

    def _read_err(self):
        for line in self.proc.stderr:
            self.stderr_tail.append(line.rstrip("\n"))
            if len(self.stderr_tail) > 30:
                self.stderr_tail.pop(0)

    def _poll_hwm(self):
        """Peak RSS = the process's VmHWM, read every 20 ms until it exits. (wait4's ru_maxrss
        would also count the runner's own pages from before exec, a floor of ~18 MiB.) The same
        reading keeps the largest thread count seen (Threads)."""
        path = f"/proc/{self.proc.pid}/status"
        while self.proc.returncode is None:
            try:
                with open(path) as f:
                    hwm = False
                    for line in f:
                        if line.startswith("VmHWM:"):
                            kib = int(line.split()[1])
                            self.hwm_bytes = max(self.hwm_bytes or 0, kib * 1024)
                            hwm = True
                        elif line.startswith("Threads:"):
                            self.peak_threads = max(self.peak_threads or 0, int(line.split()[1]))
                    if not hwm:
                        return  # zombie: no memory any more
            except (OSError, ValueError):
                return
            time.sleep(0.02)

    def _kill(self, reason=None):
        """SIGKILL the process group: its watchdog's timeout, or the runner's reason."""
        self.kill_reason = reason
        self.killed = True
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def wait(self):
        """Reaps the process with wait4 (CPU time and peak RSS of exactly this process)."""
        _, status, ru = os.wait4(self.proc.pid, 0)
        self._watchdog.cancel()
        self.wall_s = time.monotonic() - self.t0
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        self.status = self.proc.returncode
        self.cpu_s = ru.ru_utime + ru.ru_stime
        # VmHWM polled while it ran; wait4's ru_maxrss (KiB on Linux) only if that failed.
        self.peak_rss_bytes = self.hwm_bytes or ru.ru_maxrss * 1024
        # let the reader threads drain the pipes
        for _ in range(50):
            if self.proc.stdout.closed or self.result is not None:
                break
            time.sleep(0.01)
        time.sleep(0.05)
        return self

    def ok(self):
        return self.status == 0 and not self.killed and (self.result is not None or not self.needs_result)

    def failure(self):
        why = "killed after %ds" % self.timeout if self.killed else "exit %s" % self.status
        if self.killed and getattr(self, "kill_reason", None):
            why = "killed: " + self.kill_reason
        if self.status == 0 and self.result is None:
            why = "no RESULT line"
        tail = " | ".join(self.stderr_tail[-5:] or self.lines[-5:])
        return f"{self.name}: {why}: {tail}"[:2000]


class Bench:
    def __init__(self, a):
        self.a = a
        self.ns = a.namesrv
        self.id = time.strftime("%Y%m%d%H%M%S")
        self.runs = []  # every run, for <ts>.runs.json
        self.values = {}  # (client, scenario, metric) -> [values]
        self.failures = []
        self.available = set(a.available.split(",")) if a.available else set()
        self.unavailable = dict(x.split("=", 1) for x in a.unavailable) if a.unavailable else {}
        self.brokers = [x for x in a.broker_addrs.split(",") if x] if a.broker_addrs else []
        self.scale_assigned = {}  # (client, scale scenario) -> queues the consumer held at the end
        self.scale_layout = {}  # scale scenario -> {"topics", "queues", "brokers"}
        self.ceiling_util = {}  # client -> [(client busy share, fake busy share)]
        self.floor_shapes = {}  # floor scenario -> its rate, outstanding requests, frame sizes
        self.latency_warmup_result = None  # the broker warm-up run's producer figures

    # ---- programs -------------------------------------------------------------------------
    def rmq(self, *args):
        return [self.a.rmq_bench, *args, "--namesrv", self.ns]

    def variant_flags(self, client):
        """The extra rmq-bench flags of a --tls / --acl variant (none for the others)."""
        kind = VARIANTS.get(client, (None, None))[1]
        if kind == "tls":
            return ["--tls-ca", self.a.tls_ca]
        if kind == "metrics":
            return ["--metrics-recorder", "prometheus"]
        if kind == "trace":
            return ["--trace", "1"]
        if kind == "acl":
            return ["--access-key", self.a.access_key, "--secret-key", self.a.secret_key]
        if kind == "current-thread":
            return ["--runtime", "current-thread"]
        return []

    def consumer_argv(self, client, topic, group, expect, latency_skip=None):
        common = ["--topic", topic, "--group", group, "--expect", str(expect),
                  "--timeout-s", str(self.a.client_timeout)]
        peer_common = common + ["--namesrv", self.ns, "--threads", str(self.a.threads),
                                "--batch", str(self.a.batch)]
        if latency_skip is not None:
            peer_common += ["--latency-skip", str(latency_skip)]
        if client in VARIANTS:
            base = VARIANTS[client][0]
            return self.consumer_argv(base, topic, group, expect, latency_skip) + self.variant_flags(client)
        if client == "rmq-push":
            return [self.a.rmq_bench, "drain-push", *peer_common]
        if client == "rmq-pop-push":
            return [self.a.rmq_bench, "drain-push", *peer_common, "--pop", "1"]
        if client == "rmq-simple":
            return [self.a.rmq_bench, "drain-simple", *common, "--namesrv", self.ns,
                    "--threads", str(self.a.threads), "--batch", str(self.a.batch)]
        if client == "java-pop-push":
            return ["java", *self.a.java_opts.split(), "-cp", self.a.java_cp, "rmqbench.Drain",
                    *peer_common, "--pop", "1"]
        if client == "rmq-pull":
            return [self.a.rmq_bench, "drain-pull", *common, "--namesrv", self.ns, "--batch", str(self.a.batch)]
        if client == "raw-pull":
            return [self.a.rmq_bench, "raw-pull", *common, "--namesrv", self.ns, "--batch", str(self.a.batch)]
        if client == "java-push":
            return ["java", *self.a.java_opts.split(), "-cp", self.a.java_cp, "rmqbench.Drain", *peer_common]
        if client == "go-push":
            return [self.a.go_peer, *[f"-{x[2:]}" if x.startswith("--") else x for x in peer_common]]
        if client == "rocketmq-rust-push":
            return [self.a.rust_peer, *peer_common]
        grpc = ["--endpoint", self.a.proxy_endpoint]
        if client == "rmq-grpc-simple":
            return [self.a.rmq_bench, "drain-simple", *peer_common, *grpc]
        if client == "rmq-grpc-push":
            return [self.a.rmq_bench, "drain-push", *peer_common, *grpc]
        if client in ("java-grpc-simple", "java-grpc-push"):
            mode = "drain-simple" if client == "java-grpc-simple" else "drain-push"
            return ["java", *self.a.java_opts.split(), "-cp", self.a.java_grpc_cp, "rmqgrpc.GrpcBench", mode,
                    *grpc, "--topic", topic, "--group", group, "--expect", str(expect),
                    "--timeout-s", str(self.a.client_timeout), "--threads", str(self.a.threads),
                    "--batch", str(self.a.batch)]
        raise ValueError(client)

    def run(self, name, argv, timeout, wait=True, needs_result=True):
        log("run " + name + ": " + " ".join(argv))
        r = Run(name, argv, timeout)
        r.needs_result = needs_result
        r.start()
        if wait:
            r.wait()
            self.record_run(r)
        return r

    def record_run(self, r):
        self.runs.append({
            "name": r.name, "argv": r.argv, "status": r.status, "killed": r.killed,
            "wall_s": r.wall_s, "cpu_s": r.cpu_s, "peak_rss_bytes": r.peak_rss_bytes,
            "peak_threads": r.peak_threads, "result": r.result, "stderr_tail": r.stderr_tail[-10:] if not r.ok() else [],
        })
        if not r.ok():
            self.failures.append(r.failure())
            log("FAILED " + r.failure())

    def add(self, client, scenario, metric, value):
        if value is None:
            return
        self.values.setdefault((client, scenario, metric), []).append(float(value))

    def create_topic(self, topic, attributes=None, queues=None, brokers=None):
        """Creates topic (or the comma-joined topics) with queues (default --queues) on the broker
        of RMQ_BROKER_ADDR, or queues on each of brokers (addresses)."""
        extra = ["--attributes", attributes] if attributes else []
        if brokers:
            extra += ["--broker-addr", ",".join(brokers)]
        name = topic if len(topic) < 80 else topic[:60] + f"... ({topic.count(',') + 1} topics)"
        r = self.run("create-topic " + name, self.rmq("create-topic", "--topic", topic, "--queues",
                                                     str(queues or self.a.queues), *extra), 300)
        if not r.ok():
            raise SystemExit("cannot create topic %s: %s" % (topic, r.failure()))

    # ---- scenarios ------------------------------------------------------------------------
    def clients_for(self, candidates):
        out = []
        for c in candidates:
            if c not in self.a.client_set:
                continue
            if c in self.unavailable:
                continue
            out.append(c)
        return out

    @staticmethod
    def rotated(items, rep):
        if not items:
            return items
        k = rep % len(items)
        return items[k:] + items[:k]

    def preload_topic(self, topic, what, count):
        """rmq-bench preload: count messages into topic (remoting, batches of 32)."""
        name = topic if "," not in topic else f"{topic.count(',') + 1} topics ({topic.split(',')[0]}, ...)"
        log(f"preloading {count} x {self.a.size} B into {name}")
        r = self.run("preload", self.rmq("preload", "--topic", topic, "--count", str(count),
                                         "--size", str(self.a.size)), 900)
        if not r.ok():
            raise SystemExit("preload failed: " + r.failure())
        el = r.result.get("elapsed_s") or 0
        log(f"preloaded in {el:.1f} s ({count / el if el else 0:.0f} msg/s)")
        # runs.json "preload": {"elapsed_s"} of the drain topic, plus {"grpc-drain": {"elapsed_s"}}.
        self.preload = dict(self.preload or {})
        if what == "drain":
            self.preload["elapsed_s"] = el
        else:
            self.preload[what] = {"elapsed_s": el}

    def drain_runs(self, scenario, clients, topic, expect):
        """Every repetition, every client (order rotated) drains topic (expect messages) with a
        fresh group."""
        for rep in range(self.a.reps):
            for client in self.rotated(clients, rep):
                group = f"bench_{client.replace('-', '_')}_{self.id}_{rep}"
                if client == "java-pop-push":
                    # Java pops only when the broker assigns in POP mode.
                    m = self.run("set-pop-mode " + group,
                                 self.rmq("set-pop-mode", "--topic", topic, "--group", group), 60,
                                 needs_result=False)
                    if not m.ok():
                        continue
                r = self.run(f"{scenario} {client} #{rep + 1}",
                             self.consumer_argv(client, topic, group, expect),
                             self.a.client_timeout + 60)
                if not r.ok():
                    continue
                res = r.result
                count, el = res.get("count", 0), res.get("elapsed_s", 0)
                if res.get("timeout") or count < expect:
                    self.failures.append(f"{scenario} {client} #{rep + 1}: received {count} of {expect}")
                    continue
                if el > 0:
                    self.add(client, scenario, "msgs_per_s", count / el)
                self.add(client, scenario, "cpu_s_per_msg", r.cpu_s / count)
                self.add(client, scenario, "peak_rss_bytes", r.peak_rss_bytes)
                if scenario.startswith("scale-"):
                    self.add(client, scenario, "threads", r.peak_threads)
                    if res.get("assigned_queues") is not None:
                        self.scale_assigned[(client, scenario)] = res["assigned_queues"]
                log(f"  {client}: {count / el if el else 0:,.0f} msg/s, cpu {r.cpu_s:.2f} s, "
                    f"rss {r.peak_rss_bytes / 2**20:.0f} MiB, startup {res.get('startup_s', 0):.2f} s")

    def drain(self):
        clients = self.clients_for(DRAIN_CLIENTS)
        if not clients:
            return
        topic = f"bench_drain_{self.id}"
        self.create_topic(topic)
        self.preload_topic(topic, "drain", self.a.count)
        self.drain_runs("drain", clients, topic, self.a.count)

    def grpc_drain(self):
        """grpc-drain: the same preloaded topic (with its 5.x message type) drained through the proxy."""
        clients = self.clients_for(GRPC_DRAIN_CLIENTS)
        if not clients:
            return
        topic = f"bench_grpc_drain_{self.id}"
        self.create_topic(topic, GRPC_TOPIC_ATTRIBUTES)
        self.preload_topic(topic, "grpc-drain", self.a.grpc_count)
        self.drain_runs("grpc-drain", clients, topic, self.a.grpc_count)

    def grpc_produce(self):
        """grpc-produce-sync / grpc-produce-async: sends through the proxy, modes interleaved per
        repetition as produce() does."""
        clients = self.clients_for(GRPC_PRODUCER_CLIENTS)
        if not clients:
            return
        topic = f"bench_grpc_produce_{self.id}"
        self.create_topic(topic, GRPC_TOPIC_ATTRIBUTES)
        n, t, size = self.a.grpc_count, self.a.producer_threads, self.a.size
        for rep in range(self.a.reps):
            for mode in ("sync", "async"):
                scenario = "grpc-produce-" + mode
                for client in self.rotated(clients, rep):
                    if client == "rmq-grpc":
                        argv = self.rmq("produce", "--topic", topic, "--count", str(n), "--size", str(size),
                                        "--mode", mode, "--tasks", str(t), "--inflight", str(self.a.producer_inflight),
                                        "--endpoint", self.a.proxy_endpoint)
                    else:
                        argv = ["java", *self.a.java_opts.split(), "-cp", self.a.java_grpc_cp, "rmqgrpc.GrpcBench",
                                "produce-" + mode, "--endpoint", self.a.proxy_endpoint, "--topic", topic,
                                "--count", str(n), "--size", str(size), "--threads", str(t),
                                "--inflight", str(self.a.producer_inflight)]
                    r = self.run(f"{scenario} {client} #{rep + 1}", argv, self.a.client_timeout + 60)
                    self.record_produce(client, scenario, r, rep, mode)

    def latency_scenario(self, rate):
        """The scenario name of the latency runs at rate: latency with one rate, latency-<rate> with several."""
        return "latency" if len(self.a.latency_rates) == 1 else f"latency-{rate}"

    def latency_broker_warmup(self, clients):
        """Unmeasured, before the latency runs: one latency run (rmq-push and latency-produce) at the highest
        rate for --latency-broker-warmup seconds on a topic of its own. A freshly started broker spends far
        more CPU per message while its JIT compiles the send, store and pull paths (bench/README.md, "Store
        delay"): its send thread pool's queue grows to thousands of requests and the first runs would measure
        that as seconds of latency. Sends that fail here (a cold broker answers "busy") are logged only."""
        secs = self.a.latency_broker_warmup
        if secs <= 0:
            return
        rate = max(self.a.latency_rates)
        client = "rmq-push" if "rmq-push" in clients else clients[0]
        topic = f"bench_lat_warmup_{self.id}"
        self.create_topic(topic)
        total = rate * secs
        log(f"latency broker warm-up: {client} and latency-produce at {rate} msg/s for {secs} s (not measured)")
        cons = Run("latency broker warm-up consumer",
                   self.consumer_argv(client, topic, f"bench_lat_warmup_{self.id}", total, latency_skip=0),
                   secs + 120).start()
        if cons.ready.wait(90):
            time.sleep(self.a.settle)
            prod = Run("latency broker warm-up producer",
                       self.rmq("latency-produce", "--topic", topic, "--rate", str(rate), "--duration-s", str(secs),
                                "--warmup-s", "0", "--size", str(self.a.size)), secs + 120).start().wait()
            res = prod.result or {}
            if res.get("failed") or not prod.ok():
                cons._kill()  # it would wait for messages never stored
            cons.wait()
            cres = cons.result or {}
            self.latency_warmup_result = {
                "client": client, "rate": rate, "seconds": secs, "sent": res.get("count"),
                "failed": res.get("failed"), "acked_msgs_per_s": res.get("acked_msgs_per_s"),
                "ack_p50_ms": res.get("ack_p50_ms"), "ack_p99_ms": res.get("ack_p99_ms"),
                "store_delay_p50_ms": cres.get("store_delay_p50_ms"),
                "store_delay_p99_ms": cres.get("store_delay_p99_ms")}
            log(f"  broker warm-up: {res.get('failed', '?')} of {res.get('count', '?')} sends failed, "
                f"send-to-answer p50 {res.get('ack_p50_ms')} ms p99 {res.get('ack_p99_ms')} ms, store delay "
                f"p50 {cres.get('store_delay_p50_ms')} ms p99 {cres.get('store_delay_p99_ms')} ms")
        else:
            cons._kill()
            cons.wait()
            log("  broker warm-up: the consumer did not start; going on")

    def latency(self):
        clients = self.clients_for(LATENCY_CLIENTS)
        if not clients:
            return
        self.latency_broker_warmup(clients)
        for rate in self.a.latency_rates:
            self.latency_at(clients, rate)

    def latency_at(self, clients, rate):
        """Every repetition, every client (order rotated): a fresh topic, the consumer, then latency-produce
        at rate for --latency-warmup + --latency-duration seconds."""
        scenario = self.latency_scenario(rate)
        dur, warm = self.a.latency_duration, self.a.latency_warmup
        total, skip = rate * (dur + warm), rate * warm
        for rep in range(self.a.reps):
            for client in self.rotated(clients, rep):
                topic = f"bench_lat_{self.id}_{rate}_{client.replace('-', '_')}_{rep}"
                self.create_topic(topic)
                group = f"bench_lat_{client.replace('-', '_')}_{self.id}_{rate}_{rep}"
                label = f"{scenario} {client} #{rep + 1}"
                cons = self.run(label, self.consumer_argv(client, topic, group, total, latency_skip=skip),
                                dur + warm + self.a.client_timeout, wait=False)
                if not cons.ready.wait(90):
                    cons._kill("no READY within 90 s")
                    cons.wait()
                    self.record_run(cons)
                    continue
                time.sleep(self.a.settle)  # let the first rebalance assign every queue
                prod = self.run(f"{scenario} producer for {client} #{rep + 1}",
                                self.rmq("latency-produce", "--topic", topic, "--rate", str(rate),
                                         "--duration-s", str(dur), "--warmup-s", str(warm),
                                         "--size", str(self.a.size)),
                                dur + warm + 120)
                failed = (prod.result or {}).get("failed", 0) if prod.ok() else 0
                if failed:
                    # The consumer would wait for messages never stored: stop it now.
                    cons._kill("its producer's sends failed")
                    cons.wait()
                    self.record_run(cons)
                    why = " | ".join(prod.stderr_tail[-3:])
                    self.failures.append(f"{label}: {failed} of {total} sends failed ({why})")
                    continue
                cons.wait()
                self.record_run(cons)
                if not (cons.ok() and prod.ok()):
                    continue
                res = cons.result
                if res.get("timeout") or res.get("count", 0) < total:
                    self.failures.append(f"{label}: received {res.get('count')} of {total}")
                    continue
                if res.get("latency_out_of_range"):
                    self.failures.append(f"{label}: {res['latency_out_of_range']} latencies above the histogram's "
                                         "hour")
                    continue
                pres = prod.result
                for m in ("p50_ms", "p99_ms", "p999_ms", "max_ms", "store_delay_p50_ms", "store_delay_p99_ms",
                          "store_delay_max_ms"):
                    self.add(client, scenario, m, res.get(m))
                # The producer's achieved rate (sends issued per second, and up to the last answer) and its
                # send-to-answer times: a producer or broker behind the rate shows here.
                self.add(client, scenario, "msgs_per_s", pres.get("msgs_per_s"))
                self.add(client, scenario, "producer_acked_msgs_per_s", pres.get("acked_msgs_per_s"))
                self.add(client, scenario, "producer_ack_p50_ms", pres.get("ack_p50_ms"))
                self.add(client, scenario, "producer_ack_p99_ms", pres.get("ack_p99_ms"))
                self.add(client, scenario, "cpu_s_per_msg", cons.cpu_s / res["count"])
                self.add(client, scenario, "peak_rss_bytes", cons.peak_rss_bytes)
                log(f"  {client}: p50 {res.get('p50_ms')} ms, p99 {res.get('p99_ms')} ms, "
                    f"p999 {res.get('p999_ms')} ms, max {res.get('max_ms')} ms ({res.get('latency_samples')} "
                    f"samples); store delay p50 {res.get('store_delay_p50_ms')} ms, p99 "
                    f"{res.get('store_delay_p99_ms')} ms; producer {pres.get('msgs_per_s', 0):.0f} msg/s "
                    f"({pres.get('acked_msgs_per_s', 0):.0f} acked), send-to-answer p99 {pres.get('ack_p99_ms')} ms")

    def produce(self, modes=("sync", "async")):
        """Producer throughput, `modes` interleaved per repetition: sync, async and tx
        (transactional sends: half message + END_TRANSACTION, local transactions committing at once,
        with the sync runs' threads/tasks)."""
        clients = self.clients_for(PRODUCER_CLIENTS)
        if not clients:
            return
        topic = f"bench_produce_{self.id}"
        self.create_topic(topic)
        n, t, size = self.a.producer_count, self.a.producer_threads, self.a.size
        for rep in range(self.a.reps):
            for mode in modes:
                scenario = "produce-" + mode
                for client in self.rotated(clients, rep):
                    if client == "rmq-producer" or VARIANTS.get(client, ("",))[0] == "rmq-producer":
                        argv = self.rmq("produce", "--topic", topic, "--count", str(n), "--size", str(size),
                                        "--mode", mode, "--tasks", str(t), "--inflight", str(self.a.producer_inflight),
                                        *self.variant_flags(client))
                    elif mode == "sync" and self.a.java_producer == "official":
                        argv = ["java", *self.a.java_opts.split(), "-cp", self.a.java_cp,
                                "org.apache.rocketmq.example.benchmark.Producer", "-n", self.ns, "-t", topic,
                                "-s", str(size), "-w", str(t), "-q", str(n), "-y", "false"]
                    else:
                        # The official Producer with -q and -y true reports before its callbacks ran
                        # (see peers/java/.../Produce.java): async uses the equivalent program.
                        argv = ["java", *self.a.java_opts.split(), "-cp", self.a.java_cp, "rmqbench.Produce",
                                "--namesrv", self.ns, "--topic", topic, "--count", str(n), "--size", str(size),
                                "--mode", mode, "--threads", str(t), "--inflight", str(self.a.producer_inflight)]
                    r = self.run(f"{scenario} {client} #{rep + 1}", argv, self.a.client_timeout + 60)
                    if not r.ok():
                        continue
                    res = r.result
                    if "msgs_per_s" in res:  # rmq-bench produce, rmqbench.Produce
                        rate, count = res.get("msgs_per_s"), res.get("count", 0)
                        if res.get("failed"):
                            self.failures.append(f"{scenario} {client} #{rep + 1}: {res['failed']} sends failed")
                    else:
                        rate, count = parse_java_producer(res.get("complete_line", ""), r.wall_s, n)
                    if not rate:
                        self.failures.append(f"{scenario} {client} #{rep + 1}: no throughput figure")
                        continue
                    self.add(client, scenario, "msgs_per_s", rate)
                    if count:
                        self.add(client, scenario, "cpu_s_per_msg", r.cpu_s / count)
                    self.add(client, scenario, "peak_rss_bytes", r.peak_rss_bytes)
                    log(f"  {client} {mode}: {rate:,.0f} msg/s, cpu {r.cpu_s:.2f} s, "
                        f"rss {r.peak_rss_bytes / 2**20:.0f} MiB")

    def record_produce(self, client, scenario, r, rep, mode):
        """The figures of one producer run (rmq-bench produce or rmqbench.Produce)."""
        if not r.ok():
            return
        res = r.result
        rate, count = res.get("msgs_per_s"), res.get("count", 0)
        if res.get("failed"):
            self.failures.append(f"{scenario} {client} #{rep + 1}: {res['failed']} sends failed")
        if not rate:
            self.failures.append(f"{scenario} {client} #{rep + 1}: no throughput figure")
            return
        self.add(client, scenario, "msgs_per_s", rate)
        if count:
            self.add(client, scenario, "cpu_s_per_msg", r.cpu_s / count)
        self.add(client, scenario, "peak_rss_bytes", r.peak_rss_bytes)
        log(f"  {client} {mode}: {rate:,.0f} msg/s, cpu {r.cpu_s:.2f} s, "
            f"rss {r.peak_rss_bytes / 2**20:.0f} MiB")

    def produce_batching(self):
        """produce-batching: async sends (one loop, --producer-inflight pending) of rmq's producer
        without and with auto-batching, and of the Java producer without and with autoBatch,
        interleaved per repetition on one topic."""
        clients = self.clients_for(BATCHING_CLIENTS)
        if not clients:
            return
        topic = f"bench_batching_{self.id}"
        self.create_topic(topic)
        n, size, inflight = self.a.producer_count, self.a.size, self.a.producer_inflight
        # Java's autoBatch has no message-count bound: its byte bound is set to the batch rmq
        # sends (batch-messages x size, at most batch-bytes), so both send batches of one size.
        java_batch_bytes = min(self.a.batch_bytes, self.a.batch_messages * size)
        batch_messages = min(self.a.batch_messages, max(1, self.a.batch_bytes // max(1, size)))
        # Unmeasured: the broker's JIT compiles its single-message and batch store paths first. On a
        # fresh broker the intake of batches climbed over the first millions of messages (57 k, 79 k,
        # 94 k msg/s in the first runs of 400 000, then 87-96 k), so one run of N was not enough.
        warm = BATCHING_WARMUP_RUNS * n
        for what, argv in (("single sends", self.rmq("produce", "--topic", topic, "--count", str(n), "--size",
                                                     str(size), "--mode", "async", "--inflight", str(inflight))),
                           ("batches", self.rmq("raw-send", "--topic", topic, "--count", str(warm), "--size",
                                                str(size), "--inflight", str(inflight), "--batch-messages",
                                                str(batch_messages)))):
            r = self.run(f"produce-batching broker warm-up, {what}", argv, self.a.client_timeout + 60)
            if not r.ok():
                self.failures.append(f"produce-batching broker warm-up ({what}): {r.failure()}")
        for rep in range(self.a.reps):
            for client in self.rotated(clients, rep):
                if client == "raw-send":
                    argv = self.rmq("raw-send", "--topic", topic, "--count", str(n), "--size", str(size),
                                    "--inflight", str(inflight), "--batch-messages", str(batch_messages))
                elif client.startswith("rmq-"):
                    argv = self.rmq("produce", "--topic", topic, "--count", str(n), "--size", str(size),
                                    "--mode", "async", "--inflight", str(inflight))
                    if client == "rmq-producer-batching":
                        argv += ["--batching", "1", "--linger-ms", str(self.a.batch_linger_ms),
                                 "--batch-messages", str(self.a.batch_messages),
                                 "--batch-bytes", str(self.a.batch_bytes)]
                else:
                    argv = ["java", *self.a.java_opts.split(), "-cp", self.a.java_cp, "rmqbench.Produce",
                            "--namesrv", self.ns, "--topic", topic, "--count", str(n), "--size", str(size),
                            "--mode", "async", "--inflight", str(inflight)]
                    if client == "java-producer-batching":
                        argv += ["--auto-batch", "1", "--batch-delay-ms", str(self.a.batch_linger_ms),
                                 "--batch-max-bytes", str(java_batch_bytes)]
                r = self.run(f"produce-batching {client} #{rep + 1}", argv, self.a.client_timeout + 60)
                self.record_produce(client, "produce-batching", r, rep, "async")

    def scale_cases(self):
        """[(scenario, topics, queues per broker)] of the scale scenario."""
        nb = len(self.brokers) or 1
        cases = []
        for q in self.a.scale_queues:
            per = max(1, q // nb)
            cases.append((f"scale-{per * nb}q", 1, per))
        if self.a.scale_topics > 0:
            per = max(1, self.a.scale_topic_queues // nb)
            cases.append((f"scale-{self.a.scale_topics}t", self.a.scale_topics, per))
        return cases

    def scale_topics(self, kind, scenario, n_topics):
        base = f"bench_{kind}_{scenario.replace('-', '_')}_{self.id}"
        return base if n_topics == 1 else ",".join(f"{base}_{i}" for i in range(n_topics))

    def idle_run(self, label, topics, queues, rep):
        """rmq-bench idle-push on empty topics: the consumer's resident set once it holds every
        queue; None when the run failed."""
        group = f"bench_idle_{label.replace('-', '_')}_{self.id}_{rep}"
        r = self.run(f"idle {label} #{rep + 1}",
                     self.rmq("idle-push", "--topic", topics, "--group", group, "--expect-queues", str(queues),
                              "--idle-s", str(self.a.idle_s), "--threads", str(self.a.threads),
                              "--batch", str(self.a.batch)),
                     self.a.client_timeout + 60)
        if not r.ok():
            return None
        res = r.result
        log(f"  idle {label}: {res.get('assigned_queues')} queues, rss {res.get('idle_rss_bytes', 0) / 2**20:.1f} MiB, "
            f"{res.get('threads')} threads, idle cpu {res.get('idle_cpu_s', 0):.3f} s "
            f"(all assigned after {res.get('assigned_s', 0):.1f} s)")
        return res

    def scale(self):
        """scale: per case (8 / 64 / 512 queues spread over the brokers, 100 topics) a preloaded
        topic drained by each client, and rmq's push consumer idle on an empty copy of the layout;
        a baseline idle run holds one queue per broker."""
        clients = self.clients_for(SCALE_CLIENTS)
        if not clients:
            return
        nb = len(self.brokers) or 1
        if nb < 2:
            log("scale: one broker (set RMQ_BROKER_ADDR and RMQ_BROKER_B_ADDR for two)")
        cases = self.scale_cases()
        drains = []
        for scenario, n_topics, per in cases:
            topics = self.scale_topics("scale", scenario, n_topics)
            self.create_topic(topics, queues=per, brokers=self.brokers)
            self.preload_topic(topics, scenario, self.a.scale_count)
            drains.append((scenario, topics))
        idle = {}
        if "rmq-push" in clients:
            base_topic = self.scale_topics("idle", "scale-base", 1)
            self.create_topic(base_topic, queues=1, brokers=self.brokers)
            idle["scale-base"] = (base_topic, nb)
            for scenario, n_topics, per in cases:
                topics = self.scale_topics("idle", scenario, n_topics)
                self.create_topic(topics, queues=per, brokers=self.brokers)
                idle[scenario] = (topics, per * nb * n_topics)
        for scenario, topics in drains:
            self.drain_runs(scenario, clients, topics, self.a.scale_count)
        for rep in range(self.a.reps):
            base = self.idle_run("scale-base", *idle["scale-base"], rep) if idle else None
            if base and base.get("idle_rss_bytes"):
                self.add("rmq-push", "scale-base", "idle_rss_bytes", base["idle_rss_bytes"])
            for scenario, _, _ in cases:
                if scenario not in idle:
                    continue
                topics, queues = idle[scenario]
                res = self.idle_run(scenario, topics, queues, rep)
                if not res or not res.get("idle_rss_bytes"):
                    continue
                self.add("rmq-push", scenario, "idle_rss_bytes", res["idle_rss_bytes"])
                if base and base.get("idle_rss_bytes") and queues > nb:
                    per_queue = (res["idle_rss_bytes"] - base["idle_rss_bytes"]) / (queues - nb)
                    self.add("rmq-push", scenario, "bytes_per_idle_queue", per_queue)
        self.scale_layout = {s: {"topics": t, "queues": p * nb * t, "brokers": nb} for s, t, p in cases}
        self.scale_layout["scale-base"] = {"topics": 1, "queues": nb, "brokers": nb}

    def ceiling(self):
        """ceiling: rmq-bench fake-drain, push and pull, against the in-process fake broker."""
        clients = self.clients_for(CEILING_CLIENTS)
        if not clients:
            return
        n = self.a.ceiling_count
        for rep in range(self.a.reps):
            for client in self.rotated(clients, rep):
                kind = "push" if client == "rmq-push-fake" else "pull"
                argv = [self.a.rmq_bench, "fake-drain", "--consumer", kind, "--count", str(n),
                        "--size", str(self.a.size), "--queues", str(self.a.queues),
                        "--threads", str(self.a.threads), "--batch", str(self.a.batch)]
                r = self.run(f"ceiling {client} #{rep + 1}", argv, self.a.client_timeout + 60)
                if not r.ok():
                    continue
                res = r.result
                count = res.get("count", 0)
                if res.get("timeout") or count < n:
                    self.failures.append(f"ceiling {client} #{rep + 1}: received {count} of {n}")
                    continue
                self.add(client, "ceiling", "msgs_per_s", res.get("msgs_per_s"))
                self.add(client, "ceiling", "cpu_s_per_msg", res["client_cpu_s"] / count)
                self.add(client, "ceiling", "fake_cpu_s_per_msg", res["fake_cpu_s"] / count)
                self.ceiling_util.setdefault(client, []).append((res.get("client_util"), res.get("fake_util")))
                log(f"  {client}: {res.get('msgs_per_s', 0):,.0f} msg/s, client cpu {res['client_cpu_s']:.2f} s "
                    f"({res.get('client_util', 0):.0%} busy), fake cpu {res['fake_cpu_s']:.2f} s "
                    f"({res.get('fake_util', 0):.0%} busy); preload {res.get('preload_s', 0):.1f} s")

    def floor(self):
        """floor: rmq-bench rtt-floor in the latency scenario's shape (its rate, one request outstanding
        per queue, a message-sized answer), the sync producer's (rmq-producer's sync rate of this run,
        else 30 000/s; one request outstanding per sender, a message-sized request) and the async
        producer's (its async rate of this run, else 35 000/s; --producer-inflight requests outstanding:
        the answers arrive at the pace the broker stores the messages)."""
        clients = self.clients_for(FLOOR_CLIENTS)
        if not clients:
            return
        sync = self.values.get(("rmq-producer", "produce-sync", "msgs_per_s"))
        sync_rate = round(statistics.median(sync)) if sync else 30_000
        asyn = self.values.get(("rmq-producer", "produce-async", "msgs_per_s"))
        async_rate = round(statistics.median(asyn)) if asyn else 35_000
        shapes = [("floor-latency", self.a.latency_rate, self.a.queues, 300, self.a.size + 400),
                  ("floor-produce-sync", sync_rate, self.a.producer_threads, self.a.size + 300, 300),
                  ("floor-produce-async", async_rate, self.a.producer_inflight, self.a.size + 300, 300)]
        self.floor_shapes = {s: {"rate": r, "outstanding": q, "request_bytes": req, "response_bytes": resp}
                             for s, r, q, req, resp in shapes}
        for rep in range(self.a.reps):
            for scenario, rate, outstanding, req, resp in shapes:
                n = max(1, round(rate * self.a.floor_seconds))
                for client in self.rotated(clients, rep):
                    kind = client[len("floor-"):].removesuffix("-ct")
                    runtime = "current-thread" if client.endswith("-ct") else "multi-thread"
                    argv = [self.a.rmq_bench, "rtt-floor", "--client", kind, "--runtime", runtime,
                            "--rate", str(rate), "--queues", str(outstanding), "--count", str(n),
                            "--request-bytes", str(req), "--response-bytes", str(resp)]
                    r = self.run(f"{scenario} {client} #{rep + 1}", argv, self.a.client_timeout)
                    if not r.ok():
                        continue
                    res = r.result
                    self.add(client, scenario, "msgs_per_s", res.get("msgs_per_s"))
                    self.add(client, scenario, "cpu_s_per_msg", res["client_cpu_s"] / n)
                    log(f"  {client} {scenario}: {res.get('msgs_per_s', 0):,.0f} msg/s, "
                        f"{res['cpu_us_per_msg']:.2f} µs CPU/msg")

    # ---- output ---------------------------------------------------------------------------
    def rows(self):
        order = {c: i for i, c in enumerate(dict.fromkeys(DRAIN_CLIENTS + PRODUCER_CLIENTS + GRPC_CLIENTS
                                                          + BATCHING_CLIENTS + CEILING_CLIENTS + FLOOR_CLIENTS))}
        names = ["drain", "latency", "produce-sync", "produce-async", "produce-tx", "produce-batching",
                 "grpc-produce-sync", "grpc-produce-async", "grpc-drain", "ceiling", "floor-latency",
                 "floor-produce-sync", "floor-produce-async", "scale-base"]
        sorder = {s: i for i, s in enumerate(names)}

        def skey(s):
            # scale-<Q>q by queues, then scale-<T>t, after every other scenario
            if s in sorder:
                return (sorder[s], 0)
            if s.startswith("latency-"):
                return (sorder["latency"], int(s[len("latency-"):]))
            return (len(names) + (1 if s.endswith("t") else 0), int("".join(ch for ch in s if ch.isdigit()) or 0))

        rows = []
        for (c, s, m), v in sorted(self.values.items(),
                                   key=lambda kv: (skey(kv[0][1]), order.get(kv[0][0], 99), kv[0][2])):
            rows.append({"client": c, "scenario": s, "metric": m, "median": statistics.median(v),
                         "min": min(v), "max": max(v)})
        return rows


def parse_java_producer(line, wall_s, n):
    """The Java benchmark Producer's final line: '[Complete] Send Total: X Send TPS: Y ...'.
    Y is its own figure (sends per second over its last <=10 one-second snapshots). Without it
    (runs shorter than 2 s print no TPS) fall back to total / process wall time."""
    total = None
    tps = None
    parts = line.replace("|", " ").split()
    for i, w in enumerate(parts):
        if w == "Total:" and i + 1 < len(parts) and parts[i - 1] == "Send":
            total = int(parts[i + 1])
        if w == "TPS:" and i + 1 < len(parts):
            tps = float(parts[i + 1])
    failed = 0
    if "Send Failed:" in line:
        try:
            failed = int(line.split("Send Failed:")[1].split()[0])
        except (IndexError, ValueError):
            pass
    count = (total or n) - failed
    if tps is None and wall_s:
        tps = count / wall_s
    return tps, count


def fmt_rate(v):
    return f"{v:,.0f}"


def table(rows, cfg):
    by = {}
    for r in rows:
        by.setdefault((r["scenario"], r["client"]), {})[r["metric"]] = r
    out = []
    grpc = f" (grpc: {cfg['grpc_count']:,} per run)" if "grpc_count" in cfg else ""
    if "ceiling" in cfg:
        grpc += (f" (ceiling: {cfg['ceiling']['count']:,} in the fake broker, client CPU of its own threads "
                 "only, no RSS: the process holds the fake's store)")
    out.append(f"RocketMQ {cfg.get('rocketmq_version', '?')} on {cfg['cores']} cores; "
               f"{cfg['count']:,} x {cfg['size']} B{grpc}, {cfg['queues']} queues, "
               f"{cfg['repetitions']} repetition(s), median (min-max)")
    if cfg.get("rmq_build") == "dev":
        out.append("rmq-bench is a dev build (--dev-build): rmq's figures below say nothing of its speed.")
    out.append("")
    out.append("| scenario | client | msgs/s | CPU µs/msg | peak RSS MiB | p50 ms | p99 ms | p99.9 ms |")
    out.append("|---|---|---:|---:|---:|---:|---:|---:|")

    def cell(d, m, f, rng=False):
        if m not in d:
            return ""
        r = d[m]
        s = f(r["median"])
        if rng and r["min"] != r["max"]:
            s += f" ({f(r['min'])}-{f(r['max'])})"
        return s

    for (s, c), d in by.items():
        if s.startswith("scale-"):
            continue  # scale_table
        out.append("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            s, c,
            cell(d, "msgs_per_s", fmt_rate, rng=True),
            cell(d, "cpu_s_per_msg", lambda v: f"{v * 1e6:.1f}"),
            cell(d, "peak_rss_bytes", lambda v: f"{v / 2**20:.0f}"),
            cell(d, "p50_ms", lambda v: f"{v:.2f}", rng=True),
            cell(d, "p99_ms", lambda v: f"{v:.2f}", rng=True),
            cell(d, "p999_ms", lambda v: f"{v:.2f}"),
        ))
    return "\n".join(out)


def latency_table(rows, cfg):
    """The latency scenario's table: per rate and client the end-to-end percentiles beside the producer's
    achieved rate, the send-to-store delay (broker store timestamp - born timestamp) and the producer's
    send-to-answer time, so that a producer or broker behind the rate is not read as consumer latency."""
    by = {}
    for r in rows:
        if r["scenario"] == "latency" or r["scenario"].startswith("latency-"):
            by.setdefault((r["scenario"], r["client"]), {})[r["metric"]] = r
    if not by:
        return ""
    rates = cfg.get("latency_rates") or [cfg.get("latency_rate")]

    def rate_of(s):
        return int(s[len("latency-"):]) if s.startswith("latency-") else rates[0]

    def cell(d, m, fmt="{:.2f}", rng=False):
        if m not in d:
            return ""
        r = d[m]
        out = fmt.format(r["median"])
        if rng and r["min"] != r["max"]:
            out += f" ({fmt.format(r['min'])}-{fmt.format(r['max'])})"
        return out

    out = ["| rate msg/s | client | producer msg/s (acked) | p50 ms | p99 ms | p99.9 ms | max ms | CPU µs/msg "
           "| store delay p50 / p99 / max ms | send-to-answer p99 ms |",
           "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for (s, c), d in by.items():
        prod = cell(d, "msgs_per_s", "{:,.0f}")
        if "producer_acked_msgs_per_s" in d:
            prod += f" ({cell(d, 'producer_acked_msgs_per_s', '{:,.0f}')})"
        out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            f"{rate_of(s):,}", c, prod, cell(d, "p50_ms", rng=True), cell(d, "p99_ms", rng=True),
            cell(d, "p999_ms", rng=True), cell(d, "max_ms"),
            "" if "cpu_s_per_msg" not in d else f"{d['cpu_s_per_msg']['median'] * 1e6:.1f}",
            " / ".join(cell(d, m, "{:.0f}") for m in ("store_delay_p50_ms", "store_delay_p99_ms",
                                                       "store_delay_max_ms")),
            cell(d, "producer_ack_p99_ms")))
    out.append("")
    out.append("Median of the repetitions (min-max). Store delay: the broker's store timestamp minus the message's "
               "born timestamp (ms resolution); send-to-answer: latency-produce's send to its answer.")
    return "\n".join(out)


IDLE_QUEUE_TARGET = 16 * 1024  # bytes of memory per idle assigned queue, at most


def growth_exponent(c1, c2, q1, q2):
    """e in cost ∝ queues^e between (q1, c1) and (q2, c2); None when undefined."""
    import math
    if not c1 or not c2 or c1 <= 0 or c2 <= 0 or q1 <= 0 or q2 <= q1:
        return None
    return math.log(c2 / c1) / math.log(q2 / q1)


def scale_table(rows, layout, assigned):
    """The scale scenario's table (one row per case and client) and its growth lines."""
    med = {(r["client"], r["scenario"], r["metric"]): r["median"] for r in rows}
    cases = sorted({r["scenario"] for r in rows if r["scenario"].startswith("scale-") and r["scenario"] != "scale-base"},
                   key=lambda s: (s.endswith("t"), layout.get(s, {}).get("queues", 0)))
    if not cases:
        return ""
    clients = [c for c in SCALE_CLIENTS if any(k[0] == c and k[1] in cases for k in med)]
    out = ["| case | client | topics | queues | brokers | msgs/s | CPU µs/msg | peak RSS MiB | threads (peak) "
           "| pull loops | idle RSS MiB | idle KiB/queue |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]

    def f(v, fmt):
        return "" if v is None else fmt(v)

    base = med.get(("rmq-push", "scale-base", "idle_rss_bytes"))
    if base is not None:
        lay = layout.get("scale-base", {})
        out.append(f"| scale-base | rmq-push | 1 | {lay.get('queues', '')} | {lay.get('brokers', '')} | | | | | | "
                   f"{base / 2**20:.1f} | |")
    for s in cases:
        lay = layout.get(s, {})
        for c in clients:
            g = lambda m: med.get((c, s, m))  # noqa: E731
            if all(g(m) is None for m in ("msgs_per_s", "idle_rss_bytes")):
                continue
            out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                s, c, lay.get("topics", ""), lay.get("queues", ""), lay.get("brokers", ""),
                f(g("msgs_per_s"), fmt_rate), f(g("cpu_s_per_msg"), lambda v: f"{v * 1e6:.1f}"),
                f(g("peak_rss_bytes"), lambda v: f"{v / 2**20:.0f}"), f(g("threads"), lambda v: f"{v:.0f}"),
                assigned.get((c, s), "") if c.startswith("rmq-") else "",
                f(g("idle_rss_bytes"), lambda v: f"{v / 2**20:.1f}"),
                f(g("bytes_per_idle_queue"), lambda v: f"{v / 1024:.1f}")))
    out.append("")
    out.append("Pull loops: the queues the consumer held at the end of the drain; rmq-push runs one task per "
               "assigned queue (its pull loop) besides a fixed few (rebalance, offset persistence, one reader and "
               "one writer per broker connection), so tasks ≈ pull loops + a constant.")
    # Growth with queues: cost ∝ queues^e between the smallest and the largest queue case
    # (e <= 1: no worse than linear).
    qcases = [s for s in cases if s.endswith("q")]
    if len(qcases) >= 2:
        lo, hi = qcases[0], qcases[-1]
        q1, q2 = layout.get(lo, {}).get("queues", 0), layout.get(hi, {}).get("queues", 0)
        out.append("")
        out.append(f"Growth from {q1} to {q2} queues (cost ∝ queues^e; e <= 1: no worse than linear):")
        for c in clients:
            items = [("peak RSS", med.get((c, lo, "peak_rss_bytes")), med.get((c, hi, "peak_rss_bytes"))),
                     ("threads", med.get((c, lo, "threads")), med.get((c, hi, "threads"))),
                     ("CPU per message", med.get((c, lo, "cpu_s_per_msg")), med.get((c, hi, "cpu_s_per_msg")))]
            items = [(name, c1, c2, q1, q2) for name, c1, c2 in items]
            for name, c1, c2, qa, qb in items:
                e = growth_exponent(c1, c2, qa, qb)
                if e is None:
                    out.append(f"- {c} {name}: n/a")
                else:
                    out.append(f"- {c} {name}: x{c2 / c1:.2f} for x{qb / qa:.0f} queues ({qa} -> {qb}), e = {e:.2f} "
                               f"({'no worse than linear' if e <= 1.05 else 'WORSE than linear'})")
        marg = []
        for a_, b_ in zip(qcases, qcases[1:]):
            ia, ib = med.get(("rmq-push", a_, "idle_rss_bytes")), med.get(("rmq-push", b_, "idle_rss_bytes"))
            qa, qb = layout.get(a_, {}).get("queues", 0), layout.get(b_, {}).get("queues", 0)
            if ia is not None and ib is not None and qb > qa:
                marg.append(((qa, qb), (ib - ia) / (qb - qa)))
        if marg:
            # Linear: every added queue costs the same. The largest step's cost per added queue
            # against the smallest step's (25 % slack for the allocator's noise on few queues).
            verdict = ""
            if len(marg) >= 2 and marg[0][1] > 0:
                ok = marg[-1][1] <= 1.25 * marg[0][1]
                verdict = f": x{marg[-1][1] / marg[0][1]:.2f}, {'linear or better' if ok else 'WORSE than linear'}"
            out.append("- rmq-push idle memory per added queue: "
                       + ", ".join(f"{qa}->{qb}: {v / 1024:.1f} KiB" for (qa, qb), v in marg)
                       + (verdict or " (flat or falling: linear or better)"))
    return "\n".join(out)


def targets(rows, scenarios=("drain", "latency", "produce")):
    """The target lines: the remoting ones unless only the grpc scenario ran, the gRPC ones when it ran."""
    grpc = "grpc-produce" in scenarios or "grpc-drain" in scenarios
    remoting = any(s in ("drain", "latency", "produce", "produce-tx") for s in scenarios)
    med = {(r["client"], r["scenario"], r["metric"]): r["median"] for r in rows}

    def g(c, s, m):
        return med.get((c, s, m))

    out = []

    def check(desc, a, b, op, limit):
        if a is None or b is None or b == 0:
            out.append(f"- {desc}: n/a")
            return
        ratio = a / b
        ok = ratio >= limit if op == ">=" else ratio <= limit
        out.append(f"- {desc}: {ratio:.2f} (target {op} {limit}) {'met' if ok else 'MISSED'}")

    if remoting:
        check("rmq-push / java-push drain msgs/s", g("rmq-push", "drain", "msgs_per_s"), g("java-push", "drain", "msgs_per_s"), ">=", 1.5)
        check("rmq-push / rocketmq-rust-push drain msgs/s", g("rmq-push", "drain", "msgs_per_s"), g("rocketmq-rust-push", "drain", "msgs_per_s"), ">=", 1.3)
        check("rmq-push / raw-pull ceiling", g("rmq-push", "drain", "msgs_per_s"), g("raw-pull", "drain", "msgs_per_s"), ">=", 0.9)
        check("rmq-push / java-push CPU s per msg", g("rmq-push", "drain", "cpu_s_per_msg"), g("java-push", "drain", "cpu_s_per_msg"), "<=", 0.5)
        check("rmq-push / java-push peak RSS", g("rmq-push", "drain", "peak_rss_bytes"), g("java-push", "drain", "peak_rss_bytes"), "<=", 0.2)
        for s in sorted({r["scenario"] for r in rows if r["scenario"] == "latency" or r["scenario"].startswith("latency-")},
                        key=lambda s: int(s[len("latency-"):]) if "-" in s else 0) or ["latency"]:
            check(f"rmq-push / java-push p99 {s}", g("rmq-push", s, "p99_ms"), g("java-push", s, "p99_ms"), "<=", 1.0)
        for s in ("produce-sync", "produce-async", "produce-tx"):
            check(f"rmq-producer / java-producer {s} msgs/s", g("rmq-producer", s, "msgs_per_s"), g("java-producer", s, "msgs_per_s"), ">=", 1.0)
        if g("rmq-push-tls", "drain", "msgs_per_s") is not None:
            check("rmq-push-tls / rmq-push drain msgs/s", g("rmq-push-tls", "drain", "msgs_per_s"), g("rmq-push", "drain", "msgs_per_s"), ">=", 0.8)
            check("rmq-pull-tls / rmq-pull drain msgs/s", g("rmq-pull-tls", "drain", "msgs_per_s"), g("rmq-pull", "drain", "msgs_per_s"), ">=", 0.8)
        if g("rmq-push-metrics", "drain", "msgs_per_s") is not None:
            check("rmq-push-metrics / rmq-push drain msgs/s", g("rmq-push-metrics", "drain", "msgs_per_s"), g("rmq-push", "drain", "msgs_per_s"), ">=", 0.95)
        if g("rmq-push-signed", "drain", "msgs_per_s") is not None:
            check("rmq-push-signed / rmq-push drain msgs/s", g("rmq-push-signed", "drain", "msgs_per_s"), g("rmq-push", "drain", "msgs_per_s"), ">=", 0.9)
        for s in ("produce-sync", "produce-async"):
            if g("rmq-producer-signed", s, "msgs_per_s") is not None:
                check(f"rmq-producer-signed / rmq-producer {s} msgs/s", g("rmq-producer-signed", s, "msgs_per_s"), g("rmq-producer", s, "msgs_per_s"), ">=", 0.9)
            if g("rmq-producer-tls", s, "msgs_per_s") is not None:
                check(f"rmq-producer-tls / rmq-producer {s} msgs/s", g("rmq-producer-tls", s, "msgs_per_s"), g("rmq-producer", s, "msgs_per_s"), ">=", 0.8)
        tx, sync = g("rmq-producer", "produce-tx", "msgs_per_s"), g("rmq-producer", "produce-sync", "msgs_per_s")
        if tx and sync:
            out.append(f"- rmq-producer produce-tx / produce-sync msgs/s: {tx / sync:.2f} (informative)")
    if "produce-batching" in scenarios:
        check("batching ≥ 3× rmq async throughput (rmq-producer-batching / rmq-producer produce-batching msgs/s)",
              g("rmq-producer-batching", "produce-batching", "msgs_per_s"),
              g("rmq-producer", "produce-batching", "msgs_per_s"), ">=", 3.0)
        raw, plain = g("raw-send", "produce-batching", "msgs_per_s"), g("rmq-producer", "produce-batching", "msgs_per_s")
        if raw and plain:
            verdict = "above" if 3.0 * plain > raw else "below"
            out.append(f"- raw-send (the broker's intake of these batches, no client work per message): {raw:,.0f} "
                       f"msg/s = {raw / plain:.2f}× rmq async; the 3× target is {verdict} it (informative)")
        ours = g("rmq-producer-batching", "produce-batching", "msgs_per_s")
        if raw and ours:
            out.append(f"- rmq-producer-batching / raw-send produce-batching msgs/s: {ours / raw:.2f} (informative)")
        for ours, theirs in (("rmq-producer-batching", "java-producer-batching"), ("java-producer-batching", "java-producer")):
            a_, b_ = g(ours, "produce-batching", "msgs_per_s"), g(theirs, "produce-batching", "msgs_per_s")
            if a_ and b_:
                out.append(f"- {ours} / {theirs} produce-batching msgs/s: {a_ / b_:.2f} (informative)")
    if "scale" in scenarios:
        per_queue = {r["scenario"]: r["median"] for r in rows
                     if r["client"] == "rmq-push" and r["metric"] == "bytes_per_idle_queue"}
        qcases = sorted((s for s in per_queue if s.endswith("q")), key=lambda s: int(s[len("scale-"):-1]))
        if not per_queue:
            out.append(f"- rmq-push memory per idle queue (<= {IDLE_QUEUE_TARGET // 1024} KiB): n/a")
        for s in qcases + [s for s in per_queue if s.endswith("t")]:
            v = per_queue[s]
            # The largest queue case carries the target; smaller ones divide noise by few queues.
            verdict = ("met" if v <= IDLE_QUEUE_TARGET else "MISSED") if s in qcases[-1:] else "informative"
            out.append(f"- rmq-push memory per idle queue, {s}: {v / 1024:.1f} KiB (target <= "
                       f"{IDLE_QUEUE_TARGET // 1024} KiB) {verdict}")
    if "ceiling" in scenarios:
        for c, real in (("rmq-push-fake", "rmq-push"), ("rmq-pull-fake", "rmq-pull")):
            rate, cpu = g(c, "ceiling", "msgs_per_s"), g(c, "ceiling", "cpu_s_per_msg")
            fake = g(c, "ceiling", "fake_cpu_s_per_msg")
            if rate is None:
                continue
            line = (f"- {c}: {rate:,.0f} msg/s, client {cpu * 1e6:.2f} µs CPU/msg "
                    f"(fake {fake * 1e6:.2f} µs/msg; informative)")
            real_cpu = g(real, "drain", "cpu_s_per_msg")
            if real_cpu:
                line += f"; {real} on the broker: {real_cpu * 1e6:.2f} µs/msg (whole process, start-up included)"
            out.append(line)
    if "floor" in scenarios:
        # The round-trip floor beside rmq's figure of the same shape, and the CPU target it bounds.
        for floor_s, real_s, real, limit in (("floor-latency", "latency", "rmq-push", 10e-6),
                                             ("floor-produce-sync", "produce-sync", "rmq-producer", 5e-6),
                                             ("floor-produce-async", "produce-async", "rmq-producer", 5e-6)):
            figs = {c: g(c, floor_s, "cpu_s_per_msg") for c in FLOOR_CLIENTS}
            if all(v is None for v in figs.values()):
                continue
            parts = ", ".join(f"{c} {v * 1e6:.1f}" for c, v in figs.items() if v is not None)
            line = f"- {floor_s} µs CPU/msg: {parts}"
            for c in (real, real + "-ct"):
                v = g(c, real_s, "cpu_s_per_msg")
                if v is not None:
                    line += f"; {c} {real_s} {v * 1e6:.1f}"
            single = figs.get("floor-single")
            if single is not None:
                verdict = "below" if limit < single else "above"
                line += (f"; the {limit * 1e6:g} µs target is {verdict} the one-task floor "
                         f"({single * 1e6:.1f}) (informative)")
            # A synchronous send is awaited by its caller's task: the least of the layouts with a
            # task per sender woken by its answer, on either runtime.
            per_sender = [] if floor_s != "floor-produce-sync" else [
                (v, c) for c, v in figs.items()
                if v is not None and c.removesuffix("-ct") in ("floor-tasks", "floor-direct", "floor-callers")]
            if per_sender:
                least, which = min(per_sender)
                verdict = "below" if limit < least else "above"
                line += (f"; with a task per sender woken by its answer (a synchronous send's shape) the "
                         f"{limit * 1e6:g} µs target is {verdict} the least such floor ({which} {least * 1e6:.1f}) "
                         f"(informative)")
            out.append(line)
    if grpc:
        # Through the 5.x proxy: rmq against the official Java gRPC client, per scenario.
        for ours, theirs, s in GRPC_PAIRS:
            if ours in GRPC_PENDING and g(ours, s, "msgs_per_s") is None:
                out.append(f"- {ours} / {theirs} {s}: n/a ({ours} is {GRPC_PENDING[ours]})")
                continue
            check(f"{ours} / {theirs} {s} msgs/s", g(ours, s, "msgs_per_s"), g(theirs, s, "msgs_per_s"), ">=", 1.5)
            check(f"{ours} / {theirs} {s} CPU s per msg", g(ours, s, "cpu_s_per_msg"), g(theirs, s, "cpu_s_per_msg"), "<=", 0.5)
            check(f"{ours} / {theirs} {s} peak RSS", g(ours, s, "peak_rss_bytes"), g(theirs, s, "peak_rss_bytes"), "<=", 0.2)
    return "\n".join(out)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--namesrv", default=os.environ.get("NAMESRV_ADDR", "127.0.0.1:9876"))
    p.add_argument("--count", type=int, default=200_000)
    p.add_argument("--size", type=int, default=1024)
    p.add_argument("--queues", type=int, default=8)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--threads", type=int, default=20, help="consume concurrency of every consumer")
    p.add_argument("--batch", type=int, default=32, help="pull batch size of every consumer")
    p.add_argument("--clients", default="all")
    p.add_argument("--scenarios", default="drain,latency,produce",
                   help="drain, latency, produce (sync + async), produce-tx (sync + transactional), "
                        "grpc (grpc-produce + grpc-drain, through the 5.x proxy)")
    p.add_argument("--latency-rate", type=int, default=None, help="one rate (msg/s) of the latency runs")
    p.add_argument("--latency-rates", default="5000",
                   help="comma-separated rates (msg/s) of the latency runs; several: scenarios latency-<rate>")
    p.add_argument("--latency-broker-warmup", type=int, default=0,
                   help="latency: unmeasured seconds of latency-produce at the highest rate before the runs")
    p.add_argument("--latency-duration", type=int, default=30)
    p.add_argument("--latency-warmup", type=int, default=2)
    p.add_argument("--settle", type=float, default=3.0, help="seconds between consumer READY and producer start")
    p.add_argument("--producer-count", type=int, default=None)
    p.add_argument("--grpc-count", type=int, default=None,
                   help="messages per run of the grpc scenario (sent, and preloaded then drained); default --count")
    p.add_argument("--producer-threads", type=int, default=64)
    p.add_argument("--producer-inflight", type=int, default=1000, help="async sends pending at most")
    p.add_argument("--java-producer", choices=["official", "own"], default="official",
                   help="official: rocketmq-example's benchmark Producer for sync (async always uses "
                        "rmqbench.Produce); own: rmqbench.Produce for both")
    p.add_argument("--client-timeout", type=int, default=600)
    p.add_argument("--rmq-bench", required=True)
    p.add_argument("--rmq-build", choices=["release", "dev"], default="release",
                   help="cargo profile rmq-bench was built with (dev: figures say nothing of rmq's speed)")
    p.add_argument("--java-cp", default="")
    p.add_argument("--java-opts", default=os.environ.get("BENCH_JAVA_OPTS", ""))
    p.add_argument("--java-grpc-cp", default="", help="class path of bench/peers/java-grpc (rmqgrpc.GrpcBench)")
    p.add_argument("--proxy-endpoint", default=os.environ.get("RMQ_PROXY_ENDPOINT", ""),
                   help="gRPC address of the RocketMQ 5.x proxy (the grpc scenario)")
    p.add_argument("--go-peer", default="")
    p.add_argument("--rust-peer", default="")
    p.add_argument("--available", default="")
    p.add_argument("--unavailable", action="append", default=[], help="client=reason (build failed)")
    p.add_argument("--results-dir", default=os.path.join(HERE, "results"))
    p.add_argument("--rocketmq-version", default=os.environ.get("RMQ_VERSION", ""))
    p.add_argument("--mode-name", default="full")
    p.add_argument("--tls-ca", default="", help="adds rmq-push-tls, rmq-pull-tls, rmq-producer-tls (TLS with this CA)")
    p.add_argument("--access-key", default="", help="with --secret-key: adds rmq-push-signed, rmq-producer-signed")
    p.add_argument("--secret-key", default="")
    p.add_argument("--metrics", action="store_true", help="adds rmq-push-metrics (a metrics recorder installed)")
    p.add_argument("--trace", action="store_true", help="adds rmq-push-trace (RocketMQ message trace on)")
    p.add_argument("--current-thread", action="store_true",
                   help="adds rmq-push-ct, rmq-pull-ct and rmq-producer-ct (rmq on a current-thread runtime)")
    p.add_argument("--broker-addrs", default="",
                   help="comma-separated broker addresses the scale scenario spreads its queues over")
    p.add_argument("--batch-linger-ms", type=int, default=5, help="produce-batching: linger of a batch")
    p.add_argument("--batch-messages", type=int, default=32, help="produce-batching: most messages in a batch")
    p.add_argument("--batch-bytes", type=int, default=256 * 1024, help="produce-batching: most body bytes in a batch")
    p.add_argument("--scale-queues", default="8,64,512",
                   help="scale: the queue counts of the single-topic cases (spread over the brokers)")
    p.add_argument("--scale-topics", type=int, default=100, help="scale: topics of the many-topics case (0: none)")
    p.add_argument("--scale-topic-queues", type=int, default=4,
                   help="scale: queues of each topic of the many-topics case (spread over the brokers)")
    p.add_argument("--scale-count", type=int, default=None, help="scale: messages per drain (default --count)")
    p.add_argument("--idle-s", type=float, default=5.0,
                   help="scale: seconds an idle consumer holds its queues before its memory is read")
    p.add_argument("--floor-seconds", type=float, default=10.0,
                   help="floor: seconds of each round-trip floor run at its rate")
    p.add_argument("--ceiling-count", type=int, default=None,
                   help="ceiling: messages the fake broker holds and each client drains (default --count)")
    a = p.parse_args()
    a.scale_queues = [int(x) for x in a.scale_queues.split(",") if x.strip()]
    a.latency_rates = ([a.latency_rate] if a.latency_rate is not None
                       else list(dict.fromkeys(int(x) for x in a.latency_rates.split(",") if x.strip())))
    if not a.latency_rates or min(a.latency_rates) <= 0:
        raise SystemExit("--latency-rates: positive rates, e.g. 1000,5000,20000")
    a.latency_rate = a.latency_rates[0]
    if a.scale_count is None:
        a.scale_count = a.count
    if a.ceiling_count is None:
        a.ceiling_count = a.count
    kinds = set()
    if a.metrics:
        kinds.add("metrics")
    if a.trace:
        kinds.add("trace")
    if a.tls_ca:
        kinds.add("tls")
    if a.access_key and a.secret_key:
        kinds.add("acl")
    if a.current_thread:
        kinds.add("current-thread")
    for variant, (base, kind) in VARIANTS.items():
        if kind in kinds:
            target = DRAIN_CLIENTS if base in DRAIN_CLIENTS else PRODUCER_CLIENTS
            target.append(variant)
            if kind == "current-thread" and base in LATENCY_CLIENTS:
                LATENCY_CLIENTS.append(variant)
    if a.producer_count is None:
        a.producer_count = a.count
    if a.grpc_count is None:
        a.grpc_count = a.count
    wanted = set()
    for c in a.clients.split(","):
        c = c.strip()
        if not c:
            continue
        if c in ALIASES:
            wanted.update(ALIASES[c])
        elif c in DRAIN_CLIENTS + PRODUCER_CLIENTS + ALL_CLIENTS:
            wanted.add(c)
        else:
            raise SystemExit(f"unknown client {c!r}: use "
                             f"{', '.join(dict.fromkeys(list(ALIASES) + DRAIN_CLIENTS + PRODUCER_CLIENTS + ALL_CLIENTS))}")
    for variant, (base, kind) in VARIANTS.items():
        if kind in kinds and base in wanted:
            wanted.add(variant)
    scenarios = []
    for s in (s.strip() for s in a.scenarios.split(",") if s.strip()):
        if s not in ("drain", "latency", "produce", "produce-tx", *GRPC_SCENARIOS, *EXTRA_SCENARIOS):
            raise SystemExit(f"unknown scenario {s!r}: use drain, latency, produce, produce-tx, grpc "
                             "(or grpc-produce, grpc-drain), produce-batching, scale, ceiling, floor")
        scenarios.extend(GRPC_SCENARIOS.get(s, [s]))
    scenarios = list(dict.fromkeys(scenarios))
    grpc = "grpc-produce" in scenarios or "grpc-drain" in scenarios
    for scenario, only in SCENARIO_CLIENTS.items():
        if scenario not in scenarios:
            wanted -= set(only)
    if not grpc:
        wanted -= set(GRPC_CLIENTS)
    elif not a.proxy_endpoint:
        raise SystemExit("the grpc scenario needs the proxy: --proxy-endpoint HOST:PORT (or RMQ_PROXY_ENDPOINT)")
    a.client_set = wanted

    b = Bench(a)
    if a.rocketmq_version.startswith("4"):
        for c in POP_CLIENTS & a.client_set:
            b.unavailable.setdefault(c, "pop needs RocketMQ 5")
        for c in set(GRPC_CLIENTS) & a.client_set:
            b.unavailable.setdefault(c, "the proxy (gRPC) needs RocketMQ 5")
        if "java-producer-batching" in a.client_set:
            b.unavailable.setdefault("java-producer-batching", "autoBatch needs rocketmq-client 5.x")
    for c, why in GRPC_PENDING.items():
        if c in a.client_set:
            b.unavailable.setdefault(c, why)
    started = time.monotonic()
    for reason in b.unavailable.items():
        log("not measured: %s (%s)" % reason)
    b.preload = None
    if "drain" in scenarios:
        b.drain()
    if "latency" in scenarios:
        b.latency()
    modes = [m for m, s in (("sync", "produce"), ("sync", "produce-tx"), ("async", "produce"),
                            ("tx", "produce-tx")) if s in scenarios]
    if modes:
        b.produce(tuple(dict.fromkeys(modes)))
    if "grpc-produce" in scenarios:
        b.grpc_produce()
    if "grpc-drain" in scenarios:
        b.grpc_drain()
    if "produce-batching" in scenarios:
        b.produce_batching()
    if "scale" in scenarios:
        b.scale()
    if "ceiling" in scenarios:
        b.ceiling()
    if "floor" in scenarios:
        b.floor()
    took = time.monotonic() - started

    cfg = {
        "mode": a.mode_name,
        "rmq_build": a.rmq_build,
        "timestamp": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "rocketmq_version": a.rocketmq_version,
        "namesrv": a.namesrv,
        "count": a.count,
        "size": a.size,
        "queues": a.queues,
        "repetitions": a.reps,
        "consume_concurrency": a.threads,
        "pull_batch_size": a.batch,
        "latency_rate": a.latency_rate,
        "latency_rates": a.latency_rates,
        "latency_broker_warmup_s": a.latency_broker_warmup,
        "latency_duration_s": a.latency_duration,
        "latency_warmup_s": a.latency_warmup,
        "producer_count": a.producer_count,
        "producer_threads": a.producer_threads,
        "producer_inflight": a.producer_inflight,
        "java_producer": {"produce-sync": "org.apache.rocketmq.example.benchmark.Producer"
                          if a.java_producer == "official" else "rmqbench.Produce",
                          "produce-async": "rmqbench.Produce", "produce-tx": "rmqbench.Produce"},
        "clients": sorted(a.client_set - set(b.unavailable)),
        "not_measured": b.unavailable,
        "scenarios": scenarios,
        "cores": os.cpu_count(),
        "duration_s": round(took, 1),
        "java_opts": a.java_opts,
    }
    if "latency" in scenarios and b.latency_warmup_result is not None:
        cfg["latency_broker_warmup"] = b.latency_warmup_result
    if "produce-batching" in scenarios:
        cfg["batching"] = {"linger_ms": a.batch_linger_ms, "max_messages": a.batch_messages,
                           "max_bytes": a.batch_bytes, "inflight": a.producer_inflight,
                           "java_batch_max_bytes": min(a.batch_bytes, a.batch_messages * a.size)}
    if "scale" in scenarios:
        cfg["scale"] = {"count": a.scale_count, "brokers": b.brokers or ["RMQ_BROKER_ADDR / first master"],
                        "cases": b.scale_layout, "idle_s": a.idle_s,
                        "assigned_queues": {f"{c} {s}": n for (c, s), n in b.scale_assigned.items()}}
    if "ceiling" in scenarios:
        cfg["ceiling"] = {"count": a.ceiling_count, "queues": a.queues, "client_workers": 1, "fake_workers": 1,
                          "busy_share": {c: [{"client": u, "fake": f} for u, f in v] for c, v in b.ceiling_util.items()}}
    if "floor" in scenarios:
        cfg["floor"] = {"seconds": a.floor_seconds, "shapes": b.floor_shapes}
    if grpc:
        cfg["proxy_endpoint"] = a.proxy_endpoint
        cfg["grpc_count"] = a.grpc_count
        cfg["java_grpc_client"] = "rocketmq-client-java 5.0.8 (bench/peers/java-grpc rmqgrpc.GrpcBench)"
    rows = b.rows()
    os.makedirs(a.results_dir, exist_ok=True)
    base = os.path.join(a.results_dir, b.id)
    with open(base + ".json", "w") as f:
        json.dump({"config": cfg, "results": rows}, f, indent=2)
        f.write("\n")
    with open(base + ".runs.json", "w") as f:
        json.dump({"config": cfg, "preload": b.preload, "failures": b.failures, "runs": b.runs}, f, indent=2)
        f.write("\n")
    # The chart (SVG) is drawn by `rmq-bench chart`; a convenience, never lose the figures over it.
    svg = base + ".svg"
    try:
        subprocess.run([a.rmq_bench, "chart", "--input", base + ".json", "--output", svg],
                       check=True, stdout=subprocess.DEVNULL, timeout=60)
        png = svg
    except (OSError, subprocess.SubprocessError) as e:
        png = f"(chart failed: {e})"

    if any(not r["scenario"].startswith("scale-") for r in rows):
        print(table(rows, cfg))
        print()
    lat = latency_table(rows, cfg)
    if lat:
        print(lat)
        print()
    if "scale" in scenarios:
        print(f"Scale: {a.scale_count:,} x {a.size} B per drain, rmq-push idle {a.idle_s:g} s on empty topics "
              f"of the same layout, median of {a.reps} repetition(s)")
        print()
        print(scale_table(rows, b.scale_layout, b.scale_assigned))
        print()
    print("Targets (measured, not asserted):")
    print(targets(rows, scenarios))
    if b.unavailable:
        print()
        for c, why in b.unavailable.items():
            print(f"- {c}: not measured: {why}")
    if b.failures:
        print()
        print("Failed runs (not in the figures):")
        for f_ in b.failures:
            print("- " + f_)
    print()
    print(f"Results: {base}.json  (every run: {base}.runs.json)  chart: {png}")
    print(f"Harness time: {took:.0f} s")


if __name__ == "__main__":
    main()
