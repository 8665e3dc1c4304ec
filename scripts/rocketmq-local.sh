#!/usr/bin/env bash
# Run the real Apache RocketMQ (name server + broker) locally, from Maven Central jars, for tests and CI.
#
# Usage: scripts/rocketmq-local.sh <command> [args]
#
#   start [--second-broker]   resolve the jars (first time only), start the name server on 127.0.0.1:9876 and
#                             broker-a on 127.0.0.1:10911 in a fresh temp store, wait until the broker is
#                             registered with the name server, then print (stdout, eval-able):
#                               export NAMESRV_ADDR=127.0.0.1:9876
#                               export RMQ_BROKER_ADDR=127.0.0.1:10911
#                               export RMQ_VERSION=5.5.0
#                             (plus RMQ_BROKER_B_ADDR with --second-broker or RMQ_SECOND_BROKER=1).
#                             Already running: says so, starts what is missing, prints the same lines.
#                             On 5.x also the typed topics PriorityTopic (PRIORITY, 8 queues) and
#                             LiteTopic (a LITE parent, 4 queues), printed as RMQ_PRIORITY_TOPIC / RMQ_LITE_TOPIC.
#                             With RMQ_PROXY=1 (5.x only) also the RocketMQ proxy (rocketmq-proxy of the same
#                             version, cluster mode against the local name server) and prints
#                               export RMQ_PROXY_ENDPOINT=127.0.0.1:8081   (its gRPC port)
#   stop                      stop exactly the processes `start` started (pid files), wait, remove the temp dir
#   status                    what runs (exit 0 when the name server runs, 3 when nothing runs)
#   env                       print the export lines of the running instance (exit 3 when nothing runs)
#   start-broker NAME         start broker-a, broker-b, broker-a-s, broker-a-s2 (keeps its store when it ran before)
#   start-proxy / stop-proxy / restart-proxy   start (5.x only), SIGTERM or restart the proxy of the running instance
#   stop-broker NAME          SIGTERM one broker and wait for it to exit (store kept)
#   kill-broker NAME          SIGKILL one broker (store kept; the next start does the abnormal recovery)
#   restart-broker NAME       stop-broker (if running) + start-broker, same store
#   cluster                   brokers registered with the name server: "<cluster> <brokerName> <id> <addr>"
#   logs [NAME]               tail the logs of namesrv / broker-a / broker-b (default: all)
#   admin ARGS...             mqadmin (org.apache.rocketmq.tools.command.MQAdminStartup) of the running version,
#                             NAMESRV_ADDR defaults to the local name server, e.g.
#                               scripts/rocketmq-local.sh admin updateTopic -c DefaultCluster -t T -r 8 -w 8
#                               scripts/rocketmq-local.sh admin updateSubGroup -c DefaultCluster -g G -o true
#                               scripts/rocketmq-local.sh admin consumerProgress -g G
#                               scripts/rocketmq-local.sh admin clusterList
#                             mqadmin exits 0 even when the operation failed: check its output.
#   resolve [VERSION]         resolve (download) the jars and print the version that `start` would use
#
# Environment:
#   RMQ_VERSION        exact version (5.5.0, 4.9.7, ...) or a line: "5" (default) / "4.9". A line picks the newest
#                      version of the line that resolves from Maven (tried in the order of VERSIONS_5 /
#                      VERSIONS_4_9 below) and remembers the choice in .cache/rocketmq/choice-<line>.
#   RMQ_SECOND_BROKER  1 = `start` also starts broker-b
#   RMQ_TOPOLOGY       default (one master per broker group, as above) | master-slave | controller:
#                      master-slave: broker-a master (brokerId=0, brokerRole=RMQ_MASTER_ROLE: ASYNC_MASTER (default)
#                        or SYNC_MASTER) + its slave broker-a-s (brokerName broker-a, brokerId=1, brokerRole=SLAVE,
#                        HA port = its port+1), both with slaveReadEnable=true; broker-b (a master) with
#                        RMQ_SECOND_BROKER=1.
#                      controller (5.x only): the controller embedded in the name server (enableControllerInNamesrv,
#                        one DLedger peer on RMQ_CONTROLLER_PORT) and RMQ_REPLICAS (2 default, or 3) brokers in
#                        controller mode (enableControllerMode, controllerAddr, brokerName broker-a, ids assigned by
#                        the controller): broker-a, broker-a-s (and broker-a-s2); the first one up is elected master,
#                        killing the master elects another. broker-b (a plain master) with RMQ_SECOND_BROKER=1.
#                      start-broker / stop-broker / kill-broker / restart-broker take broker-a-s / broker-a-s2 too.
#                      `start` prints RMQ_TOPOLOGY, RMQ_BROKER_A_SLAVE_ADDR (and RMQ_BROKER_A_SLAVE2_ADDR,
#                      RMQ_CONTROLLER_ADDR).
#   RMQ_BROKER_A_SLAVE_PORT / RMQ_BROKER_A_SLAVE2_PORT   ports of broker-a-s / broker-a-s2 (default broker-a's +20 / +30)
#   RMQ_CONTROLLER_PORT  the embedded controller's DLedger (and request) port (default name server port + 2)
#   RMQ_BROKER_HEAP / RMQ_NAMESRV_HEAP   -Xms of brokers / name server and proxy (default 256m / 128m; -Xmx is twice);
#                      five JVMs at the defaults use about 2.5 GiB RSS. Every launch prints its java command (stderr).
#   RMQ_START_TIMEOUT  seconds to wait for each process to become ready (default 120)
#   RMQ_NAMESRV_PORT / RMQ_BROKER_A_PORT / RMQ_BROKER_B_PORT   ports (default 9876 / 10911 / 10921);
#                      a broker also uses port-2 (fast/"VIP" channel) and port+1 (HA). A running instance keeps the
#                      ports it was started with (recorded in its run dir), whatever these say later.
#   RMQ_PROXY          1 = `start` also starts the proxy (5.x; on 4.9.x, which has no proxy, it says so and goes on)
#   RMQ_PROXY_PORT / RMQ_PROXY_REMOTING_PORT   the proxy's gRPC and remoting ports (default 8081 / 8080)
#   RMQ_TMPDIR         where the temp run dir (stores, logs) is created (default $TMPDIR or /tmp)
#   RMQ_JAVA_OPTS      extra JVM flags for the name server and brokers
#   RMQ_INSTANCE       name of an instance beside the default one (own run dir .cache/rocketmq/current-NAME; give
#                      it its own ports), e.g. a secured one next to the plaintext one the tests use
#   RMQ_AUTH           acl = start the broker with authentication and authorization: 5.x (5.3+) ACL 2.0 with the
#                      super user rmq-admin and the normal user rmq-user (Pub+Sub+Get on every topic and group, Sub
#                      denied on topic AuthNoSubTopic), users and ACLs created with mqadmin; 4.9.x ACL 1.0
#                      (aclEnable, conf/plain_acl.yml) with the same accounts. `start` prints RMQ_ACCESS_KEY /
#                      RMQ_SECRET_KEY (normal user), RMQ_ADMIN_ACCESS_KEY / RMQ_ADMIN_SECRET_KEY, RMQ_AUTH_DENY_TOPIC.
#                      mqadmin (`admin`) signs as rmq-admin (conf/tools.yml).
#   RMQ_TLS            enforcing | permissive: TLS on the name server and broker ports (-Dtls.server.mode), with a
#                      CA, server and client certificates made by openssl in the run dir; `start` prints
#                      RMQ_TLS_CA, RMQ_TLS_CERT, RMQ_TLS_KEY (client certificate), RMQ_TLS_OTHER_CA (a CA that did
#                      not sign the server certificate) and RMQ_TLS_MODE.
#   RMQ_TLS_CLIENT_AUTH  none (default) | optional | require: mTLS (tls.server.need.client.auth, client
#                      certificates checked against the CA)
#   RMQ_TLS_PROVIDER   jdk (default: the JDK's TLS, as the Maven jars run) | openssl: netty-tcnative (BoringSSL,
#                      from Maven Central) on the servers' classpath, which RocketMQ's TlsHelper then prefers
#                      (5.x only; TLS costs the broker about half the CPU of the JDK's)
#                      A running instance started with other RMQ_VERSION / RMQ_AUTH / RMQ_TLS settings is refused.
#   RMQ_BROKER_EXTRA_CONF  extra broker.conf lines (newline-separated), appended last (e.g. ACL, TLS switches)
#   JAVA_HOME          java to use (else `java` on PATH)
#
# Broker settings (write_broker_conf): test-friendly, e.g. quick transaction check-backs
# (transactionTimeOut=3000, transactionCheckInterval=3000, transactionOpBatchInterval=1000 on 5.x),
# a quick pop revive scan (reviveInterval=200, reviveMaxSlow=1 on 5.x); on 5.x recall of timer messages
# (recallMessageEnable=true) and lite topics (enableLmq=true, enableMultiDispatch=true).
#
# Files: jars in <repo>/.cache/rocketmq/<version>/lib (git-ignored; `.complete` marks a finished download);
# the running instance lives in a fresh temp dir linked from <repo>/.cache/rocketmq/current.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$SCRIPT_DIR/.." && pwd)"
CACHE="$REPO_ROOT/.cache/rocketmq"
INSTANCE="${RMQ_INSTANCE:-}"
[[ -z "$INSTANCE" || "$INSTANCE" =~ ^[A-Za-z0-9_-]+$ ]] || { echo "rocketmq-local: RMQ_INSTANCE='$INSTANCE' must be letters, digits, - or _" >&2; exit 64; }
CURRENT="$CACHE/current${INSTANCE:+-$INSTANCE}"

VERSIONS_5="5.5.1 5.5.0 5.4.0 5.3.3 5.3.2 5.3.1 5.2.0 5.1.4"
VERSIONS_4_9="4.9.8 4.9.7 4.9.6"

