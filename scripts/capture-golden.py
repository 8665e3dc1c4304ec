#!/usr/bin/env python3
"""Capture golden frames from a REAL Apache RocketMQ name server and broker.

This speaks the remoting protocol with the Python standard library only, so
the captured bytes do not depend on rmq's own codec. It writes whole response
frames (4-byte length prefix included) to protocol/tests/data/<prefix>-*.bin
and a matching <prefix>-manifest.json describing what was sent.

Usage (a broker must be running, e.g. `scripts/rocketmq-local.sh start`):

    python3 scripts/capture-golden.py --prefix v5 \
        --namesrv 127.0.0.1:9876 --broker 127.0.0.1:10911

See protocol/tests/data/README.md for what each file holds.
"""
import argparse
import json
import os
import socket
import struct
import time
import zlib

OPAQUE = [0]


def frame(code, ext, body=b"", version=401, language="JAVA"):
    OPAQUE[0] += 1
    header = {
        "code": code,
        "extFields": {k: str(v) for k, v in ext.items()},
        "flag": 0,
        "language": language,
        "opaque": OPAQUE[0],
        "serializeTypeCurrentRPC": "JSON",
        "version": version,
    }
    h = json.dumps(header, separators=(",", ":")).encode()
    return struct.pack(">ii", 4 + len(h) + len(body), len(h)) + h + body, OPAQUE[0]


def read_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise RuntimeError("connection closed")
        buf += chunk
    return buf


def call(addr, code, ext, body=b"", version=401):
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=30) as s:
        data, opaque = frame(code, ext, body, version)
        s.sendall(data)
        while True:
            (length,) = struct.unpack(">i", read_exact(s, 4))
            rest = read_exact(s, length)
            (hword,) = struct.unpack(">I", rest[:4])
            stype, hlen = hword >> 24, hword & 0xFFFFFF
            if stype != 0:
                raise RuntimeError("expected a JSON header in the response")
            header = json.loads(rest[4 : 4 + hlen])
            if header.get("flag", 0) & 1 and header.get("opaque") == opaque:
                return struct.pack(">i", length) + rest, header, rest[4 + hlen :]


def props(d):
    return "".join(f"{k}\x01{v}\x02" for k, v in d.items())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prefix", required=True)
    ap.add_argument("--namesrv", default="127.0.0.1:9876")
    ap.add_argument("--broker", default="127.0.0.1:10911")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "protocol", "tests", "data"))
    a = ap.parse_args()
    topic = f"golden_{a.prefix}_{int(time.time())}"
    group = f"golden_group_{a.prefix}"
    manifest = {"topic": topic, "group": group, "broker": a.broker, "messages": []}
    os.makedirs(a.out, exist_ok=True)

    def save(name, raw):
        with open(os.path.join(a.out, f"{a.prefix}-{name}.bin"), "wb") as f:
            f.write(raw)

    # 1. Create the topic with 4 queues (UPDATE_AND_CREATE_TOPIC, 17).
    _, h, _ = call(a.broker, 17, {
        "topic": topic, "defaultTopic": "TBW102", "readQueueNums": 4, "writeQueueNums": 4,
        "perm": 6, "topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": "false",
    })
    assert h["code"] == 0, h
    # Wait until the name server has the route (the broker registers it at once).
    for _ in range(100):
        raw, h, _ = call(a.namesrv, 105, {"topic": topic}, version=317)
        if h["code"] == 0:
            break
        time.sleep(0.2)
    assert h["code"] == 0, h
    # 2. Route responses: old-client form (version 317 -> fastjson non-standard keys)
    #    and new-client form (version 401 + acceptStandardJsonOnly -> standard JSON).
    save("route-nonstandard", raw)
    raw, h, _ = call(a.namesrv, 105, {"topic": topic, "acceptStandardJsonOnly": "true"}, version=401)
    assert h["code"] == 0, h
    save("route-standard", raw)

    # 3. Send messages to queue 0 with SEND_MESSAGE_V2 (310).
    big = ("RocketMQ golden body line. " * 200).encode()  # 5400 bytes
    msgs = [
        dict(body=b"hello golden 0", sysflag=0, flag=0,
             props={"TAGS": "TagA", "KEYS": "key-1 key-2", "UNIQ_KEY": "7F00000100002A9F0000000000000001",
                    "WAIT": "true", "color": "blue", "\u4e2d\u6587": "\u503c"}),
        dict(body=zlib.compress(big, 5), plain=big, sysflag=0x1, flag=7,
             props={"TAGS": "TagB", "UNIQ_KEY": "7F00000100002A9F0000000000000002", "WAIT": "true"}),
        dict(body=zlib.compress(big, 5), plain=big, sysflag=0x301, flag=0,
             props={"UNIQ_KEY": "7F00000100002A9F0000000000000003", "WAIT": "true", "a": "1"}),
        dict(body=b"no unique key here", sysflag=0, flag=0, props={"WAIT": "true", "KEYS": "only"}),
    ]
    born = 1700000000000
    for i, m in enumerate(msgs):
        _, h, _ = call(a.broker, 310, {
            "a": "golden_producer", "b": topic, "c": "TBW102", "d": 4, "e": 0, "f": m["sysflag"],
            "g": born + i, "h": m["flag"], "i": props(m["props"]), "j": 0, "k": "false", "m": "false",
        }, m["body"])
        assert h["code"] == 0, h
        ext = h.get("extFields", {})
        manifest["messages"].append({
            "index": i, "queue_offset": int(ext["queueOffset"]), "offset_msg_id": ext["msgId"],
            "sys_flag_sent": m["sysflag"], "flag": m["flag"], "born_timestamp": born + i,
            "properties_sent": m["props"], "body_text": (m.get("plain") or m["body"]).decode(),
        })

    # 4. Pull them back (PULL_MESSAGE, 11) with an explicit subscription.
    raw, h, body = call(a.broker, 11, {
        "consumerGroup": group, "topic": topic, "queueId": 0, "queueOffset": 0, "maxMsgNums": 32,
        "sysFlag": 4, "commitOffset": 0, "suspendTimeoutMillis": 0, "subscription": "*",
        "subVersion": 0, "expressionType": "TAG",
    })
    assert h["code"] == 0, h
    save("pull-found", raw)
    # 5. Pull past the end: not found.
    raw, h, _ = call(a.broker, 11, {
        "consumerGroup": group, "topic": topic, "queueId": 0, "queueOffset": len(msgs), "maxMsgNums": 32,
        "sysFlag": 4, "commitOffset": 0, "suspendTimeoutMillis": 0, "subscription": "*",
        "subVersion": 0, "expressionType": "TAG",
    })
    save("pull-not-found", raw)
    manifest["pull_not_found_code"] = h["code"]
    with open(os.path.join(a.out, f"{a.prefix}-manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2, ensure_ascii=False)
        f.write("\n")
    print(f"captured {a.prefix}: topic {topic}")


if __name__ == "__main__":
    main()
