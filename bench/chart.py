"""A bar chart of benchmark results as a PNG, in pure Python (zlib + struct, no matplotlib).

One panel per (scenario, metric) present in the results; one bar per client (the median)
with a thin line from min to max. Text uses a built-in 5x7 upper-case bitmap font.

    python3 bench/chart.py bench/results/<timestamp>.json   # writes <timestamp>.png
"""

import json
import struct
import sys
import zlib

# 5x7 glyphs, '#' = ink.
_FONT_ROWS = {
    "A": [" ### ", "#   #", "#   #", "#####", "#   #", "#   #", "#   #"],
    "B": ["#### ", "#   #", "#   #", "#### ", "#   #", "#   #", "#### "],
    "C": [" ### ", "#   #", "#    ", "#    ", "#    ", "#   #", " ### "],
    "D": ["#### ", "#   #", "#   #", "#   #", "#   #", "#   #", "#### "],
    "E": ["#####", "#    ", "#    ", "#### ", "#    ", "#    ", "#####"],
    "F": ["#####", "#    ", "#    ", "#### ", "#    ", "#    ", "#    "],
    "G": [" ### ", "#   #", "#    ", "# ###", "#   #", "#   #", " ####"],
    "H": ["#   #", "#   #", "#   #", "#####", "#   #", "#   #", "#   #"],
    "I": [" ### ", "  #  ", "  #  ", "  #  ", "  #  ", "  #  ", " ### "],
    "J": ["  ###", "   # ", "   # ", "   # ", "   # ", "#  # ", " ##  "],
    "K": ["#   #", "#  # ", "# #  ", "##   ", "# #  ", "#  # ", "#   #"],
    "L": ["#    ", "#    ", "#    ", "#    ", "#    ", "#    ", "#####"],
    "M": ["#   #", "## ##", "# # #", "# # #", "#   #", "#   #", "#   #"],
    "N": ["#   #", "#   #", "##  #", "# # #", "#  ##", "#   #", "#   #"],
    "O": [" ### ", "#   #", "#   #", "#   #", "#   #", "#   #", " ### "],
    "P": ["#### ", "#   #", "#   #", "#### ", "#    ", "#    ", "#    "],
    "Q": [" ### ", "#   #", "#   #", "#   #", "# # #", "#  # ", " ## #"],
    "R": ["#### ", "#   #", "#   #", "#### ", "# #  ", "#  # ", "#   #"],
    "S": [" ####", "#    ", "#    ", " ### ", "    #", "    #", "#### "],
    "T": ["#####", "  #  ", "  #  ", "  #  ", "  #  ", "  #  ", "  #  "],
    "U": ["#   #", "#   #", "#   #", "#   #", "#   #", "#   #", " ### "],
    "V": ["#   #", "#   #", "#   #", "#   #", "#   #", " # # ", "  #  "],
    "W": ["#   #", "#   #", "#   #", "# # #", "# # #", "# # #", " # # "],
    "X": ["#   #", "#   #", " # # ", "  #  ", " # # ", "#   #", "#   #"],
    "Y": ["#   #", "#   #", " # # ", "  #  ", "  #  ", "  #  ", "  #  "],
    "Z": ["#####", "    #", "   # ", "  #  ", " #   ", "#    ", "#####"],
    "0": [" ### ", "#   #", "#  ##", "# # #", "##  #", "#   #", " ### "],
    "1": ["  #  ", " ##  ", "  #  ", "  #  ", "  #  ", "  #  ", " ### "],
    "2": [" ### ", "#   #", "    #", "   # ", "  #  ", " #   ", "#####"],
    "3": ["#####", "   # ", "  #  ", "   # ", "    #", "#   #", " ### "],
    "4": ["   # ", "  ## ", " # # ", "#  # ", "#####", "   # ", "   # "],
    "5": ["#####", "#    ", "#### ", "    #", "    #", "#   #", " ### "],
    "6": ["  ## ", " #   ", "#    ", "#### ", "#   #", "#   #", " ### "],
    "7": ["#####", "    #", "   # ", "  #  ", " #   ", " #   ", " #   "],
    "8": [" ### ", "#   #", "#   #", " ### ", "#   #", "#   #", " ### "],
    "9": [" ### ", "#   #", "#   #", " ####", "    #", "   # ", " ##  "],
    " ": ["     "] * 7,
    ".": ["     ", "     ", "     ", "     ", "     ", " ##  ", " ##  "],
    ",": ["     ", "     ", "     ", "     ", " ##  ", "  #  ", " #   "],
    "-": ["     ", "     ", "     ", "#####", "     ", "     ", "     "],
    "_": ["     ", "     ", "     ", "     ", "     ", "     ", "#####"],
    "/": ["    #", "    #", "   # ", "  #  ", " #   ", "#    ", "#    "],
    ":": ["     ", " ##  ", " ##  ", "     ", " ##  ", " ##  ", "     "],
    "(": ["   # ", "  #  ", " #   ", " #   ", " #   ", "  #  ", "   # "],
    ")": [" #   ", "  #  ", "   # ", "   # ", "   # ", "  #  ", " #   "],
    "%": ["##   ", "##  #", "   # ", "  #  ", " #   ", "#  ##", "   ##"],
    "=": ["     ", "     ", "#####", "     ", "#####", "     ", "     "],
    "<": ["   # ", "  #  ", " #   ", "#    ", " #   ", "  #  ", "   # "],
    ">": [" #   ", "  #  ", "   # ", "    #", "   # ", "  #  ", " #   "],
}
FONT = {ch: [int(row.replace(" ", "0").replace("#", "1"), 2) for row in rows] for ch, rows in _FONT_ROWS.items()}