NAMESRV_PORT="${RMQ_NAMESRV_PORT:-9876}"
BROKER_A_PORT="${RMQ_BROKER_A_PORT:-10911}"
BROKER_B_PORT="${RMQ_BROKER_B_PORT:-10921}"
PROXY_PORT="${RMQ_PROXY_PORT:-8081}"
PROXY_REMOTING_PORT="${RMQ_PROXY_REMOTING_PORT:-8080}"
BROKER_A_SLAVE_PORT="${RMQ_BROKER_A_SLAVE_PORT:-$((BROKER_A_PORT + 20))}"
BROKER_A_SLAVE2_PORT="${RMQ_BROKER_A_SLAVE2_PORT:-$((BROKER_A_PORT + 30))}"
CONTROLLER_PORT="${RMQ_CONTROLLER_PORT:-$((NAMESRV_PORT + 2))}"
TOPOLOGY="${RMQ_TOPOLOGY:-default}"
MASTER_ROLE="${RMQ_MASTER_ROLE:-ASYNC_MASTER}"
REPLICAS="${RMQ_REPLICAS:-2}"
START_TIMEOUT="${RMQ_START_TIMEOUT:-120}"
HOST=127.0.0.1
NAMESRV_ADDR_LOCAL="$HOST:$NAMESRV_PORT"
CLUSTER=DefaultCluster

if [[ -n "${JAVA_HOME:-}" && -x "$JAVA_HOME/bin/java" ]]; then JAVA="$JAVA_HOME/bin/java"; else JAVA=java; fi

log() { printf 'rocketmq-local: %s\n' "$*" >&2; }
die() { printf 'rocketmq-local: error: %s\n' "$*" >&2; exit 1; }
now() { date +%s; }

need() {
  command -v "$1" >/dev/null 2>&1 || die "'$1' not found on PATH: $2"
}

# ---------------------------------------------------------------------------------------------------------------
# Remoting probe (python3 stdlib): speaks the RocketMQ frame (4-byte total length, 4-byte header length whose high
# byte is the serialize type, JSON header, body).
PROBE_PY='
import base64, hashlib, hmac, json, os, re, socket, ssl, struct, sys

def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed by peer")
        buf += chunk
    return buf

def sign(ext, body=b""):
    # Java AclClientRPCHook: values of the sorted ext fields, then the body; HmacSHA1, Base64.
    ak, sk = os.environ.get("RMQ_PROBE_AK"), os.environ.get("RMQ_PROBE_SK")
    if not ak or not sk:
        return ext
    ext = dict(ext, AccessKey=ak)
    content = "".join(ext[k] for k in sorted(ext)).encode() + body
    ext["Signature"] = base64.b64encode(hmac.new(sk.encode(), content, hashlib.sha1).digest()).decode()
    return ext

def connect(host, port, timeout):
    s = socket.create_connection((host, int(port)), timeout=timeout)
    ca = os.environ.get("RMQ_PROBE_TLS_CA")
    if not ca:
        return s
    ctx = ssl.create_default_context(cafile=ca)
    cert, key = os.environ.get("RMQ_PROBE_TLS_CERT"), os.environ.get("RMQ_PROBE_TLS_KEY")
    if cert and key:
        ctx.load_cert_chain(cert, key)
    return ctx.wrap_socket(s, server_hostname=host)

def request(addr, code, ext=None, timeout=3.0):
    host, port = addr.rsplit(":", 1)
    header = json.dumps({"code": code, "language": "PYTHON", "version": 0, "opaque": 1,
                         "flag": 0, "extFields": sign(ext or {})}).encode()
    frame = struct.pack(">ii", 4 + len(header), len(header)) + header
    with connect(host, port, timeout) as s:
        s.settimeout(timeout)
        s.sendall(frame)
        total = struct.unpack(">i", recv_exact(s, 4))[0]
        data = recv_exact(s, total)
    if data[0] != 0:
        raise ValueError("response is not JSON-serialized (serialize type %d)" % data[0])
    hlen = struct.unpack(">i", data[:4])[0] & 0xFFFFFF
    resp = json.loads(data[4:4 + hlen].decode("utf-8"))
    return resp, data[4 + hlen:]

def java_json(body):
    # fastjson writes integer map keys unquoted: {0:"127.0.0.1:10911"}
    text = body.decode("utf-8")
    return json.loads(re.sub(r"([{,])\s*(-?\d+)\s*:", "\\1\"\\2\":", text))

def main():
    cmd, addr = sys.argv[1], sys.argv[2]
    try:
        if cmd == "cluster":
            resp, body = request(addr, 106)
            if resp.get("code") != 0:
                print("GET_BROKER_CLUSTER_INFO failed: code %s %s" % (resp.get("code"), resp.get("remark")), file=sys.stderr)
                return 2
            info = java_json(body) if body else {}
            for name, data in sorted((info.get("brokerAddrTable") or {}).items()):
                for bid, baddr in sorted((data.get("brokerAddrs") or {}).items()):
                    print(data.get("cluster", "?"), name, bid, baddr)
        elif cmd == "topic":
            # UPDATE_AND_CREATE_TOPIC (17) on the broker ADDR: TOPIC QUEUES [MESSAGE_TYPE]
            topic, queues = sys.argv[3], sys.argv[4]
            ext = {"topic": topic, "defaultTopic": "TBW102", "readQueueNums": queues,
                   "writeQueueNums": queues, "perm": "6", "topicFilterType": "SINGLE_TAG",
                   "topicSysFlag": "0", "order": "false"}
            if len(sys.argv) > 5:
                ext["attributes"] = "+message.type=" + sys.argv[5]
            resp, _ = request(addr, 17, ext)
            if resp.get("code") != 0:
                print("UPDATE_AND_CREATE_TOPIC %s failed: code %s %s" % (topic, resp.get("code"), resp.get("remark")), file=sys.stderr)
                return 2
        elif cmd == "version":
            resp, body = request(addr, 28)
            if resp.get("code") != 0:
                print("GET_BROKER_RUNTIME_INFO failed: code %s %s" % (resp.get("code"), resp.get("remark")), file=sys.stderr)
                return 2
            table = java_json(body).get("table", {})
            print(table.get("brokerVersionDesc", "unknown"))
        else:
            print("unknown probe command " + cmd, file=sys.stderr)
            return 64
    except (OSError, ValueError, ConnectionError, ssl.SSLError) as e:
        print("%s: %s" % (addr, e), file=sys.stderr)
        return 1
    return 0

sys.exit(main())
'

# probe CMD ADDR: with TLS and signing when the instance is secured (see security_env).
probe() {
  local t; t="$(run_dir)"
  if [[ -n "$t" ]]; then
    (load_security "$t"; security_env "$t"; python3 -c "$PROBE_PY" "$@")
  else
    python3 -c "$PROBE_PY" "$@"
  fi
}

port_open() { (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null; }

# ---------------------------------------------------------------------------------------------------------------
# Versions and jars

is_4x() { [[ "$1" == 4.* ]]; }

write_pom() {
  local v="$1" dir="$2"
  cat >"$dir/pom.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<!-- generated by scripts/rocketmq-local.sh: the jars of RocketMQ $v (name server, broker, mqadmin) -->
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>rmq.local</groupId>
  <artifactId>rocketmq-jars</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.rocketmq</groupId><artifactId>rocketmq-namesrv</artifactId><version>$v</version></dependency>
    <dependency><groupId>org.apache.rocketmq</groupId><artifactId>rocketmq-broker</artifactId><version>$v</version></dependency>
    <dependency><groupId>org.apache.rocketmq</groupId><artifactId>rocketmq-tools</artifactId><version>$v</version></dependency>
  </dependencies>
</project>
EOF
}

# download_jars VERSION: jars of VERSION in $CACHE/VERSION/lib (Maven runs only when the marker is missing).
download_jars() {
  local v="$1" dir="$CACHE/$1"
  [[ -f "$dir/.complete" ]] && return 0
  need mvn "install Maven (e.g. apt-get install maven) to download the RocketMQ jars"
  mkdir -p "$dir"
  write_pom "$v" "$dir"
  rm -rf "$dir/lib" "$dir/lib.tmp"
  log "resolving RocketMQ $v jars with Maven (first start of this version only)..."
  local t0; t0=$(now)
  if mvn -B -q -Dstyle.color=never -f "$dir/pom.xml" dependency:copy-dependencies -DincludeScope=runtime \
       -DoutputDirectory="$dir/lib.tmp" >"$dir/mvn.log" 2>&1 \
     && compgen -G "$dir/lib.tmp/rocketmq-broker-$v.jar" >/dev/null; then
    mv "$dir/lib.tmp" "$dir/lib"
    echo "$v" >"$dir/.complete"
    log "RocketMQ $v: $(ls "$dir/lib" | wc -l) jars in $dir/lib ($(( $(now) - t0 )) s)"
    return 0
  fi
  rm -rf "$dir/lib.tmp"
  log "RocketMQ $v does not resolve from Maven (log: $dir/mvn.log):"
  grep -m1 -E 'Could not|not found|ERROR\]' "$dir/mvn.log" >&2 || tail -n 3 "$dir/mvn.log" >&2 || true
  return 1
}
# ensure_jars VERSION: download_jars under the download lock, unless the jars are there.
ensure_jars() {
  [[ -f "$CACHE/$1/.complete" ]] && return 0
  with_cache_lock download_jars "$@"
}

# download_proxy_jars VERSION: the jars of rocketmq-proxy VERSION (and its dependencies) in $CACHE/proxy-VERSION/lib,
# apart from the broker's (the proxy brings its own gRPC and protobuf).
download_proxy_jars() {
  local v="$1" dir="$CACHE/proxy-$1"
  [[ -f "$dir/.complete" ]] && return 0
  need mvn "install Maven (e.g. apt-get install maven) to download the RocketMQ proxy jars"
  mkdir -p "$dir"
  cat >"$dir/pom.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<!-- generated by scripts/rocketmq-local.sh: the jars of the RocketMQ $v proxy -->
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>rmq.local</groupId>
  <artifactId>rocketmq-proxy-jars</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.rocketmq</groupId><artifactId>rocketmq-proxy</artifactId><version>$v</version></dependency>
  </dependencies>
</project>
EOF
  rm -rf "$dir/lib" "$dir/lib.tmp"
  log "resolving the RocketMQ $v proxy jars with Maven (first start only)..."
  local t0; t0=$(now)
  if mvn -B -q -Dstyle.color=never -f "$dir/pom.xml" dependency:copy-dependencies -DincludeScope=runtime \
       -DoutputDirectory="$dir/lib.tmp" >"$dir/mvn.log" 2>&1 \
     && compgen -G "$dir/lib.tmp/rocketmq-proxy-$v.jar" >/dev/null; then
    mv "$dir/lib.tmp" "$dir/lib"
    echo "$v" >"$dir/.complete"
    log "RocketMQ $v proxy: $(ls "$dir/lib" | wc -l) jars in $dir/lib ($(( $(now) - t0 )) s)"
    return 0
  fi
  rm -rf "$dir/lib.tmp"
  log "the RocketMQ $v proxy does not resolve from Maven (log: $dir/mvn.log)"
  return 1
}
# ensure_proxy_jars VERSION: download_proxy_jars under the download lock, unless the jars are there.
ensure_proxy_jars() {
  [[ -f "$CACHE/proxy-$1/.complete" ]] && return 0
  with_cache_lock download_proxy_jars "$@"
}

# resolve_version [SPEC] -> prints the exact version (jars present).
resolve_version() {
  local spec="${1:-${RMQ_VERSION:-5}}" line candidates v
  case "$spec" in
    5|5.x|latest) line=5; candidates="$VERSIONS_5" ;;
    4|4.x|4.9|4.9.x) line=4.9; candidates="$VERSIONS_4_9" ;;
    [0-9]*.[0-9]*.[0-9]*)
      ensure_jars "$spec" || die "RocketMQ $spec is not available from Maven; pick another RMQ_VERSION"
      echo "$spec"; return 0 ;;
    *) die "RMQ_VERSION='$spec' is neither a version (5.5.0) nor a line (5, 4.9)" ;;
  esac
  local choice="$CACHE/choice-$line"
  if [[ -f "$choice" ]]; then
    v="$(cat "$choice")"
    if [[ -f "$CACHE/$v/.complete" ]]; then echo "$v"; return 0; fi
  fi
  mkdir -p "$CACHE"
  for v in $candidates; do
    if ensure_jars "$v"; then
      echo "$v" >"$choice"
      log "RocketMQ line $line: using $v (remembered in $choice; delete it to pick again)"
      echo "$v"; return 0
    fi
  done
  die "no RocketMQ $line.x version resolves from Maven (tried: $candidates)"
}

