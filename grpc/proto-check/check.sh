#!/usr/bin/env bash
# Checks grpc/proto against the descriptors compiled into org.apache.rocketmq:rocketmq-proto (the jar the 5.x
# proxy ships): both are printed as .proto-like text by DumpDescriptors.java and diffed; no output = equal.
# Needs java, javac, Maven (the jar is resolved like the proxy's) and a built rmq-grpc (cargo build -p rmq-grpc).
#
# Usage: grpc/proto-check/check.sh [PROTO_VERSION]   (default 2.1.2, the one rocketmq-proxy 5.5.0 depends on)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
V="${1:-2.1.2}"
W="$ROOT/.cache/proto-check"
mkdir -p "$W/classes"
cat >"$W/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>rmq.local</groupId><artifactId>proto-check</artifactId><version>1</version><packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.rocketmq</groupId><artifactId>rocketmq-proto</artifactId><version>$V</version></dependency>
  </dependencies>
</project>
POM
mvn -B -q -f "$W/pom.xml" dependency:copy-dependencies -DoutputDirectory="$W/lib" >"$W/mvn.log" 2>&1 \
  || { echo "check.sh: rocketmq-proto $V does not resolve (log: $W/mvn.log)" >&2; exit 1; }
CP="$(ls "$W"/lib/rocketmq-proto-*.jar "$W"/lib/protobuf-java-[0-9]*.jar | tr "\n" ":")"  # not protobuf-javalite (the same classes, lite)
javac -d "$W/classes" -cp "$CP" "$HERE/DumpDescriptors.java"
SET="$(ls -t "$ROOT"/target/debug/build/rmq-grpc-*/out/apache.rocketmq.v2.bin 2>/dev/null | head -n 1 || true)"
[[ -n "$SET" ]] || { echo "check.sh: build rmq-grpc first (cargo build -p rmq-grpc)" >&2; exit 1; }
java -cp "$W/classes:$CP" DumpDescriptors >"$W/jar.txt"
java -cp "$W/classes:$CP" DumpDescriptors "$SET" >"$W/ours.txt"
if diff -u "$W/jar.txt" "$W/ours.txt"; then
  echo "check.sh: grpc/proto matches rocketmq-proto $V ($(grep -c '^message\|^  message' "$W/jar.txt") messages)"
fi