COLORS = {
    "rmq-push": (214, 69, 65),
    "rmq-pull": (230, 126, 34),
    "raw-pull": (150, 150, 150),
    "java-push": (52, 101, 164),
    "go-push": (0, 173, 181),
    "rocketmq-rust-push": (117, 80, 123),
    "rmq-producer": (214, 69, 65),
    "java-producer": (52, 101, 164),
}
TITLES = {
    ("drain", "msgs_per_s"): "DRAIN: MESSAGES/S (HIGHER IS BETTER)",
    ("drain", "cpu_s_per_msg"): "DRAIN: CPU US PER MESSAGE (LOWER IS BETTER)",
    ("drain", "peak_rss_bytes"): "DRAIN: PEAK RSS MIB (LOWER IS BETTER)",
    ("latency", "p50_ms"): "LATENCY: P50 MS (LOWER IS BETTER)",
    ("latency", "p99_ms"): "LATENCY: P99 MS (LOWER IS BETTER)",
    ("latency", "p999_ms"): "LATENCY: P99.9 MS (LOWER IS BETTER)",
    ("produce-sync", "msgs_per_s"): "PRODUCE SYNC: MESSAGES/S (HIGHER IS BETTER)",
    ("produce-async", "msgs_per_s"): "PRODUCE ASYNC: MESSAGES/S (HIGHER IS BETTER)",
    ("produce-tx", "msgs_per_s"): "PRODUCE TRANSACTIONAL: MESSAGES/S (HIGHER IS BETTER)",
}
SCALE = {"cpu_s_per_msg": 1e6, "peak_rss_bytes": 1 / 2**20}


class Canvas:
    def __init__(self, w, h, bg=(255, 255, 255)):
        self.w, self.h = w, h
        self.px = bytearray(bytes(bg) * (w * h))

    def rect(self, x0, y0, x1, y1, color):
        x0, x1 = max(0, int(x0)), min(self.w, int(x1))
        y0, y1 = max(0, int(y0)), min(self.h, int(y1))
        if x1 <= x0:
            return
        row = bytes(color) * (x1 - x0)
        for y in range(y0, y1):
            i = (y * self.w + x0) * 3
            self.px[i:i + len(row)] = row

    def text(self, x, y, s, color=(30, 30, 30), scale=2):
        for ch in s.upper():
            glyph = FONT.get(ch, FONT[" "])
            for r, bits in enumerate(glyph):
                for c in range(5):
                    if bits & (1 << (4 - c)):
                        self.rect(x + c * scale, y + r * scale, x + (c + 1) * scale, y + (r + 1) * scale, color)
            x += 6 * scale
        return x

    def png(self):
        raw = bytearray()
        stride = self.w * 3
        for y in range(self.h):
            raw.append(0)
            raw += self.px[y * stride:(y + 1) * stride]

        def chunk(tag, data):
            c = struct.pack(">I", len(data)) + tag + data
            return c + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

        return (b"\x89PNG\r\n\x1a\n"
                + chunk(b"IHDR", struct.pack(">IIBBBBB", self.w, self.h, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(bytes(raw), 9))
                + chunk(b"IEND", b""))


def fmt(v):
    if v >= 100:
        return f"{v:,.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def write_chart(path, rows, cfg):
    panels = []
    for key in TITLES:
        bars = [r for r in rows if (r["scenario"], r["metric"]) == key]
        if bars:
            panels.append((key, bars))
    width, label_w, bar_h, gap = 1000, 260, 22, 6
    height = 60 + sum(40 + len(b) * (bar_h + gap) + 16 for _, b in panels) + 20
    cv = Canvas(width, max(height, 120))
    cv.text(16, 14, "RMQ BENCHMARK", scale=3)
    sub = (f"ROCKETMQ {cfg.get('rocketmq_version', '')}  {cfg.get('count', 0)} X {cfg.get('size', 0)} B  "
           f"{cfg.get('queues', 0)} QUEUES  {cfg.get('repetitions', 0)} REP  {cfg.get('cores', '')} CORES  "
           f"{cfg.get('timestamp', '')}")
    cv.text(16, 42, sub, color=(90, 90, 90), scale=1)
    y = 60
    for (scenario, metric), bars in panels:
        cv.text(16, y + 8, TITLES[(scenario, metric)], scale=2)
        y += 36
        k = SCALE.get(metric, 1.0)
        vmax = max(r["max"] * k for r in bars) or 1.0
        span = width - label_w - 120
        for r in bars:
            color = COLORS.get(r["client"], (100, 100, 100))
            cv.text(16, y + 4, r["client"], scale=2)
            w = r["median"] * k / vmax * span
            cv.rect(label_w, y, label_w + w, y + bar_h, color)
            lo, hi = r["min"] * k / vmax * span, r["max"] * k / vmax * span
            cv.rect(label_w + lo, y + bar_h // 2 - 1, label_w + hi + 1, y + bar_h // 2 + 1, (20, 20, 20))
            cv.rect(label_w + lo, y + 4, label_w + lo + 2, y + bar_h - 4, (20, 20, 20))
            cv.rect(label_w + hi - 1, y + 4, label_w + hi + 1, y + bar_h - 4, (20, 20, 20))
            cv.text(label_w + max(w, hi) + 8, y + 4, fmt(r["median"] * k), scale=2)
            y += bar_h + gap
        cv.rect(16, y + 6, width - 16, y + 7, (220, 220, 220))
        y += 16
    with open(path, "wb") as f:
        f.write(cv.png())


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: chart.py RESULTS.json")
    with open(sys.argv[1]) as f:
        doc = json.load(f)
    out = sys.argv[1][:-5] + ".png" if sys.argv[1].endswith(".json") else sys.argv[1] + ".png"
    write_chart(out, doc["results"], doc["config"])
    print(out)