# ---------------------------------------------------------------------------------------------------------------
# Run dir: a fresh temp dir per `start`, linked from $CURRENT.
#   <T>/version, <T>/rocketmq-home/conf, <T>/<name>/{pid,stdout.log,home,store,*.conf}

run_dir() { # prints the live run dir, or nothing
  if [[ -L "$CURRENT" ]]; then
    local t; t="$(readlink "$CURRENT")"
    if [[ -d "$t" && -f "$t/version" ]]; then echo "$t"; return 0; fi
    rm -f "$CURRENT"
  fi
  return 0
}

# pid_running PID: the process exists and is not a zombie (an orphan stays a zombie until init reaps it).
pid_running() {
  kill -0 "$1" 2>/dev/null || return 1
  [[ -d "/proc/$1/task" ]] || return 0
  # A killed JVM's main thread turns zombie while its other threads are still exiting (and still hold
  # its sockets): the process only counts as gone once no thread is alive.
  local st state
  for st in /proc/"$1"/task/*/stat; do
    state="$(sed -n 's/.*) \(.\).*/\1/p' "$st" 2>/dev/null || true)"
    [[ -n "$state" && "$state" != Z && "$state" != X ]] && return 0
  done
  return 1
}

# wait_ports_free NAME: after NAME exited, wait (bounded) until its listening ports are closed.
wait_ports_free() {
  local name="$1" ports=() p i
  if [[ "$name" == namesrv ]]; then
    ports=("$NAMESRV_PORT")
  elif [[ "$name" == proxy ]]; then
    ports=("$PROXY_PORT" "$PROXY_REMOTING_PORT")
  else
    p="$(broker_port "$name")"
    ports=("$p" $((p - 2)) $((p + 1)))
  fi
  for p in "${ports[@]}"; do
    for ((i = 0; i < 300; i++)); do
      port_open "$p" || break
      sleep 0.1
    done
  done
}

# alive T NAME: the process in <T>/<NAME>/pid runs and is the one we started (its command line names T).
alive() {
  local f="$1/$2/pid" pid args
  [[ -f "$f" ]] || return 1
  pid="$(cat "$f")"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  pid_running "$pid" || return 1
  if [[ -r "/proc/$pid/cmdline" ]]; then
    args="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null || true)"
  else
    args="$(ps -p "$pid" -o args= 2>/dev/null || true)"
  fi
  [[ "$args" == *"$1/$2/"* ]]
}

pid_of() { cat "$1/$2/pid"; }

broker_port() {
  case "$1" in
    broker-a) echo "$BROKER_A_PORT" ;;
    broker-b) echo "$BROKER_B_PORT" ;;
    broker-a-s) echo "$BROKER_A_SLAVE_PORT" ;;
    broker-a-s2) echo "$BROKER_A_SLAVE2_PORT" ;;
    *) die "unknown broker '$1' (broker-a, broker-b, broker-a-s or broker-a-s2)" ;;
  esac
}

# ---------------------------------------------------------------------------------------------------------------
# Security (RMQ_AUTH, RMQ_TLS, RMQ_TLS_CLIENT_AUTH): recorded in <T>/security at `start`; certificates in <T>/tls.

ADMIN_AK=rmq-admin
ADMIN_SK=rmq-admin-secret
USER_AK=rmq-user
USER_SK=rmq-user-secret
DENY_TOPIC=AuthNoSubTopic

requested_security() { # prints the settings the environment asks for (the <T>/security format)
  local auth="${RMQ_AUTH:-none}" tls="${RMQ_TLS:-none}" client="${RMQ_TLS_CLIENT_AUTH:-none}"
  case "$auth" in none|acl) ;; *) die "RMQ_AUTH='$auth': use acl (or leave it unset)" ;; esac
  case "$tls" in
    none|disabled) tls=none ;;
    enforcing|permissive) ;;
    *) die "RMQ_TLS='$tls': use enforcing or permissive (or leave it unset)" ;;
  esac
  case "$client" in none|optional|require) ;; *) die "RMQ_TLS_CLIENT_AUTH='$client': use none, optional or require" ;; esac
  if [[ "$tls" == none && "$client" != none ]]; then die "RMQ_TLS_CLIENT_AUTH=$client needs RMQ_TLS=enforcing or permissive"; fi
  local provider="${RMQ_TLS_PROVIDER:-jdk}"
  case "$provider" in jdk|openssl) ;; *) die "RMQ_TLS_PROVIDER='$provider': use jdk or openssl" ;; esac
  if [[ "$tls" == none ]]; then provider=jdk; fi
  printf 'SEC_AUTH=%s\nSEC_TLS=%s\nSEC_CLIENT_AUTH=%s\nSEC_TLS_PROVIDER=%s\n' "$auth" "$tls" "$client" "$provider"
}

TCNATIVE_VERSION=2.0.74.Final # the netty-tcnative of the netty (4.1.1xx) of RocketMQ 5.x

# download_tcnative: netty-tcnative-boringssl-static (this machine's classifier) in $CACHE/tcnative/lib.
download_tcnative() {
  local dir="$CACHE/tcnative-$TCNATIVE_VERSION" arch
  [[ -f "$dir/.complete" ]] && return 0
  case "$(uname -m)" in
    x86_64) arch=linux-x86_64 ;;
    aarch64) arch=linux-aarch_64 ;;
    *) die "RMQ_TLS_PROVIDER=openssl: no netty-tcnative build for $(uname -m); use RMQ_TLS_PROVIDER=jdk" ;;
  esac
  need mvn "install Maven (e.g. apt-get install maven) to download netty-tcnative"
  mkdir -p "$dir"
  cat >"$dir/pom.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<!-- generated by scripts/rocketmq-local.sh: netty-tcnative for RMQ_TLS_PROVIDER=openssl -->
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>rmq.local</groupId>
  <artifactId>tcnative</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>io.netty</groupId><artifactId>netty-tcnative-boringssl-static</artifactId><version>$TCNATIVE_VERSION</version><classifier>$arch</classifier></dependency>
    <dependency><groupId>io.netty</groupId><artifactId>netty-tcnative-classes</artifactId><version>$TCNATIVE_VERSION</version></dependency>
  </dependencies>
</project>
EOF
  rm -rf "$dir/lib" "$dir/lib.tmp"
  if mvn -B -q -Dstyle.color=never -f "$dir/pom.xml" dependency:copy-dependencies -DexcludeTransitive=true \
       -DoutputDirectory="$dir/lib.tmp" >"$dir/mvn.log" 2>&1; then
    mkdir -p "$dir/lib"
    mv "$dir"/lib.tmp/netty-tcnative-classes-*.jar "$dir"/lib.tmp/netty-tcnative-boringssl-static-*-"$arch".jar "$dir/lib/"
    rm -rf "$dir/lib.tmp"
    echo "$TCNATIVE_VERSION" >"$dir/.complete"
    return 0
  fi
  die "netty-tcnative $TCNATIVE_VERSION does not resolve from Maven (log: $dir/mvn.log)"
}
# ensure_tcnative: download_tcnative under the download lock, unless it is there.
ensure_tcnative() {
  [[ -f "$CACHE/tcnative-$TCNATIVE_VERSION/.complete" ]] && return 0
  with_cache_lock download_tcnative "$@"
}

# server_classpath T: the jars of the instance's version (plus netty-tcnative with RMQ_TLS_PROVIDER=openssl)
server_classpath() {
  local v; v="$(cat "$1/version")"
  load_security "$1"
  if [[ "$SEC_TLS_PROVIDER" == openssl ]]; then
    printf '%s' "$CACHE/$v/lib/*:$CACHE/tcnative-$TCNATIVE_VERSION/lib/*"
  else
    printf '%s' "$CACHE/$v/lib/*"
  fi
}

load_security() { # T: SEC_* of the instance in T (none when it was started without security)
  SEC_AUTH=none SEC_TLS=none SEC_CLIENT_AUTH=none SEC_TLS_PROVIDER=jdk
  if [[ -f "$1/security" ]]; then
    local line
    while IFS= read -r line; do
      case "$line" in
        SEC_AUTH=*) SEC_AUTH="${line#*=}" ;;
        SEC_TLS=*) SEC_TLS="${line#*=}" ;;
        SEC_CLIENT_AUTH=*) SEC_CLIENT_AUTH="${line#*=}" ;;
        SEC_TLS_PROVIDER=*) SEC_TLS_PROVIDER="${line#*=}" ;;
      esac
    done <"$1/security"
  fi
}

describe_security() { # (after load_security)
  local parts=()
  [[ "$SEC_AUTH" != none ]] && parts+=("auth=$SEC_AUTH")
  [[ "$SEC_TLS" != none ]] && parts+=("tls=$SEC_TLS")
  [[ "$SEC_CLIENT_AUTH" != none ]] && parts+=("client-auth=$SEC_CLIENT_AUTH")
  [[ "$SEC_TLS_PROVIDER" != jdk ]] && parts+=("tls-provider=$SEC_TLS_PROVIDER")
  if [[ ${#parts[@]} -eq 0 ]]; then echo plaintext; else echo "${parts[*]}"; fi
}

security_env() { # T (after load_security): the probe signs as the admin and speaks TLS with the client certificate
  if [[ "$SEC_AUTH" == acl ]]; then
    export RMQ_PROBE_AK="$ADMIN_AK" RMQ_PROBE_SK="$ADMIN_SK"
  else
    unset RMQ_PROBE_AK RMQ_PROBE_SK
  fi
  if [[ "$SEC_TLS" != none ]]; then
    export RMQ_PROBE_TLS_CA="$1/tls/ca.pem" RMQ_PROBE_TLS_CERT="$1/tls/client.pem" RMQ_PROBE_TLS_KEY="$1/tls/client.key"
  else
    unset RMQ_PROBE_TLS_CA RMQ_PROBE_TLS_CERT RMQ_PROBE_TLS_KEY
  fi
}

version_at_least() { # V MIN
  [[ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n 1)" == "$2" ]]
}

# make_certs T: a test CA, a server certificate for localhost/127.0.0.1, a client certificate (all EC P-256,
# keys in PKCS#8 as netty wants them) and a second CA that signed nothing (to test a wrong trust anchor).
make_certs() {
  local d="$1/tls"
  need openssl "openssl makes the TLS certificates of RMQ_TLS (e.g. apt-get install openssl)"
  mkdir -p "$d"
  (
    set -e
    cd "$d"
    for ca in ca other-ca; do
      openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$ca.key" -out "$ca.pem" \
        -days 30 -subj "/CN=rmq-local $ca" -addext "basicConstraints=critical,CA:TRUE" \
        -addext "keyUsage=critical,keyCertSign,cRLSign"
    done
    printf '%s\n' "subjectAltName=DNS:localhost,IP:127.0.0.1" "basicConstraints=CA:FALSE" \
      "keyUsage=critical,digitalSignature" "extendedKeyUsage=serverAuth,clientAuth" >server.ext
    printf '%s\n' "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature" \
      "extendedKeyUsage=clientAuth" >client.ext
    for leaf in server client; do
      openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$leaf.key" -out "$leaf.csr" \
        -subj "/CN=rmq-local $leaf"
      openssl x509 -req -in "$leaf.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -out "$leaf.pem" -days 30 \
        -extfile "$leaf.ext"
    done
  ) >"$d/openssl.log" 2>&1 || die "openssl could not make the TLS certificates (log: $d/openssl.log)"
}

write_tls_conf() { # T (after load_security): TlsHelper's file (tls.config.file), server and client side
  local d="$1/tls" auth_client=false
  [[ "$SEC_CLIENT_AUTH" != none ]] && auth_client=true
  cat >"$d/tls.properties" <<EOF
# generated by scripts/rocketmq-local.sh (RMQ_TLS=$SEC_TLS, RMQ_TLS_CLIENT_AUTH=$SEC_CLIENT_AUTH)
tls.test.mode.enable=false
tls.server.need.client.auth=$SEC_CLIENT_AUTH
tls.server.keyPath=$d/server.key
tls.server.certPath=$d/server.pem
tls.server.authClient=$auth_client
tls.server.trustCertPath=$d/ca.pem
tls.client.keyPath=$d/client.key
tls.client.certPath=$d/client.pem
tls.client.authServer=true
tls.client.trustCertPath=$d/ca.pem
EOF
}

security_java_opts() { # T (after load_security)
  if [[ "$SEC_TLS" != none ]]; then
    printf '%s\n' "-Dtls.server.mode=$SEC_TLS" "-Dtls.config.file=$1/tls/tls.properties" "-Dtls.enable=true"
  fi
}

# write_acl_files T V: what both lines read at startup: mqadmin's conf/tools.yml, and 4.9.x's conf/plain_acl.yml.
write_acl_files() {
  local conf="$1/rocketmq-home/conf"
  mkdir -p "$conf"
  printf 'accessKey: %s\nsecretKey: %s\n' "$ADMIN_AK" "$ADMIN_SK" >"$conf/tools.yml"
  if is_4x "$2"; then
    cat >"$conf/plain_acl.yml" <<EOF
# generated by scripts/rocketmq-local.sh (RMQ_AUTH=acl): ACL 1.0
globalWhiteRemoteAddresses: []
accounts:
  - accessKey: $ADMIN_AK
    secretKey: $ADMIN_SK
    admin: true
  - accessKey: $USER_AK
    secretKey: $USER_SK
    admin: false
    defaultTopicPerm: PUB|SUB
    defaultGroupPerm: PUB|SUB
    topicPerms:
      - $DENY_TOPIC=PUB
EOF
  fi
}

broker_auth_conf() { # V: the broker.conf lines of RMQ_AUTH=acl
  if is_4x "$1"; then
    echo "aclEnable=true"
  else
    cat <<EOF
authenticationEnabled=true
authenticationProvider=org.apache.rocketmq.auth.authentication.provider.DefaultAuthenticationProvider
authenticationMetadataProvider=org.apache.rocketmq.auth.authentication.provider.LocalAuthenticationMetadataProvider
authorizationEnabled=true
authorizationProvider=org.apache.rocketmq.auth.authorization.provider.DefaultAuthorizationProvider
authorizationMetadataProvider=org.apache.rocketmq.auth.authorization.provider.LocalAuthorizationMetadataProvider
initAuthenticationUser={"username":"$ADMIN_AK","password":"$ADMIN_SK"}
innerClientAuthenticationCredentials={"accessKey":"$ADMIN_AK","secretKey":"$ADMIN_SK"}
EOF
  fi
}

# setup_users_5x T: ACL 2.0 users and policies, with mqadmin (signed as the init super user)
setup_users_5x() {
  local b="$HOST:$BROKER_A_PORT" out step
  local steps=(
    "createUser -b $b -u $USER_AK -p $USER_SK -t Normal"
    "createAcl -b $b -s User:$USER_AK -r Topic:*,Group:* -a Pub,Sub,Get -d Allow"
    "updateAcl -b $b -s User:$USER_AK -r Topic:$DENY_TOPIC -a Sub -d Deny"
  )
  for step in "${steps[@]}"; do
    # shellcheck disable=SC2086
    out="$(set -f; cmd_admin $step 2>&1)" || true
    if ! grep -qi 'success' <<<"$out"; then
      log "mqadmin $step failed:"; printf '%s\n' "$out" | grep -v '^\s*$' | tail -n 5 >&2
      return 1
    fi
  done
  log "ACL 2.0: user $USER_AK (Pub+Sub+Get on every topic and group, Sub denied on $DENY_TOPIC), super user $ADMIN_AK"
}

write_logback_4x() { # ROCKETMQ_HOME/conf/logback_{namesrv,broker,tools}.xml for 4.9.x (read at startup, must exist)
  local conf="$1/conf" n
  mkdir -p "$conf"
  for n in namesrv broker tools; do
    cat >"$conf/logback_$n.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>\${user.home}/logs/rocketmqlogs/$n.log</file>
    <append>true</append>
    <encoder><pattern>%d{yyyy-MM-dd HH:mm:ss.SSS} %p %t - %m%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
EOF
  done
}

write_namesrv_conf() {
  cat >"$1" <<EOF
listenPort=$NAMESRV_PORT
bindAddress=$HOST
EOF
  if [[ "$TOPOLOGY" == controller ]]; then
    cat >>"$1" <<EOF
# the controller (5.x), embedded: one DLedger peer, which also takes the brokers' controller requests
enableControllerInNamesrv=true
controllerDLegerGroup=rmq-local
controllerDLegerPeers=n0-$HOST:$CONTROLLER_PORT
controllerDLegerSelfId=n0
controllerStorePath=$(dirname "$1")/controller
enableElectUncleanMaster=false
notifyBrokerRoleChanged=true
scanNotActiveBrokerInterval=1000
EOF
  fi
}

# broker_role_conf NAME STORE: the brokerName / brokerId / brokerRole lines (and the replication settings) of NAME
# in the instance's topology.
broker_role_conf() {
  local name="$1" store="$2" group="$1"
  [[ "$name" == broker-a-s* ]] && group=broker-a
  echo "brokerName=$group"
  if [[ "$TOPOLOGY" == controller && "$group" == broker-a ]]; then
    # ScheduleMessageService et al. start once the controller made this replica the master
    cat <<EOF
# controller mode (5.x): the controller embedded in the name server elects the master and assigns the ids
brokerRole=SLAVE
enableControllerMode=true
controllerAddr=$HOST:$CONTROLLER_PORT
# an acknowledged send is on every replica of the sync state set (nothing acknowledged is lost on a switch)
allAckInSyncStateSet=true
storePathEpochFile=$store/epochFileCheckpoint
# faster failure detection than the defaults (heartbeat timeout 10 s, metadata sync 5 s)
controllerHeartBeatTimeoutMills=3000
brokerHeartbeatInterval=500
syncBrokerMetadataPeriod=1000
checkSyncStateSetPeriod=1000
# a slave more than 15 s behind (Java's default) leaves the sync state set: shorter, a slave slowed by a busy
# machine drops out, and with unclean elections off no replica is left to elect when the master dies
haMaxTimeSlaveNotCatchup=15000
slaveReadEnable=true
EOF
  elif [[ "$TOPOLOGY" == master-slave && "$group" == broker-a ]]; then
    if [[ "$name" == broker-a ]]; then
      echo "brokerId=0"
      echo "brokerRole=${MASTER_ROLE}"
    else
      echo "brokerId=1"
      echo "brokerRole=SLAVE"
    fi
    echo "# consumers may be told to pull from the slave, and the slave serves them"
    echo "slaveReadEnable=true"
  else
    echo "brokerId=0"
    echo "brokerRole=ASYNC_MASTER"
  fi
}

write_broker_conf() { # FILE NAME PORT STORE VERSION (after load_security)
  local f="$1" name="$2" port="$3" store="$4" levels
  levels="$(printf '1s %.0s' $(seq 1 18))"
  cat >"$f" <<EOF
# generated by scripts/rocketmq-local.sh: a small, test-friendly broker
brokerClusterName=$CLUSTER
$(broker_role_conf "$name" "$store")
flushDiskType=ASYNC_FLUSH
namesrvAddr=$NAMESRV_ADDR_LOCAL
# advertise loopback (else a non-loopback interface address is registered)
brokerIP1=$HOST
listenPort=$port
bindAddress=$HOST
storePathRootDir=$store
storePathCommitLog=$store/commitlog
autoCreateTopicEnable=true
autoCreateSubscriptionGroup=true
enablePropertyFilter=true
# eighteen 1 s levels: delayed messages and consumer retries (level 3 + reconsumeTimes) come back after 1 s
messageDelayLevel=${levels% }
# small files: 100 MiB commit log (default 1 GiB), 30 000-entry consume queues (default 300 000)
mappedFileSizeCommitLog=104857600
mappedFileSizeConsumeQueue=600000
# default 200 ms answers "broker busy" on slow machines
waitTimeMillsInSendQueue=1000
# fast transaction check-back for tests: a half message without an answer is checked back once it
# is 3 s old, in check rounds every 3 s (defaults: 6 s; rounds every 30 s on 5.x, 60 s on 4.9.x)
transactionTimeOut=3000
transactionCheckInterval=3000
# 5.x writes the commit/rollback records of half messages in batches, every transactionOpBatchInterval
# (default 3 s): it must stay below transactionTimeOut, else a check round can still see an ended
# transaction as open and check it back (a commit is then delivered twice). 4.9.x has no such batch.
transactionOpBatchInterval=1000
# 5.x timer (delivery-time) messages: a 100 ms timer wheel slot (default 1 s), so a message is
# delivered within a few hundred ms after its time (4.9.x has no timer and ignores it)
timerPrecisionMs=100
# 5.x pop: the revive service (PopReviveService) rests reviveInterval x up to reviveMaxSlow between
# scans of the revive topic when it finds nothing (default 1 s x 3): a 200 ms rest keeps an unacked
# message's return close to its invisible time. What stays is fixed in the broker: a checkpoint is
# revived only once it is more than 2 s (PopAckConstants.ackTimeInterval + 1 s) behind the scan's
# end time, so a popped message comes back about 2.0-2.5 s after its invisible time
reviveInterval=200
reviveMaxSlow=1
# refuse writes only above 95 % disk use (default 90 %; 4.9.x reads -Drocketmq.broker.diskSpace*Ratio instead)
diskSpaceWarningLevelRatio=95
diskSpaceCleanForciblyRatio=93
# message trace (Java TraceDataEncoder records): the broker creates RMQ_SYS_TRACE_TOPIC at start (5.x and 4.9.x)
traceTopicEnable=true
EOF
  if ! is_4x "$5"; then
    cat >>"$f" <<EOF
# 5.x only: recall of timer messages before delivery (5.3.2+, RECALL_MESSAGE; off by default: every
# recall is answered NO_PERMISSION "operation is forbidden"), and lite topics (5.5.0+): the broker
# dispatches a message with a lite topic to its light message queue only with both of these on
# (without them the message lands in the parent topic only, and lite consumers get nothing)
recallMessageEnable=true
enableLmq=true
enableMultiDispatch=true
EOF
  fi
  if [[ "$SEC_AUTH" == acl ]]; then
    printf '# RMQ_AUTH=acl\n%s\n' "$(broker_auth_conf "$5")" >>"$f"
  fi
  if [[ -n "${RMQ_BROKER_EXTRA_CONF:-}" ]]; then
    printf '# RMQ_BROKER_EXTRA_CONF\n%s\n' "$RMQ_BROKER_EXTRA_CONF" >>"$f"
  fi
}

# java_opts T NAME HEAP -> the JVM flags (one per line)
java_opts() {
  local t="$1" name="$2" heap="$3" v
  v="$(cat "$t/version")"
  printf '%s\n' "-Xms$heap" "-Xmx$((${heap%m} * 2))m" "-XX:MaxDirectMemorySize=512m" "-XX:-UsePerfData" \
    "-Duser.home=$t/$name/home" "-Drocketmq.home.dir=$t/rocketmq-home" \
    "-Drocketmq.broker.diskSpaceWarningLevelRatio=0.95" "-Drocketmq.broker.diskSpaceCleanForciblyRatio=0.93"
  if is_4x "$v"; then
    printf '%s\n' "--add-opens=java.base/java.nio=ALL-UNNAMED" "--add-exports=java.base/jdk.internal.ref=ALL-UNNAMED" \
      "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED"
  else
    case "$name" in
      namesrv) echo "-Drmq.logback.configurationFile=rmq.namesrv.logback.xml" ;;
      broker-*) echo "-Drmq.logback.configurationFile=rmq.broker.logback.xml" ;;
      proxy) echo "-Drmq.logback.configurationFile=rmq.proxy.logback.xml" ;;
    esac
  fi
  load_security "$t"
  security_java_opts "$t"
  if [[ -n "${RMQ_JAVA_OPTS:-}" ]]; then printf '%s\n' $RMQ_JAVA_OPTS; fi
}

# launch T NAME MAINCLASS ARGS...: java in the background, detached (own session, fds closed), pid in <T>/<NAME>/pid
launch() {
  local t="$1" name="$2" main="$3"; shift 3
  local d="$t/$name" v heap="${RMQ_NAMESRV_HEAP:-128m}" opts=()
  v="$(cat "$t/version")"
  [[ "$name" == broker-* ]] && heap="${RMQ_BROKER_HEAP:-256m}"
  [[ "$heap" =~ ^[0-9]+m$ ]] || die "heap '$heap' must be megabytes like 256m (RMQ_BROKER_HEAP / RMQ_NAMESRV_HEAP)"
  mkdir -p "$d/home"
  mapfile -t opts < <(java_opts "$t" "$name" "$heap")
  local cp
  if [[ "$name" == proxy ]]; then cp="$CACHE/proxy-$v/lib/*"; else cp="$(server_classpath "$t")"; fi
  local setsid=()
  command -v setsid >/dev/null 2>&1 && setsid=(setsid)
  : >"$d/stdout.log"
  log "launch $name: $JAVA ${opts[*]} -cp <RocketMQ $v jars> $main $*"
  (
    cd "$d"
    export ROCKETMQ_HOME="$t/rocketmq-home"
    exec "${setsid[@]}" "$JAVA" "${opts[@]}" -cp "$cp" "$main" "$@" \
      </dev/null >"$d/stdout.log" 2>&1 9>&-
  ) &
  local pid=$! i
  echo "$pid" >"$d/pid"
  disown "$pid" 2>/dev/null || true
  # Until the subshell has exec'ed the JVM, /proc shows the shell's command line, and `alive` (which
  # checks the command line) would take the process for another one: on a loaded machine this read
  # as "exited during startup". Wait (at most 10 s) for the exec.
  for (( i = 0; i < 100; i++ )); do
    [[ -r "/proc/$pid/cmdline" ]] || break
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$main" && break
    sleep 0.1
  done
}

# dump_logs T NAME: the end of a process' stdout and main log (on failures)
dump_logs() {
  local d="$1/$2" f
  for f in "$d/stdout.log" "$d/home/logs/rocketmqlogs/$3.log"; do
    if [[ -f "$f" ]]; then
      printf -- '----- %s (last 40 lines) -----\n' "$f" >&2
      grep -v '|-INFO in\||-WARN in' "$f" | tail -n 40 >&2 || true
    fi
  done
}

# still_alive T NAME: `alive`, asked again half a second later before a starting process counts as
# gone: on a loaded machine one reading of /proc can miss a JVM that is still starting (seen as
# "exited during startup" of a name server that then answered `stop`).
still_alive() {
  alive "$1" "$2" && return 0
  sleep 0.5
  alive "$1" "$2" && return 0
  local pid; pid="$(pid_of "$1" "$2" 2>/dev/null || true)"
  log "$2 (pid ${pid:-?}) is gone: $(ps -o stat=,args= -p "${pid:-0}" 2>/dev/null | cut -c1-200 || true)"
  return 1
}

wait_namesrv() {
  local t="$1" deadline=$(( $(now) + START_TIMEOUT ))
  while :; do
    still_alive "$t" namesrv || { log "the name server exited during startup"; dump_logs "$t" namesrv namesrv; return 1; }
    if grep -q 'boot success' "$t/namesrv/stdout.log" && probe cluster "$NAMESRV_ADDR_LOCAL" >/dev/null 2>&1; then
      return 0
    fi
    if (( $(now) >= deadline )); then
      log "the name server did not answer on $NAMESRV_ADDR_LOCAL within ${START_TIMEOUT}s"
      dump_logs "$t" namesrv namesrv; return 1
    fi
    sleep 0.2
  done
}

# wait_broker T NAME PORT: the broker printed "boot success", is registered with the name server at
# 127.0.0.1:PORT as id 0, and answers GET_BROKER_RUNTIME_INFO itself.
wait_broker() {
  local t="$1" name="$2" port="$3" deadline=$(( $(now) + START_TIMEOUT ))
  while :; do
    still_alive "$t" "$name" || { log "$name exited during startup"; dump_logs "$t" "$name" broker; return 1; }
    if grep -q 'boot success' "$t/$name/stdout.log" \
       && probe cluster "$NAMESRV_ADDR_LOCAL" 2>/dev/null \
            | grep -Eq " ${name%-s*} $(registered_as "$name") $HOST:$port\$" \
       && probe version "$HOST:$port" >/dev/null 2>&1; then
      return 0
    fi
    if (( $(now) >= deadline )); then
      log "$name was not registered with the name server within ${START_TIMEOUT}s"
      dump_logs "$t" "$name" broker; return 1
    fi
    sleep 0.2
  done
}

# terminate T NAME SIGNAL: signal our process and wait until it is gone (SIGKILL after 60 s).
terminate() {
  local t="$1" name="$2" sig="$3" pid i
  alive "$t" "$name" || return 0
  pid="$(pid_of "$t" "$name")"
  kill "-$sig" "$pid" 2>/dev/null || true
  for ((i = 0; i < 600; i++)); do
    if ! pid_running "$pid"; then
      wait_ports_free "$name"
      return 0
    fi
    sleep 0.1
  done
  log "$name (pid $pid) did not exit within 60 s after SIG$sig; sending SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do
    pid_running "$pid" || return 0
    sleep 0.1
  done
  die "$name (pid $pid) survived SIGKILL"
}

start_broker_in() { # T NAME
  local t="$1" name="$2" port t0
  port="$(broker_port "$name")"
  if alive "$t" "$name"; then
    log "$name already running (pid $(pid_of "$t" "$name"), $HOST:$port)"
    return 0
  fi
  local p
  for p in "$port" $((port - 2)) $((port + 1)); do
    port_open "$p" && die "port $p (needed by $name) is already in use by another process"
  done
  mkdir -p "$t/$name/store"
  load_security "$t"
  write_broker_conf "$t/$name/broker.conf" "$name" "$port" "$t/$name/store" "$(cat "$t/version")"
  t0=$(now)
  launch "$t" "$name" org.apache.rocketmq.broker.BrokerStartup -c "$t/$name/broker.conf"
  if ! wait_broker "$t" "$name" "$port"; then
    terminate "$t" "$name" KILL
    return 1
  fi
  log "$name up on $HOST:$port (pid $(pid_of "$t" "$name"), $(( $(now) - t0 )) s)"
}

# start_proxy_in T: the proxy (5.x), cluster mode against the local name server, gRPC on PROXY_PORT.
start_proxy_in() {
  local t="$1" v t0 p deadline
  v="$(cat "$t/version")"
  if is_4x "$v"; then
    log "RocketMQ $v has no proxy (the proxy and its gRPC protocol are 5.x only): not starting one"
    return 0
  fi
  if alive "$t" proxy; then
    log "proxy already running (pid $(pid_of "$t" proxy), gRPC $HOST:$PROXY_PORT)"
    return 0
  fi
  for p in "$PROXY_PORT" "$PROXY_REMOTING_PORT"; do
    port_open "$p" && die "port $p (needed by the proxy) is already in use by another process"
  done
  ensure_proxy_jars "$v" || return 1
  mkdir -p "$t/proxy"
  # A secured instance's proxy: ACL 2.0 on its gRPC port (users and ACLs read from the broker,
  # signing its own calls to the brokers as the super user), and TLS with the instance's server
  # certificate (the JVM flags of java_opts make its calls to the name server and brokers TLS
  # with the client certificate).
  load_security "$t"
  local secure_json=""
  if [[ "$SEC_AUTH" == acl ]]; then
    secure_json+='
  "authenticationEnabled": true,
  "authenticationProvider": "org.apache.rocketmq.auth.authentication.provider.DefaultAuthenticationProvider",
  "authenticationMetadataProvider": "org.apache.rocketmq.proxy.auth.ProxyAuthenticationMetadataProvider",
  "authorizationEnabled": true,
  "authorizationProvider": "org.apache.rocketmq.auth.authorization.provider.DefaultAuthorizationProvider",
  "authorizationMetadataProvider": "org.apache.rocketmq.proxy.auth.ProxyAuthorizationMetadataProvider",
  "enableAclRpcHookForClusterMode": true,
  "innerClientAuthenticationCredentials": "{\"accessKey\":\"'"$ADMIN_AK"'\",\"secretKey\":\"'"$ADMIN_SK"'\"}",'
  fi
  if [[ "$SEC_TLS" != none ]]; then
    secure_json+='
  "tlsTestModeEnable": false,
  "tlsCertPath": "'"$t/tls/server.pem"'",
  "tlsKeyPath": "'"$t/tls/server.key"'",'
  fi
  # Thread pools cut down from the defaults (sized for a server) to what a test machine needs.
  cat >"$t/proxy/rmq-proxy.json" <<EOF
{${secure_json}
  "rocketMQClusterName": "$CLUSTER",
  "namesrvAddr": "$NAMESRV_ADDR_LOCAL",
  "proxyMode": "cluster",
  "grpcServerPort": $PROXY_PORT,
  "remotingListenPort": $PROXY_REMOTING_PORT,
  "grpcThreadPoolNums": 4,
  "grpcProducerThreadPoolNums": 2,
  "grpcConsumerThreadPoolNums": 2,
  "grpcRouteThreadPoolNums": 1,
  "grpcClientManagerThreadPoolNums": 1,
  "grpcTransactionThreadPoolNums": 1,
  "enablePrintJstack": false
}
EOF
  t0=$(now)
  launch "$t" proxy org.apache.rocketmq.proxy.ProxyStartup -pm cluster -pc "$t/proxy/rmq-proxy.json"
  deadline=$(( t0 + START_TIMEOUT ))
  while :; do
    if ! alive "$t" proxy; then
      log "the proxy exited during startup"; dump_logs "$t" proxy proxy; return 1
    fi
    if grep -q 'startup successfully' "$t/proxy/stdout.log" && port_open "$PROXY_PORT"; then break; fi
    if (( $(now) >= deadline )); then
      log "the proxy did not open $HOST:$PROXY_PORT within ${START_TIMEOUT}s"
      dump_logs "$t" proxy proxy; terminate "$t" proxy KILL; return 1
    fi
    sleep 0.2
  done
  log "proxy up on $HOST:$PROXY_PORT (gRPC), $HOST:$PROXY_REMOTING_PORT (remoting) (pid $(pid_of "$t" proxy), $(( $(now) - t0 )) s)"
}

# The typed topics of 5.x (topic attribute message.type) an instance has from its start, for tools
# and manual tests: a PRIORITY topic (5.4.0+: a message with _SYS_MSG_PRIORITY_ p is stored in
# queue min(p, queues - 1)) and a LITE parent topic (5.5.0+: messages with a lite topic, __LITE_TOPIC).
PRIORITY_TOPIC=PriorityTopic
LITE_TOPIC=LiteTopic

# create_typed_topics: creates them on broker-a (5.x; the broker registers them with the name server).
create_typed_topics() {
  probe topic "$HOST:$BROKER_A_PORT" "$PRIORITY_TOPIC" 8 PRIORITY || return 1
  probe topic "$HOST:$BROKER_A_PORT" "$LITE_TOPIC" 4 LITE || return 1
  log "typed topics: $PRIORITY_TOPIC (PRIORITY, 8 queues), $LITE_TOPIC (LITE, 4 queues)"
}

print_env() { # T
  local t="$1"
  echo "export NAMESRV_ADDR=$NAMESRV_ADDR_LOCAL"
  echo "export RMQ_BROKER_ADDR=$HOST:$BROKER_A_PORT"
  if alive "$t" broker-b; then echo "export RMQ_BROKER_B_ADDR=$HOST:$BROKER_B_PORT"; fi
  if [[ "$TOPOLOGY" != default ]]; then
    echo "export RMQ_TOPOLOGY=$TOPOLOGY"
    echo "export RMQ_BROKER_A_SLAVE_ADDR=$HOST:$BROKER_A_SLAVE_PORT"
    if [[ " $(replica_names) " == *" broker-a-s2 "* ]]; then echo "export RMQ_BROKER_A_SLAVE2_ADDR=$HOST:$BROKER_A_SLAVE2_PORT"; fi
    if [[ "$TOPOLOGY" == controller ]]; then echo "export RMQ_CONTROLLER_ADDR=$HOST:$CONTROLLER_PORT"; fi
  fi
  if alive "$t" proxy; then echo "export RMQ_PROXY_ENDPOINT=$HOST:$PROXY_PORT"; fi
  echo "export RMQ_VERSION=$(cat "$t/version")"
  if ! is_4x "$(cat "$t/version")"; then
    echo "export RMQ_PRIORITY_TOPIC=$PRIORITY_TOPIC"
    echo "export RMQ_LITE_TOPIC=$LITE_TOPIC"
  fi
  load_security "$t"
  if [[ "$SEC_AUTH" == acl ]]; then
    echo "export RMQ_ACCESS_KEY=$USER_AK"
    echo "export RMQ_SECRET_KEY=$USER_SK"
    echo "export RMQ_ADMIN_ACCESS_KEY=$ADMIN_AK"
    echo "export RMQ_ADMIN_SECRET_KEY=$ADMIN_SK"
    echo "export RMQ_AUTH_DENY_TOPIC=$DENY_TOPIC"
  fi
  if [[ "$SEC_TLS" != none ]]; then
    echo "export RMQ_TLS_MODE=$SEC_TLS"
    echo "export RMQ_TLS_CLIENT_AUTH=$SEC_CLIENT_AUTH"
    echo "export RMQ_TLS_CA=$t/tls/ca.pem"
    echo "export RMQ_TLS_CERT=$t/tls/client.pem"
    echo "export RMQ_TLS_KEY=$t/tls/client.key"
    echo "export RMQ_TLS_OTHER_CA=$t/tls/other-ca.pem"
  fi
}

# lock: this instance's lock (start, stop, broker and proxy control of its run dir). Instances have
# run dirs and ports of their own, so each has its own lock: starting a cluster (minutes) does not
# hold up stopping the default instance.
lock() {
  mkdir -p "$CACHE"
  local f="$CACHE/.lock${INSTANCE:+-$INSTANCE}"
  exec 9>"$f"
  if command -v flock >/dev/null 2>&1; then
    flock -w 600 9 || die "another rocketmq-local.sh holds $f for 10 minutes"
  fi
}

# with_cache_lock FUNC ARGS...: FUNC under the lock of the downloads into $CACHE, which every
# instance shares (taken inside an instance's lock, never the other way round).
with_cache_lock() {
  local rc=0
  mkdir -p "$CACHE"
  exec 8>"$CACHE/.download-lock"
  if command -v flock >/dev/null 2>&1; then
    flock -w 900 8 || die "another rocketmq-local.sh holds $CACHE/.download-lock for 15 minutes"
  fi
  "$@" || rc=$?
  exec 8>&-
  return "$rc"
}

# ---------------------------------------------------------------------------------------------------------------
# Commands

cmd_start() {
  local second="${RMQ_SECOND_BROKER:-0}" arg
  for arg in "$@"; do
    case "$arg" in
      --second-broker) second=1 ;;
      *) die "start: unknown option '$arg'" ;;
    esac
  done
  need "$JAVA" "install a JDK (17 works for 4.9.x and 5.x) or set JAVA_HOME"
  need python3 "python3 is used to check that the broker registered with the name server"
  lock
  local t; t="$(run_dir)"
  if [[ -n "$t" ]] && alive "$t" namesrv; then
    local running; running="$(cat "$t/version")"
    if [[ -n "${RMQ_VERSION:-}" && "$RMQ_VERSION" == *.*.* && "$RMQ_VERSION" != "$running" ]]; then
      die "RocketMQ $running is running (run dir $t), RMQ_VERSION=$RMQ_VERSION asked: run '$0 stop' first"
    fi
    if [[ "$(requested_security)" != "$(cat "$t/security" 2>/dev/null || true)" ]]; then
      load_security "$t"
      die "RocketMQ $running is running $(describe_security) (run dir $t), other RMQ_AUTH/RMQ_TLS settings asked: run '$0 stop' first"
    fi
    log "already running: RocketMQ $running, name server $NAMESRV_ADDR_LOCAL (run dir $t)"
    start_broker_in "$t" broker-a || die "could not start broker-a"
    for arg in $(replica_names); do start_broker_in "$t" "$arg" || die "could not start $arg"; done
    if [[ "$second" == 1 ]]; then start_broker_in "$t" broker-b || die "could not start broker-b"; fi
    if [[ "${RMQ_PROXY:-0}" == 1 ]]; then start_proxy_in "$t" || die "could not start the proxy (logs: $t/proxy)"; fi
    print_env "$t"
    return 0
  fi
  if [[ -n "$t" ]]; then
    log "removing the state of a previous run that is no longer running ($t)"
    stop_all "$t"
  fi
  env_ports

  local security; security="$(requested_security)"
  local v; v="$(resolve_version)"
  check_topology "$v"
  if grep -q '^SEC_AUTH=acl' <<<"$security" && ! is_4x "$v" && ! version_at_least "$v" 5.3.0; then
    die "RMQ_AUTH=acl on 5.x needs ACL 2.0 (RocketMQ 5.3.0 or later); $v was asked"
  fi
  if grep -q '^SEC_TLS_PROVIDER=openssl' <<<"$security"; then
    is_4x "$v" && die "RMQ_TLS_PROVIDER=openssl is for 5.x (4.9.x's netty needs another netty-tcnative); use jdk"
    ensure_tcnative
  fi
  local p
  for p in "$NAMESRV_PORT" "$BROKER_A_PORT" $([[ "$TOPOLOGY" == controller ]] && echo "$CONTROLLER_PORT"); do
    port_open "$p" && die "port $p is already in use by another process (another RocketMQ?). Stop it, or point the tests at it with NAMESRV_ADDR"
  done
  check_disk
  local base="${RMQ_TMPDIR:-${TMPDIR:-/tmp}}"
  t="$(mktemp -d "$base/rmq-local.XXXXXX")"
  echo "$v" >"$t/version"
  printf 'NAMESRV_PORT=%s\nBROKER_A_PORT=%s\nBROKER_B_PORT=%s\nPROXY_PORT=%s\nPROXY_REMOTING_PORT=%s\n' \
    "$NAMESRV_PORT" "$BROKER_A_PORT" "$BROKER_B_PORT" "$PROXY_PORT" "$PROXY_REMOTING_PORT" >"$t/ports"
  printf 'BROKER_A_SLAVE_PORT=%s\nBROKER_A_SLAVE2_PORT=%s\nCONTROLLER_PORT=%s\nTOPOLOGY=%s\nMASTER_ROLE=%s\nREPLICAS=%s\n' \
    "$BROKER_A_SLAVE_PORT" "$BROKER_A_SLAVE2_PORT" "$CONTROLLER_PORT" "$TOPOLOGY" "$MASTER_ROLE" "$REPLICAS" >>"$t/ports"
  printf '%s\n' "$security" >"$t/security"
  mkdir -p "$t/rocketmq-home/conf" "$t/namesrv"
  is_4x "$v" && write_logback_4x "$t/rocketmq-home"
  load_security "$t"
  if [[ "$SEC_TLS" != none ]]; then make_certs "$t"; write_tls_conf "$t"; fi
  if [[ "$SEC_AUTH" == acl ]]; then write_acl_files "$t" "$v"; fi
  ln -sfn "$t" "$CURRENT"

  local t0 t1; t0=$(now)
  log "starting RocketMQ $v, $(describe_security), topology $TOPOLOGY (run dir $t)"
  write_namesrv_conf "$t/namesrv/namesrv.conf"
  launch "$t" namesrv org.apache.rocketmq.namesrv.NamesrvStartup -c "$t/namesrv/namesrv.conf"
  if ! wait_namesrv "$t"; then stop_all "$t" keep; die "the name server did not start (logs kept in $t)"; fi
  t1=$(now)
  log "name server up on $NAMESRV_ADDR_LOCAL (pid $(pid_of "$t" namesrv), $(( t1 - t0 )) s)"
  if ! start_broker_in "$t" broker-a; then stop_all "$t" keep; die "broker-a did not start (logs kept in $t)"; fi
  for arg in $(replica_names); do
    if ! start_broker_in "$t" "$arg"; then stop_all "$t" keep; die "$arg did not start (logs kept in $t)"; fi
  done
  if [[ "$second" == 1 ]] && ! start_broker_in "$t" broker-b; then
    stop_all "$t" keep; die "broker-b did not start (logs kept in $t)"
  fi
  if [[ "$SEC_AUTH" == acl ]] && ! is_4x "$v" && ! setup_users_5x "$t"; then
    stop_all "$t" keep; die "could not create the ACL 2.0 users (logs kept in $t)"
  fi
  if ! is_4x "$v" && ! create_typed_topics; then
    stop_all "$t" keep; die "could not create the typed topics (logs kept in $t)"
  fi
  if [[ "${RMQ_PROXY:-0}" == 1 ]] && ! start_proxy_in "$t"; then
    stop_all "$t" keep; die "the proxy did not start (logs kept in $t)"
  fi
  log "RocketMQ $v ready in $(( $(now) - t0 )) s"
  print_env "$t"
}

check_disk() {
  local base="${RMQ_TMPDIR:-${TMPDIR:-/tmp}}" use
  use="$(df -P "$base" 2>/dev/null | awk 'NR==2 { sub("%", "", $5); print $5 }')" || return 0
  if [[ "$use" =~ ^[0-9]+$ ]] && (( use >= 90 )); then
    log "warning: $base is $use % full; the broker refuses writes above 95 % (set RMQ_TMPDIR elsewhere)"
  fi
}

# stop_all T [keep]: end the brokers, then the name server; remove the run dir unless "keep".
# SIGKILL: the store is thrown away, and a 5.x broker's graceful shutdown takes ~15 s.
stop_all() {
  local t="$1" keep="${2:-}" name
  for name in proxy broker-a-s2 broker-a-s broker-b broker-a namesrv; do
    if alive "$t" "$name"; then
      log "stopping $name (pid $(pid_of "$t" "$name"))"
      terminate "$t" "$name" KILL
    fi
  done
  if [[ "$(readlink "$CURRENT" 2>/dev/null || true)" == "$t" ]]; then rm -f "$CURRENT"; fi
  if [[ -z "$keep" ]]; then
    rm -rf "$t"
  fi
}

cmd_stop() {
  lock
  local t; t="$(run_dir)"
  if [[ -z "$t" ]]; then
    log "not running"
    return 0
  fi
  stop_all "$t"
  log "stopped; removed $t"
}

require_running() {
  local t; t="$(run_dir)"
  if [[ -z "$t" ]] || ! alive "$t" namesrv; then
    die "the local RocketMQ is not running: run '$0 start' first"
  fi
  echo "$t"
}

cmd_status() {
  local t; t="$(run_dir)"
  if [[ -z "$t" ]]; then
    echo "not running"
    return 3
  fi
  load_security "$t"
  echo "RocketMQ $(cat "$t/version"), $(describe_security) (run dir $t)"
  local name addr
  for name in namesrv $(all_brokers) proxy; do
    case "$name" in
      namesrv) addr="$NAMESRV_ADDR_LOCAL" ;;
      proxy) addr="$HOST:$PROXY_PORT" ;;
      *) addr="$HOST:$(broker_port "$name")" ;;
    esac
    if alive "$t" "$name"; then
      printf '  %-9s %-16s pid %s, running\n' "$name" "$addr" "$(pid_of "$t" "$name")"
    elif [[ -f "$t/$name/pid" ]]; then
      printf '  %-9s %-16s stopped (store kept)\n' "$name" "$addr"
    fi
  done
  if alive "$t" namesrv; then
    echo "registered brokers (cluster name id address):"
    probe cluster "$NAMESRV_ADDR_LOCAL" 2>&1 | sed 's/^/  /' || true
    echo "export NAMESRV_ADDR=$NAMESRV_ADDR_LOCAL"
    return 0
  fi
  echo "the name server is not running: run '$0 stop' to clean up"
  return 3
}

cmd_env() {
  local t; t="$(run_dir)"
  if [[ -z "$t" ]] || ! alive "$t" namesrv; then
    log "not running"
    return 3
  fi
  print_env "$t"
}

cmd_broker() { # ACTION NAME
  local action="$1" name="${2:-}"
  [[ -n "$name" ]] || die "$action needs a broker name (broker-a, broker-b, broker-a-s or broker-a-s2)"
  broker_port "$name" >/dev/null
  lock
  local t; t="$(require_running)"
  case "$action" in
    start-broker)
      start_broker_in "$t" "$name" || die "could not start $name (logs: $t/$name)" ;;
    stop-broker)
      alive "$t" "$name" || { log "$name is not running"; return 0; }
      log "stopping $name (pid $(pid_of "$t" "$name"))"
      terminate "$t" "$name" TERM ;;
    kill-broker)
      alive "$t" "$name" || { log "$name is not running"; return 0; }
      log "killing $name (pid $(pid_of "$t" "$name"), SIGKILL)"
      terminate "$t" "$name" KILL ;;
    restart-broker)
      if alive "$t" "$name"; then
        log "stopping $name (pid $(pid_of "$t" "$name"))"
        terminate "$t" "$name" TERM
      fi
      start_broker_in "$t" "$name" || die "could not restart $name (logs: $t/$name)" ;;
  esac
  if [[ "$action" == start-broker || "$action" == restart-broker ]]; then print_env "$t"; fi
}

cmd_proxy() { # ACTION
  local action="$1"
  lock
  local t; t="$(require_running)"
  if [[ "$action" != start-proxy ]] && alive "$t" proxy; then
    log "stopping the proxy (pid $(pid_of "$t" proxy))"
    terminate "$t" proxy TERM
  fi
  if [[ "$action" != stop-proxy ]]; then
    start_proxy_in "$t" || die "could not start the proxy (logs: $t/proxy)"
    print_env "$t"
  fi
}

cmd_cluster() {
  need python3 "python3 is used to query the name server"
  probe cluster "${1:-$NAMESRV_ADDR_LOCAL}"
}

cmd_logs() {
  local t; t="$(run_dir)"
  [[ -n "$t" ]] || die "not running"
  local names=("$@") name
  [[ $# -eq 0 ]] && names=(namesrv $(all_brokers) proxy)
  for name in "${names[@]}"; do
    [[ -d "$t/$name" ]] || continue
    local main=broker; [[ "$name" == namesrv ]] && main=namesrv; [[ "$name" == proxy ]] && main=proxy
    dump_logs "$t" "$name" "$main" 2>&1
  done
}

cmd_admin() {
  local t v home opts=()
  t="$(run_dir)"
  if [[ -n "$t" ]]; then
    v="$(cat "$t/version")"; home="$t/rocketmq-home"
  else
    lock
    v="$(resolve_version)"; home="$CACHE/$v/home"
    mkdir -p "$home"; is_4x "$v" && write_logback_4x "$home"
    exec 9>&-
  fi
  opts=(-Xms64m -Xmx256m -XX:TieredStopAtLevel=1 -XX:-UsePerfData "-Duser.home=${t:-$CACHE/$v}/admin-home"
        "-Drocketmq.home.dir=$home")
  if is_4x "$v"; then
    opts+=("--add-opens=java.base/java.nio=ALL-UNNAMED" "--add-exports=java.base/jdk.internal.ref=ALL-UNNAMED")
  else
    opts+=("-Drmq.logback.configurationFile=rmq.tools.logback.xml")
  fi
  if [[ -n "$t" ]]; then
    load_security "$t"
    if [[ "$SEC_TLS" != none ]]; then opts+=("-Dtls.enable=true" "-Dtls.config.file=$t/tls/tls.properties"); fi
  fi
  ROCKETMQ_HOME="$home" NAMESRV_ADDR="${NAMESRV_ADDR:-$NAMESRV_ADDR_LOCAL}" \
    "$JAVA" "${opts[@]}" -cp "$CACHE/$v/lib/*" org.apache.rocketmq.tools.command.MQAdminStartup "$@"
}

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
  exit 64
}

# The ports of a running instance are the ones it was started with (recorded in <T>/ports), whatever the
# environment says now; `start` of a new instance takes them from the environment again.
load_ports() { # T
  [[ -f "$1/ports" ]] || return 0
  local line
  while IFS= read -r line; do
    case "$line" in
      NAMESRV_PORT=*) NAMESRV_PORT="${line#*=}" ;;
      BROKER_A_PORT=*) BROKER_A_PORT="${line#*=}" ;;
      BROKER_B_PORT=*) BROKER_B_PORT="${line#*=}" ;;
      PROXY_PORT=*) PROXY_PORT="${line#*=}" ;;
      PROXY_REMOTING_PORT=*) PROXY_REMOTING_PORT="${line#*=}" ;;
      BROKER_A_SLAVE_PORT=*) BROKER_A_SLAVE_PORT="${line#*=}" ;;
      BROKER_A_SLAVE2_PORT=*) BROKER_A_SLAVE2_PORT="${line#*=}" ;;
      CONTROLLER_PORT=*) CONTROLLER_PORT="${line#*=}" ;;
      TOPOLOGY=*) TOPOLOGY="${line#*=}" ;;
      MASTER_ROLE=*) MASTER_ROLE="${line#*=}" ;;
      REPLICAS=*) REPLICAS="${line#*=}" ;;
    esac
  done <"$1/ports"
  NAMESRV_ADDR_LOCAL="$HOST:$NAMESRV_PORT"
}

env_ports() {
  NAMESRV_PORT="${RMQ_NAMESRV_PORT:-9876}"
  BROKER_A_PORT="${RMQ_BROKER_A_PORT:-10911}"
  BROKER_B_PORT="${RMQ_BROKER_B_PORT:-10921}"
  PROXY_PORT="${RMQ_PROXY_PORT:-8081}"
  PROXY_REMOTING_PORT="${RMQ_PROXY_REMOTING_PORT:-8080}"
  BROKER_A_SLAVE_PORT="${RMQ_BROKER_A_SLAVE_PORT:-$((BROKER_A_PORT + 20))}"
  BROKER_A_SLAVE2_PORT="${RMQ_BROKER_A_SLAVE2_PORT:-$((BROKER_A_PORT + 30))}"
  CONTROLLER_PORT="${RMQ_CONTROLLER_PORT:-$((NAMESRV_PORT + 2))}"
  TOPOLOGY="${RMQ_TOPOLOGY:-default}"
  MASTER_ROLE="${RMQ_MASTER_ROLE:-ASYNC_MASTER}"
  REPLICAS="${RMQ_REPLICAS:-2}"
  NAMESRV_ADDR_LOCAL="$HOST:$NAMESRV_PORT"
}

# check_topology VERSION: the topology settings are known and fit the version.
check_topology() {
  case "$TOPOLOGY" in
    default|master-slave) ;;
    controller) is_4x "$1" && die "RMQ_TOPOLOGY=controller needs RocketMQ 5.x (the controller is 5.x only); $1 was asked" ;;
    *) die "RMQ_TOPOLOGY='$TOPOLOGY': default, master-slave or controller" ;;
  esac
  [[ "$MASTER_ROLE" == ASYNC_MASTER || "$MASTER_ROLE" == SYNC_MASTER ]] \
    || die "RMQ_MASTER_ROLE='$MASTER_ROLE': ASYNC_MASTER or SYNC_MASTER"
  [[ "$REPLICAS" == 2 || "$REPLICAS" == 3 ]] || die "RMQ_REPLICAS='$REPLICAS': 2 or 3"
}

# replica_names: the brokers of group broker-a besides broker-a in the instance's topology.
replica_names() {
  case "$TOPOLOGY" in
    master-slave) echo broker-a-s ;;
    controller) if [[ "$REPLICAS" == 3 ]]; then echo broker-a-s broker-a-s2; else echo broker-a-s; fi ;;
  esac
}

# every broker name the instance may have run
all_brokers() { echo broker-a broker-b broker-a-s broker-a-s2; }

# registered_as NAME: the broker id NAME registers with (a regex; the controller assigns ids in controller mode)
registered_as() {
  if [[ "$TOPOLOGY" == controller && "$1" == broker-a* ]]; then echo '[0-9]+'
  elif [[ "$1" == broker-a-s* ]]; then echo 1
  else echo 0; fi
}

main() {
  local cmd="${1:-}"
  [[ $# -gt 0 ]] && shift
  local live; live="$(run_dir)"
  if [[ -n "$live" ]]; then load_ports "$live"; fi
  case "$cmd" in
    start) cmd_start "$@" ;;
    stop) cmd_stop ;;
    status) cmd_status ;;
    env) cmd_env ;;
    start-broker|stop-broker|kill-broker|restart-broker) cmd_broker "$cmd" "$@" ;;
    start-proxy|stop-proxy|restart-proxy) cmd_proxy "$cmd" ;;
    cluster) cmd_cluster "$@" ;;
    logs) cmd_logs "$@" ;;
    admin) cmd_admin "$@" ;;
    resolve) lock; resolve_version "$@" ;;
    -h|--help|help|"") usage ;;
    *) log "unknown command '$cmd'"; usage ;;
  esac
}

main "$@"
